"""WikiPassageQA: the real split files of the mirror (counts, first/last records) and a fixture
in the exact raw format (``tests/fixtures/wikipassageqa``) that stands in for the
``document_passages.json`` the mirror lacks, so ``prepare`` runs end to end."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from reranklab.data import registry
from reranklab.data.download import sha256_of
from reranklab.data.wikipassageqa import WikiPassageQA, read_split
from reranklab.errors import ConfigError, DownloadError, FormatError
from reranklab.io import rank_order, read_corpus, read_json, read_qrels, read_queries, read_run
from tests.helpers_data import copy_fixture, mirror_folder

FIXTURE = Path(__file__).parent / "fixtures" / "wikipassageqa"


@pytest.fixture
def raw(tmp_path: Path) -> Path:
    return copy_fixture("wikipassageqa", tmp_path)


def test_registered_with_mass_et_al_protocol() -> None:
    dataset = registry.get_dataset("wikipassageqa")
    assert isinstance(dataset, WikiPassageQA)
    assert dataset.protocol.as_dict() == {
        "first_stage": "pool",
        "depth": None,
        "inject_relevant": False,
        "split": "predefined",
        "folds": 5,
        "negatives_per_positive": 5,
        "relevance_threshold": 1,
        "positives": "judged",
        "scored": "test",
        "metrics": ["MAP", "MRR", "P@1"],
        "options": {},
        "scoring": None,
    }
    assert [f.name for f in dataset.files] == [
        "train.tsv",
        "dev.tsv",
        "test.tsv",
        "document_passages.json",
    ]
    assert {f.url for f in dataset.files} == {
        "https://ciir.cs.umass.edu/downloads/wikipassageqa/WikiPassageQA.zip"
    }


def test_prepare_fixture_end_to_end(raw: Path, tmp_path: Path) -> None:
    out = tmp_path / "prepared"
    stats = WikiPassageQA().prepare(raw, out)
    assert stats == {
        "passages": 13,
        "queries": 6,
        "judged_queries": 6,
        "judgements": 8,
        "split": {"train": 3, "dev": 1, "test": 2},
        "pool_pairs": 26,
        "documents": 4,
        "documents_with_questions": 3,
        "relevant_passages": {"train": 5, "dev": 1, "test": 2},
    }
    assert read_json(out / "stats.json") == stats
    corpus = read_corpus(out / "corpus.parquet")
    assert list(corpus) == [
        "0_0",
        "0_1",
        "0_2",
        "0_3",
        "0_10",
        "1_0",
        "1_1",
        "1_2",
        "1_3",
        "2_0",
        "2_1",
        "2_2",
        "3_0",
    ]
    assert (
        corpus["0_10"]
        == "Its delta is a wetland of international importance and a UNESCO World Heritage Site."
    )
    assert read_queries(out / "queries.tsv") == {
        "101": "Where does the Danube begin and which countries does it cross?",
        "102": "How do plants make energy from light?",
        "103": "What role did the Danube play for Rome?",
        "201": "Why is the Danube delta protected?",
        "301": "How is a Petrarchan sonnet structured?",
        "302": "Why do leaves look green?",
    }
    assert read_qrels(out / "qrels.txt") == {
        "101": {"0_1": 1},
        "102": {"1_0": 1, "1_2": 1, "1_3": 1},
        "103": {"0_2": 1},
        "201": {"0_10": 1},
        "301": {"2_1": 1},
        "302": {"1_1": 1},
    }
    assert read_json(out / "split.json") == {
        "train": ["101", "102", "103"],
        "dev": ["201"],
        "test": ["301", "302"],
    }
    pool = read_run(out / "pool.run")
    # All passages of the question's article, in passage order (0_10 after 0_3, not after 0_1).
    assert [pid for pid, _ in rank_order(pool["201"])] == ["0_0", "0_1", "0_2", "0_3", "0_10"]
    assert [pid for pid, _ in rank_order(pool["301"])] == ["2_0", "2_1", "2_2"]
    assert (out / "pool.run").read_text().splitlines()[:2] == [
        "101 Q0 0_0 1 5.0 pool",
        "101 Q0 0_1 2 4.0 pool",
    ]


def _append_line(path: Path, line: str) -> int:
    text = path.read_text()
    path.write_text(text + "\n" + line)
    return len(text.splitlines()) + 1


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        (
            "104\tA question?\t9\tNowhere.html\t0",
            r"DocumentID 9 \(Nowhere.html\) is not in document_passages.json",
        ),
        (
            "104\tA question?\t2\tSonnet.html\t7",
            r"relevant passage\(s\) \['7'\] are not passages of document 2",
        ),
        (
            "104\tA question?\t2\tSonnet.html\t1;2",
            "RelevantPassages '1;2' is not a comma-separated list",
        ),
        ("104\tA question?\t2\tSonnet.html\t1,1", "lists a passage twice"),
        ("104\tA question?\t2\tSonnet.html", "expected 5 tab-separated fields"),
        ("104\t \t2\tSonnet.html\t1", "empty Question"),
    ],
)
def test_malformed_train_line(raw: Path, line: str, problem: str) -> None:
    train = raw / "train.tsv"
    lineno = _append_line(train, line)
    with pytest.raises(FormatError, match=problem) as caught:
        WikiPassageQA().parse(raw, {})
    assert (caught.value.path, caught.value.line) == (train, lineno)


def test_question_in_two_splits_is_refused(raw: Path) -> None:
    test = raw / "test.tsv"
    lineno = _append_line(test, "101\tAgain?\t2\tSonnet.html\t0")
    with pytest.raises(FormatError, match="QID 101 also on line 2 of train.tsv") as caught:
        WikiPassageQA().parse(raw, {})
    assert (caught.value.path, caught.value.line) == (test, lineno)


def test_wrong_header_and_bad_json(raw: Path) -> None:
    dev = raw / "dev.tsv"
    dev.write_text(dev.read_text().replace("RelevantPassages", "Passages"))
    with pytest.raises(FormatError, match="is not the WikiPassageQA header") as caught:
        WikiPassageQA().parse(raw, {})
    assert (caught.value.path, caught.value.line) == (dev, 1)
    shutil.copy(FIXTURE / "dev.tsv", dev)
    (raw / "document_passages.json").write_text('{"0": {"0": "a"},\n "1": ["not", "an", "object"]}')
    with pytest.raises(FormatError, match="document '1': expected an object"):
        WikiPassageQA().parse(raw, {})
    (raw / "document_passages.json").write_text('{"0": {"0": "a"},\n "1": }')
    with pytest.raises(FormatError, match="not valid JSON") as caught:
        WikiPassageQA().parse(raw, {})
    assert caught.value.line == 2


def test_missing_file_and_options(raw: Path) -> None:
    (raw / "document_passages.json").unlink()
    with pytest.raises(
        DownloadError,
        match="missing document_passages.json; run the download step for wikipassageqa",
    ):
        WikiPassageQA().parse(raw, {})
    with pytest.raises(
        ConfigError, match="protocol.wikipassageqa.options: WikiPassageQA takes no options"
    ):
        WikiPassageQA().parse(raw, {"depth": 3})


# -- the real split files ------------------------------------------------------------------------


@pytest.mark.mirror
def test_real_split_files_counts_and_records(mirror: Path) -> None:
    folder = mirror_folder(mirror, "wikipassageqa", "test.tsv")
    splits = {name: read_split(folder / f"{name}.tsv") for name in ("train", "dev", "test")}
    assert {name: len(qs) for name, qs in splits.items()} == {
        "train": 3332,
        "dev": 417,
        "test": 416,
    }
    assert {name: sum(len(q.relevant) for q in qs) for name, qs in splits.items()} == {
        "train": 5560,
        "dev": 707,
        "test": 700,
    }
    assert len({q.doc_id for qs in splits.values() for q in qs}) == 862
    assert len({q.qid for qs in splits.values() for q in qs}) == 3332 + 417 + 416
    first, last = splits["train"][0], splits["train"][-1]
    assert first[1:] == (
        "3086",
        "What is the role of conversionism in Evangelicalism?",
        "672",
        "Evangelicalism.html",
        ("4",),
    )
    assert last[1:] == (
        "2944",
        "What is the origin of the dollar sign?",
        "186",
        "United_States_dollar.html",
        ("13",),
    )
    assert splits["dev"][0][1:] == (
        "884",
        "How did Mexico begin trying to get independence from Spain?",
        "61",
        "Mexico.html",
        ("22", "23"),
    )
    assert splits["test"][-1][1:] == (
        "232",
        "Why are drainage basins important to the ecology?",
        "150",
        "Drainage_basin.html",
        ("8",),
    )
    assert (first.line, last.line, splits["dev"][-1].line) == (2, 3333, 418)


@pytest.mark.mirror
def test_specs_match_the_real_files(mirror: Path) -> None:
    folder = mirror_folder(mirror, "wikipassageqa", "test.tsv")
    for spec in WikiPassageQA().files[:3]:
        path = folder / spec.name
        assert (path.stat().st_size, sha256_of(path)) == (spec.size, spec.sha256)


@pytest.mark.mirror
def test_real_splits_with_a_partial_passage_file(mirror: Path, tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    raw.mkdir()
    folder = mirror_folder(mirror, "wikipassageqa", "test.tsv")
    for name in ("train.tsv", "dev.tsv", "test.tsv"):
        shutil.copy(folder / name, raw / name)
    shutil.copy(FIXTURE / "document_passages.json", raw / "document_passages.json")
    with pytest.raises(
        FormatError,
        match=r"DocumentID 672 \(Evangelicalism.html\) is not in document_passages.json",
    ) as caught:
        WikiPassageQA().parse(raw, {})
    assert (caught.value.path, caught.value.line) == (raw / "train.tsv", 2)
