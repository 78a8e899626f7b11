"""``reranklab datasets``: provenance, counts, protocol, raw files present and size on disk."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reranklab import cli
from reranklab.data import dataset_names, get_dataset
from reranklab.data.base import RawFile
from reranklab.data.listing import (
    describe,
    disk_usage,
    download_size,
    format_counts,
    format_listing,
    human_bytes,
    list_datasets,
)


@pytest.fixture
def places(tmp_path: Path) -> tuple[Path, Path]:
    results, mirror = tmp_path / "results", tmp_path / "mirror"
    (mirror / "antique").mkdir(parents=True)
    for name in ("antique-train-queries.txt", "antique-train.qrel"):
        (mirror / "antique" / name).write_text("x")
    raw = results / "data" / "antique" / "raw"
    raw.mkdir(parents=True)
    (raw / "antique-test.qrel").write_text("1 Q0 a 4\n")
    return results, mirror


def test_describe_reports_where_each_raw_file_is(places: tuple[Path, Path]) -> None:
    results, mirror = places
    listing = describe(get_dataset("antique"), results, str(mirror))
    assert [(f.name, f.where) for f in listing.raw_files] == [
        ("antique-collection.txt", "missing"),
        ("antique-train-queries.txt", "mirror"),
        ("antique-train.qrel", "mirror"),
        ("antique-test-queries.txt", "missing"),
        ("antique-test.qrel", "raw"),
    ]
    assert (listing.counts_from, listing.counts["judgements"]) == ("declared", 34_011)
    assert listing.disk_bytes == 9
    assert listing.download_bytes == 93_608_031 + 136_512 + 625_622 + 11_434 + 149_838
    assert listing.protocol["relevance_threshold"] == 3


def test_archive_in_the_mirror_counts_for_its_members(tmp_path: Path) -> None:
    (tmp_path / "mirror" / "msmarco-passage").mkdir(parents=True)
    (tmp_path / "mirror" / "msmarco-passage" / "collectionandqueries.tar.gz").write_bytes(b"")
    listing = describe(
        get_dataset("msmarco-passage"), tmp_path / "results", str(tmp_path / "mirror")
    )
    assert {f.where for f in listing.raw_files} == {"mirror"}
    assert listing.download_bytes == 1_057_717_952  # one archive for five files


def test_prepared_counts_come_from_stats_json(places: tuple[Path, Path]) -> None:
    results, mirror = places
    stats = {"passages": 12, "queries": 6, "split": {"train": 4, "dev": 1, "test": 1}}
    (results / "data" / "antique" / "stats.json").write_text(json.dumps(stats))
    listing = describe(get_dataset("antique"), results, str(mirror))
    assert (listing.counts_from, listing.counts) == ("prepared", stats)
    assert listing.disk_bytes == 9 + len(json.dumps(stats))


def test_format_listing_block(places: tuple[Path, Path]) -> None:
    results, mirror = places
    text = format_listing([describe(get_dataset("antique"), results, str(mirror))])
    assert text.splitlines()[4:] == [
        "  protocol:  first stage bm25 top-100; split predefined; negatives/positive 1; relevant grade >= 3; "
        "metrics MAP, MRR, P@1, nDCG@10; options dev_queries=200, dev_seed=42",
        "  scoring:   official (default): every judged query (test 200); labels 3 and 4 relevant for the binary "
        "measures, nDCG on the grades; queries judged, relevant grade >= 3; P@1, MAP, MRR, MRR@10, nDCG@10; "
        "source: trec_eval -l 3, as Hashemi et al. (ECIR 2020) and ir_datasets' antique/test",
        "  counts:    passages 403,666; split train 2,226 / dev 200 / test 200; judgements 34,011 "
        "(papers / official files, not yet prepared)",
        "  raw files: 3 of 5 present (raw/ 1, mirror 2); missing: antique-collection.txt, antique-test-queries.txt; "
        "full download 90.2 MiB",
        f"  on disk:   9 B in {results / 'data' / 'antique'}",
    ]
    assert text.splitlines()[0].startswith("antique  ANTIQUE: non-factoid questions")


def test_helpers() -> None:
    assert download_size((RawFile("a", "https://x/a", size=3), RawFile("b", "https://x/b"))) is None
    assert (
        download_size(
            (
                RawFile("a", "https://x/z.zip", member="a", archive_size=10),
                RawFile("b", "https://x/z.zip", member="b", archive_size=10),
            )
        )
        == 10
    )
    assert [human_bytes(n) for n in (0, 1023, 1024, 5 * 1024**3, None)] == [
        "0 B",
        "1023 B",
        "1.0 KiB",
        "5.0 GiB",
        "unknown",
    ]
    assert (
        format_counts({"passages": 3, "split": {"train": 2, "test": 1}, "note": "x", "folds": [1]})
        == "passages 3; split train 2 / test 1"
    )
    assert disk_usage(Path("/nonexistent/folder")) == 0


def test_every_registered_dataset_is_listed(tmp_path: Path) -> None:
    listings = list_datasets(tmp_path, None)
    assert [item.name for item in listings] == dataset_names()
    mine = {
        "antique",
        "insuranceqa",
        "msmarco-passage",
        "trec-car",
        "trec-dl-2019",
        "wikipassageqa",
    }
    assert mine <= set(dataset_names())
    assert all(item.counts_from == "declared" for item in listings if item.name in mine)


def test_cli_datasets_json(
    places: tuple[Path, Path], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    results, mirror = places
    monkeypatch.delenv("RERANKLAB_MIRROR", raising=False)
    assert (
        cli.main(["datasets", "--json", "--results-dir", str(results), "--mirror", str(mirror)])
        == 0
    )
    listed = {item["name"]: item for item in json.loads(capsys.readouterr().out)}
    assert list(listed) == dataset_names()
    antique = listed["antique"]
    assert [f["where"] for f in antique["raw_files"]] == [
        "missing",
        "mirror",
        "mirror",
        "missing",
        "raw",
    ]
    assert antique["citation"].startswith(
        "Helia Hashemi, Mohammad Aliannejadi, Hamed Zamani and W. Bruce Croft. 2020."
    )
    assert cli.main(["datasets", "--results-dir", str(results), "--mirror", str(mirror)]) == 0
    assert "raw files: 3 of 5 present (raw/ 1, mirror 2)" in capsys.readouterr().out
