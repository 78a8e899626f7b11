"""The nfL6 adapter on its fixture (tests/fixtures/nfl6, the raw format written small)."""

from __future__ import annotations

import dataclasses
import gzip
from pathlib import Path
from typing import Any

import pytest

from reranklab.data import get_dataset
from reranklab.data.download import fetch_dataset
from reranklab.data.nfl6 import NFL6, RAW_FILE, URL, answer_pid
from reranklab.errors import ConfigError, DownloadError, FormatError
from reranklab.io import read_corpus, read_json, read_qrels, read_queries

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture(scope="module")
def prepared(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    base = tmp_path_factory.mktemp("nfl6")
    # The fixture is a small stand-in for the real file: its published checksum cannot hold.
    files = [dataclasses.replace(f, size=None, sha256=None) for f in NFL6.files]
    manifest = fetch_dataset(NFL6(), base / "raw", str(FIXTURES), files=files, progress=False)
    stats = get_dataset("nfl6").prepare(base / "raw", base / "prepared")
    return {"raw": base / "raw", "out": base / "prepared", "manifest": manifest, "stats": stats}


def _lines(path: Path) -> list[str]:
    return gzip.decompress(path.read_bytes()).decode("utf-8").split("\n")


def _broken(tmp_path: Path, lineno: int, edit: Any) -> Path:
    lines = _lines(FIXTURES / "nfl6" / RAW_FILE)
    lines[lineno - 1] = edit(lines[lineno - 1])
    (tmp_path / RAW_FILE).write_bytes(gzip.compress("\n".join(lines).encode("utf-8"), mtime=0))
    return tmp_path


def test_registered_with_the_protocol_of_mass_et_al() -> None:
    dataset = get_dataset("nfl6")
    assert isinstance(dataset, NFL6)
    assert dataset.protocol.as_dict() == {
        "first_stage": "bm25",
        "depth": 10,
        "inject_relevant": True,
        "split": "cv",
        "folds": 5,
        "negatives_per_positive": 2,
        "relevance_threshold": 1,
        "positives": "judged",
        "scored": "test",
        "metrics": ["P@1", "MRR", "MAP"],
        "options": {},
        "scoring": None,
    }
    [spec] = dataset.files
    assert (spec.name, spec.url, spec.member, spec.manual) == ("nfL6.json.gz", URL, None, None)
    # As Hugging Face datasets publishes them for this URL (yahoo_answers_qa/dataset_infos.json).
    assert (spec.size, spec.sha256) == (
        49_411_220,
        "527ff8a1d898dfbb500e373f102a0e8f2d206dcb2c75c187d59902c3688b4ff3",
    )
    assert URL == "https://ciir.cs.umass.edu/downloads/nfL6/nfL6.json.gz"
    assert "Cohen" in dataset.citation and "Webscope L6" in dataset.licence


def test_fetched_from_the_fixture_mirror(prepared: dict[str, Any]) -> None:
    [entry] = prepared["manifest"]["files"]
    assert (entry["name"], entry["source"]) == ("nfL6.json.gz", "mirror:nfl6/nfL6.json.gz")
    assert (prepared["raw"] / RAW_FILE).read_bytes() == (FIXTURES / "nfl6" / RAW_FILE).read_bytes()


def test_exact_counts(prepared: dict[str, Any]) -> None:
    assert prepared["stats"] == {
        "passages": 6,
        "queries": 6,
        "judged_queries": 6,
        "judgements": 6,
        "items": 8,
        "skipped_empty": 1,  # 2100005 has an empty best answer
        "repeated_items": 1,  # 2100003 appears twice, identically
        "categories": 5,
        "nbest_answers": 12,
        "questions_with_duplicate_answer_text": 2,  # 2100002 and 2100004 share their best answer
    }
    assert read_json(prepared["out"] / "stats.json") == prepared["stats"]


def test_first_and_last_records(prepared: dict[str, Any]) -> None:
    out = prepared["out"]
    queries = read_queries(out / "queries.tsv")
    assert list(queries) == ["2100001", "2100002", "2100003", "2100004", "2100006", "2100008"]
    assert queries["2100001"] == "How can I keep homemade bread from going stale so fast?"
    assert queries["2100008"] == "What is the best way to memorise vocabulary for a language exam?"
    corpus = read_corpus(out / "corpus.parquet")
    assert list(corpus) == [answer_pid(q) for q in queries]
    assert corpus["A2100001"].startswith(
        "Let the loaf cool completely, then keep it in a paper bag"
    )
    assert corpus["A2100008"].endswith("mix old cards with new ones every day.")
    assert (
        corpus["A2100002"]
        == corpus["A2100004"]
        == "Ask your doctor first, everyone reacts differently."
    )
    lines = (out / "qrels.txt").read_text().splitlines()
    assert lines == [f"{q} 0 A{q} 1" for q in queries]
    assert read_qrels(out / "qrels.txt")["2100006"] == {"A2100006": 1}
    assert read_json(out / "split.json") is None
    assert (out / "pool.run").read_text() == ""


@pytest.mark.parametrize(
    ("lineno", "edit", "problem"),
    [
        (
            3,
            lambda line: line.replace('"id": "2100002"', '"id": 2100002'),
            "item 2: 'id' is a int, not a string",
        ),
        (4, lambda line: line.replace('"answer": ', '"best": '), "item 3: 'answer' is missing"),
        (
            2,
            lambda line: line.replace('"nbestanswers": [', '"nbestanswers": ["x", 3, '),
            "item 1: 'nbestanswers' is not a list of strings",
        ),
        (
            5,
            lambda line: line.replace("antibiotics?", "antibiotics now?").replace(
                "2100004", "2100001"
            ),
            "id '2100001' is used twice with different texts (first on line 2)",
        ),
        (
            7,
            lambda line: line.replace('"question": ', '"question" '),
            "invalid JSON: Expecting ':' delimiter",
        ),
        (9, lambda _: '["not", "an", "object"]', "item 8 is a JSON list, not an object"),
        (
            3,
            lambda line: line.replace('"2100002"', '"21 00002"'),
            "id '21 00002' is empty or contains whitespace",
        ),
    ],
)
def test_malformed_items_name_file_and_line(
    tmp_path: Path, lineno: int, edit: Any, problem: str
) -> None:
    raw = _broken(tmp_path, lineno, edit)
    with pytest.raises(FormatError) as caught:
        NFL6().parse(raw, {})
    assert (caught.value.path, caught.value.line) == (raw / RAW_FILE, lineno)
    assert problem in caught.value.problem
    assert str(caught.value).startswith(f"{raw / RAW_FILE}:{lineno}: ")


def test_truncated_array_and_trailing_data(tmp_path: Path) -> None:
    raw = _broken(tmp_path, 10, lambda _: "] []")
    with pytest.raises(FormatError, match=r"nfL6.json.gz:10: unexpected data after the JSON array"):
        NFL6().parse(raw, {})
    raw = _broken(tmp_path, 10, lambda _: "")
    with pytest.raises(
        FormatError, match=r"nfL6.json.gz:9: the file ends inside a JSON array \(no closing '\]'\)"
    ):
        NFL6().parse(raw, {})


def test_plain_json_is_read_too(tmp_path: Path) -> None:
    # The parser tells gzip by its magic bytes, so an uncompressed copy parses the same.
    (tmp_path / RAW_FILE).write_text(
        "\n".join(_lines(FIXTURES / "nfl6" / RAW_FILE)), encoding="utf-8"
    )
    assert NFL6().parse(tmp_path, {}).stats()["queries"] == 6


def test_options_and_missing_file_are_refused(tmp_path: Path) -> None:
    with pytest.raises(
        ConfigError, match=r"protocol.nfl6.options: nfL6 takes no options, got \['depth'\]"
    ):
        NFL6().parse(tmp_path, {"depth": 5})
    with pytest.raises(
        DownloadError, match=r"nfL6.json.gz: missing; run the download step for nfl6 first"
    ):
        NFL6().parse(tmp_path, {})
