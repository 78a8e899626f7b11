"""ANTIQUE: a fixture in the exact raw format (``tests/fixtures/antique``: collection, queries,
qrels with mixed tabs and spaces) prepared end to end, and the real query and qrels files of the
mirror (which lacks the 93.6 MB collection: the fixture collection stands in for it)."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest

from reranklab.data import registry
from reranklab.data.antique import BASE_URL, COLLECTION, Antique
from reranklab.data.base import RawFile
from reranklab.data.download import fetch_dataset, sha256_of
from reranklab.errors import ConfigError, DownloadError, FormatError
from reranklab.io import read_corpus, read_json, read_qrels, read_queries
from tests.helpers_data import copy_fixture, mirror_folder

FIXTURE = Path(__file__).parent / "fixtures" / "antique"


@pytest.fixture
def raw(tmp_path: Path) -> Path:
    return copy_fixture("antique", tmp_path)


def test_registered_with_the_bert_dmn_protocol() -> None:
    dataset = registry.get_dataset("antique")
    assert isinstance(dataset, Antique)
    assert dataset.protocol.as_dict() == {
        "first_stage": "bm25",
        "depth": 100,
        "inject_relevant": False,
        "split": "predefined",
        "folds": 5,
        "negatives_per_positive": 1,
        "relevance_threshold": 3,
        "positives": "judged",
        "scored": "test",
        "metrics": ["MAP", "MRR", "P@1", "nDCG@10"],
        "options": {"dev_queries": 200, "dev_seed": 42},
        "scoring": None,
    }
    collection = dataset.files[0]
    assert (collection.name, collection.size, collection.md5) == (
        COLLECTION,
        93_608_031,
        "684f7015aff377062a758e478476aac8",
    )


def test_prepare_fixture_end_to_end(raw: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    stats = Antique().prepare(raw, out, {"dev_queries": 1})
    assert stats == {
        "passages": 12,
        "queries": 6,
        "judged_queries": 6,
        "judgements": 12,
        "split": {"train": 4, "dev": 1, "test": 1},
        "judgements_by_label": {"1": 3, "2": 2, "3": 3, "4": 4},
        "judgements_by_iteration": {"E0": 2, "Q0": 4, "U0": 6},
        "judged_passages_not_in_corpus": 0,
    }
    assert read_json(out / "split.json") == {
        "train": ["900001", "900002", "900003", "900005"],
        "dev": ["900004"],
        "test": ["900006"],
    }
    # Graded labels are kept as they are (1-4); the threshold 3 lives in the protocol.
    assert read_qrels(out / "qrels.txt")["900001"] == {"900001_0": 4, "900001_1": 3, "900001_2": 1}
    assert read_qrels(out / "qrels.txt")["900006"] == {"900006_0": 4, "900006_1": 3, "900001_2": 1}
    assert read_queries(out / "queries.tsv")["900005"] == "how can i save money on heating ?"
    corpus = read_corpus(out / "corpus.parquet")
    assert (next(iter(corpus)), list(corpus)[-1]) == ("2531329_0", "900006_1")
    assert corpus["900006_1"] == "Wear swimming goggles   while chopping."
    assert (out / "pool.run").read_text() == ""


def test_dev_sample_is_seeded(raw: Path) -> None:
    first = Antique().parse(raw, {"dev_queries": 2, "dev_seed": 7}).split
    assert first == Antique().parse(raw, {"dev_queries": 2, "dev_seed": 7}).split
    assert len(first["dev"]) == 2 and len(first["train"]) == 3
    assert Antique().parse(raw, {"dev_queries": 0}).split["dev"] == []


@pytest.mark.parametrize(
    ("name", "line", "problem"),
    [
        (
            "antique-train.qrel",
            "900001 Q0 900001_1 5",
            r"relevance grade 5 is not one of \[1, 2, 3, 4\]",
        ),
        (
            "antique-train.qrel",
            "900001 Q0 900001_1 3",
            r"pair \(900001, 900001_1\) is judged twice",
        ),
        ("antique-train.qrel", "900001 Q0 900001_1", "expected 4 fields"),
        (
            "antique-train-queries.txt",
            "900001\tagain?",
            "duplicate question id '900001' \\(first on line 1\\)",
        ),
        (
            "antique-collection.txt",
            "900006_1\tagain",
            "duplicate answer id '900006_1' \\(first on line 12\\)",
        ),
        ("antique-collection.txt", "no tab here", "found no tab"),
    ],
)
def test_malformed_lines(raw: Path, name: str, line: str, problem: str) -> None:
    path = raw / name
    with open(path, "a", encoding="utf-8") as out:
        out.write(line + "\n")
    lineno = len(path.read_text().splitlines())
    with pytest.raises(FormatError, match=problem) as caught:
        Antique().parse(raw, {"dev_queries": 1})
    assert (caught.value.path, caught.value.line) == (path, lineno)


def test_judged_question_without_text_and_options(raw: Path) -> None:
    with open(raw / "antique-test.qrel", "a") as out:
        out.write("123 Q0 900006_0 2\n")
    with pytest.raises(
        FormatError, match=r"judged questions \['123'\] are not in antique-test-queries.txt"
    ):
        Antique().parse(raw, {"dev_queries": 1})
    shutil.copy(FIXTURE / "antique-test.qrel", raw / "antique-test.qrel")
    with pytest.raises(ConfigError, match="dev_queries: 200 leaves no training questions"):
        Antique().parse(raw, {})
    with pytest.raises(ConfigError, match="dev_queries: expected an integer >= 0"):
        Antique().parse(raw, {"dev_queries": "some"})
    (raw / COLLECTION).unlink()
    with pytest.raises(DownloadError, match="missing antique-collection.txt"):
        Antique().parse(raw, {})


def test_a_published_md5_is_checked(tmp_path: Path) -> None:
    # The collection has only an MD5 (and a size) published; the download step checks it.
    data = (FIXTURE / COLLECTION).read_bytes()

    class CollectionOnly(Antique):
        files = (
            RawFile(
                name=COLLECTION,
                url=BASE_URL + COLLECTION,
                size=len(data),
                md5=hashlib.md5(data).hexdigest(),
            ),
        )

    mirror = tmp_path / "mirror"
    (mirror / "antique").mkdir(parents=True)
    (mirror / "antique" / COLLECTION).write_bytes(data)
    manifest = fetch_dataset(CollectionOnly(), tmp_path / "raw", str(mirror), progress=False)
    assert manifest["files"][0]["source"] == "mirror:antique/antique-collection.txt"
    (mirror / "antique" / COLLECTION).write_bytes(data.replace(b"Ice", b"Icy"))
    (tmp_path / "raw" / COLLECTION).unlink()
    with pytest.raises(
        DownloadError, match=f"md5 mismatch: expected {hashlib.md5(data).hexdigest()}, got "
    ):
        fetch_dataset(CollectionOnly(), tmp_path / "raw", str(mirror), progress=False)
    assert not (tmp_path / "raw" / COLLECTION).exists()


# -- the real query and qrels files ----------------------------------------------------------------


@pytest.mark.mirror
def test_specs_match_the_real_files(mirror: Path) -> None:
    folder = mirror_folder(mirror, "antique", "antique-train.qrel")
    for spec in Antique().files[1:]:
        path = folder / spec.name
        assert (path.stat().st_size, sha256_of(path)) == (spec.size, spec.sha256)


@pytest.mark.mirror
def test_real_queries_and_qrels(mirror: Path, tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    shutil.copytree(mirror_folder(mirror, "antique", "antique-train.qrel"), raw)
    shutil.copy(FIXTURE / COLLECTION, raw / COLLECTION)  # the mirror has no collection
    out = tmp_path / "out"
    stats = Antique().prepare(raw, out)
    # 2,426 → 2,226 train + 200 dev; 200 test; 34,011 judgements as in the paper.
    assert stats == {
        "passages": 12,
        "queries": 2626,
        "judged_queries": 2626,
        "judgements": 34011,
        "split": {"train": 2226, "dev": 200, "test": 200},
        "judgements_by_label": {"1": 2914, "2": 8754, "3": 9276, "4": 13067},
        "judgements_by_iteration": {"E0": 773, "Q0": 30612, "U0": 2626},
        "judged_passages_not_in_corpus": 33640,  # of 33,642 judged answers, 2 are in the fixture
    }
    queries = list(read_queries(out / "queries.tsv").items())
    assert (queries[0], queries[2425], queries[2426], queries[-1]) == (
        ("3097310", "What causes severe swelling and pain in the knees?"),
        ("4086230", "See I have lost my voice what do I do?"),
        ("3990512", "how can we get concentration onsomething?"),
        ("1971899", "what is masturbat***?"),
    )
    qrels = read_qrels(out / "qrels.txt")
    assert qrels["3097310"] == {f"3097310_{i}": g for i, g in enumerate((4, 3, 4, 4, 2, 4, 4))}
    assert qrels["1964316"]["1964316_5"] == 4  # the test file's first line (tab-separated, U0)
    split = read_json(out / "split.json")
    assert {k: (v[0], v[-1], len(v)) for k, v in split.items()} == {
        "train": ("3097310", "4086230", 2226),
        "dev": ("802001", "1637590", 200),
        "test": ("3990512", "1971899", 200),
    }
