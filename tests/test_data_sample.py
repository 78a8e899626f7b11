"""The shipped ``sample`` dataset: its files, its parser, its registration and its difficulty."""

from __future__ import annotations

import hashlib
import statistics
from importlib.resources import files
from pathlib import Path

import bm25s
import pytest
import pytrec_eval
import Stemmer

from reranklab.data.base import Protocol
from reranklab.data.sample import PASSAGES, QRELS, QUESTIONS, SampleDataset
from reranklab.errors import FormatError
from reranklab.io import read_corpus, read_json, read_qrels, read_queries

RAW_FILES = (QUESTIONS, PASSAGES, QRELS)


def packaged(name: str) -> bytes:
    return (files("reranklab.data") / "sample_data" / name).read_bytes()


@pytest.fixture(scope="module")
def raw_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # Copy the package resources, as the download step does, so parse() sees a plain raw/ folder.
    out = tmp_path_factory.mktemp("sample_raw")
    for name in RAW_FILES:
        (out / name).write_bytes(packaged(name))
    return out


@pytest.fixture(scope="module")
def prepared(raw_dir: Path):
    return SampleDataset().parse(raw_dir, {})


def test_package_data_is_importable_with_readme() -> None:
    folder = files("reranklab.data") / "sample_data"
    names = sorted(entry.name for entry in folder.iterdir() if entry.is_file())
    assert names == ["README.md", "passages.tsv", "qrels.txt", "questions.tsv"]
    assert sum(len(packaged(name)) for name in names) <= 400_000
    assert "CC BY 4.0" in packaged("README.md").decode("utf-8")


def test_raw_file_specs_match_the_shipped_files() -> None:
    specs = {spec.name: spec for spec in SampleDataset.files}
    assert sorted(specs) == sorted(RAW_FILES)
    for name, spec in specs.items():
        data = packaged(name)
        assert spec.url == f"package:reranklab.data.sample_data/{name}"
        assert spec.size == len(data), name
        assert spec.sha256 == hashlib.sha256(data).hexdigest(), name
        assert spec.member is None and spec.manual is None


def test_registered_with_its_protocol() -> None:
    from reranklab.data.registry import get_dataset

    dataset = get_dataset("sample")
    assert isinstance(dataset, SampleDataset)
    assert dataset.licence == "CC BY 4.0"
    assert dataset.protocol == Protocol(
        first_stage="bm25",
        depth=30,
        inject_relevant=False,
        split="cv",
        folds=5,
        negatives_per_positive=3,
        relevance_threshold=1,
        metrics=("P@1", "MAP", "MRR", "nDCG@10"),
    )


def test_counts(prepared) -> None:
    assert len(prepared.queries) == 100
    assert len(prepared.corpus) == 1000
    assert len(prepared.qrels) == 100
    grades = [grade for judged in prepared.qrels.values() for grade in judged.values()]
    assert {g: grades.count(g) for g in (0, 1, 2)} == {0: 146, 1: 72, 2: 103}
    assert prepared.split is None and prepared.pool is None
    assert prepared.stats() == {
        "passages": 1000,
        "queries": 100,
        "judged_queries": 100,
        "judgements": 321,
        "judgements_by_grade": {"0": 146, "1": 72, "2": 103},
    }


def test_first_and_last_records(prepared) -> None:
    qids, pids = list(prepared.queries), list(prepared.corpus)
    assert (qids[0], qids[-1]) == ("S001", "S100")
    assert prepared.queries["S001"] == "How do I keep my cast iron skillet from rusting?"
    assert prepared.queries["S100"] == "How often should I wash my bed sheets, and why?"
    assert (pids[0], pids[-1]) == ("P0001", "P1000")
    assert prepared.corpus["P0001"].startswith(
        "Commuting by bike is easier with somewhere to shower"
    )
    assert prepared.corpus["P1000"].startswith(
        "A whirring or grinding noise from a washing machine"
    )
    lines = packaged(QRELS).decode("utf-8").splitlines()
    assert (lines[0], lines[-1]) == ("S001 0 P0630 2", "S100 0 P0783 0")
    assert prepared.qrels["S001"]["P0630"] == 2


def test_every_question_has_a_full_answer_and_passages_are_sized(prepared) -> None:
    for qid, judged in prepared.qrels.items():
        full = sum(grade == 2 for grade in judged.values())
        assert 1 <= full <= 2, qid
        assert sum(grade == 1 for grade in judged.values()) <= 2, qid
    words = [len(text.split()) for text in prepared.corpus.values()]
    assert (min(words), max(words)) == (30, 81)
    assert len(set(prepared.corpus.values())) == 1000


def test_prepare_writes_canonical_files(raw_dir: Path, tmp_path: Path) -> None:
    stats = SampleDataset().prepare(raw_dir, tmp_path / "prepared")
    out = tmp_path / "prepared"
    assert stats["judgements"] == 321
    assert read_json(out / "stats.json") == stats
    assert read_json(out / "split.json") is None
    assert (
        read_queries(out / "queries.tsv")["S042"]
        == "How often should I water plants in pots during summer?"
    )
    assert len(read_corpus(out / "corpus.parquet")) == 1000
    qrels = read_qrels(out / "qrels.txt")
    assert sum(len(v) for v in qrels.values()) == 321
    assert (out / "pool.run").read_text(encoding="utf-8") == ""


def _break(raw_dir: Path, tmp_path: Path, name: str, line: int, new_line: str | None) -> Path:
    """Copy the raw files into tmp_path, replacing (or with None, duplicating) one line."""
    for other in RAW_FILES:
        (tmp_path / other).write_bytes((raw_dir / other).read_bytes())
    lines = (raw_dir / name).read_text(encoding="utf-8").splitlines(keepends=True)
    lines[line - 1] = lines[line - 2] if new_line is None else new_line
    (tmp_path / name).write_text("".join(lines), encoding="utf-8")
    return tmp_path


@pytest.mark.parametrize(
    ("name", "line", "new_line", "problem"),
    [
        (QUESTIONS, 5, "S005\tWhy should meat rest?\textra field\n", "got 3 tab-separated fields"),
        (
            QUESTIONS,
            7,
            "S007 How do I stop pasta water from boiling over?\n",
            "got 1 tab-separated fields",
        ),
        (QUESTIONS, 9, "S009\t   \n", "empty question text for id 'S009'"),
        (PASSAGES, 12, None, "duplicate passage id 'P0011' (first on line 11)"),
        (PASSAGES, 40, "\tsome passage text\n", "passage id '' is empty or contains spaces"),
        (QRELS, 3, "S001 0 P0793 two\n", "relevance grade 'two' is not an integer"),
        (QRELS, 4, "S001 0 P0793 3\n", "relevance grade 3 is outside 0-2"),
        (QRELS, 6, "S001 0 P0630\n", "expected 4 fields"),
        (QRELS, 8, "S101 0 P0630 1\n", "question id 'S101' is not in questions.tsv"),
        (QRELS, 10, "S003 0 P1001 1\n", "passage id 'P1001' is not in passages.tsv"),
        (QRELS, 2, None, "is judged twice"),
    ],
)
def test_parse_errors_name_file_and_line(
    raw_dir: Path, tmp_path: Path, name: str, line: int, new_line: str | None, problem: str
) -> None:
    broken = _break(raw_dir, tmp_path, name, line, new_line)
    with pytest.raises(FormatError) as info:
        SampleDataset().parse(broken, {})
    assert Path(info.value.path) == broken / name
    assert info.value.line == line
    assert problem in info.value.problem
    assert f"{name}:{line}: " in str(info.value)


def test_invalid_utf8_is_a_format_error(raw_dir: Path, tmp_path: Path) -> None:
    broken = _break(raw_dir, tmp_path, PASSAGES, 3, "P0003\tplaceholder\n")
    data = (broken / PASSAGES).read_bytes().replace(b"placeholder", b"caf\xe9")
    (broken / PASSAGES).write_bytes(data)
    with pytest.raises(FormatError, match=r"passages\.tsv:3: not valid UTF-8"):
        SampleDataset().parse(broken, {})


def test_bm25_is_far_from_perfect(prepared) -> None:
    """BM25 top-30 (the dataset's first stage) must leave re-rankers real work, but not be hopeless."""
    pids = list(prepared.corpus)
    qids = list(prepared.queries)
    stemmer = Stemmer.Stemmer("english")
    retriever = bm25s.BM25(method="lucene", k1=0.9, b=0.4)
    corpus_tokens = bm25s.tokenize(
        [prepared.corpus[p] for p in pids], stopwords="en", stemmer=stemmer, show_progress=False
    )
    retriever.index(corpus_tokens, show_progress=False)
    query_tokens = bm25s.tokenize(
        [prepared.queries[q] for q in qids], stopwords="en", stemmer=stemmer, show_progress=False
    )
    docs, scores = retriever.retrieve(query_tokens, k=30, show_progress=False)
    run = {
        q: {pids[int(d)]: float(s) for d, s in zip(docs[i], scores[i], strict=True)}
        for i, q in enumerate(qids)
    }

    evaluator = pytrec_eval.RelevanceEvaluator(prepared.qrels, {"map", "P_1"}, relevance_level=1)
    per_query = evaluator.evaluate(run)
    mean_ap = statistics.mean(m["map"] for m in per_query.values())
    p_at_1 = statistics.mean(m["P_1"] for m in per_query.values())
    assert 0.25 < mean_ap < 0.75, mean_ap
    assert 0.2 < p_at_1 < 0.7, p_at_1
