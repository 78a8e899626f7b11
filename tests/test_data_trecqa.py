"""The TrecQA adapter on its fixture (the four jacana files, written small)."""

from __future__ import annotations

import dataclasses
import gzip
import hashlib
import shutil
import tarfile
from pathlib import Path
from typing import Any

import pytest

from reranklab.data import get_dataset
from reranklab.data.base import RawFile
from reranklab.data.download import fetch_dataset, sha256_of
from reranklab.data.trecqa import ARCHIVE_URL, RAW_FILES, TrecQA, pool_order, read_qapairs
from reranklab.errors import ConfigError, DownloadError, FormatError
from reranklab.evaluation import evaluate_run
from reranklab.io import rank_order, read_corpus, read_json, read_qrels, read_queries, read_run

FIXTURES = Path(__file__).parent / "fixtures"
TEST_FILE = RAW_FILES["test"]


def _small(files: tuple[RawFile, ...]) -> list[RawFile]:
    # The fixtures are small stand-ins for the release's files: their declared checksums cannot hold.
    return [dataclasses.replace(f, size=None, sha256=None) for f in files]


@pytest.fixture(scope="module")
def prepared(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    base = tmp_path_factory.mktemp("trecqa")
    manifest = fetch_dataset(
        TrecQA(), base / "raw", str(FIXTURES), files=_small(TrecQA.files), progress=False
    )
    stats = get_dataset("trecqa").prepare(base / "raw", base / "prepared")
    return {"raw": base / "raw", "out": base / "prepared", "manifest": manifest, "stats": stats}


def _broken(tmp_path: Path, edit: Any, name: str = TEST_FILE) -> Path:
    for other in RAW_FILES.values():
        shutil.copy(FIXTURES / "trecqa" / other, tmp_path / other)
    path = tmp_path / name
    path.write_text(edit(path.read_text(encoding="utf-8")), encoding="utf-8")
    return tmp_path


def _line(lineno: int, new: str) -> Any:
    def apply(text: str) -> str:
        lines = text.split("\n")
        lines[lineno - 1] = new
        return "\n".join(lines)

    return apply


def test_registered_with_the_bertsel_protocol() -> None:
    dataset = get_dataset("trecqa")
    assert isinstance(dataset, TrecQA)
    assert dataset.protocol.as_dict() == {
        "first_stage": "pool",
        "depth": None,
        "inject_relevant": False,
        "split": "predefined",
        "folds": 5,
        "negatives_per_positive": "all",
        "relevance_threshold": 1,
        "positives": "judged",
        "scored": "test",
        "metrics": ["MAP", "MRR"],
        "options": {"train": "train_all"},
        "scoring": None,
    }
    assert [s.name for s in dataset.scorings] == ["clean", "raw"]
    assert dataset.scoring().name == "clean"
    assert (dataset.scoring("clean").queries, dataset.scoring("raw").queries) == (
        "relevant_and_nonrelevant",
        "judged",
    )
    assert [(f.name, f.url, f.member) for f in dataset.files] == [
        (name, ARCHIVE_URL, f"jacana-qa-naacl2013-data-results/{name}")
        for name in (
            "train-less-than-40.manual-edit.xml",
            "train2393.cleanup.xml.gz",
            "dev-less-than-40.manual-edit.xml",
            "test-less-than-40.manual-edit.xml",
        )
    ]
    assert (
        ARCHIVE_URL == "http://cs.jhu.edu/~xuchen/packages/jacana-qa-naacl2013-data-results.tar.bz2"
    )
    assert {f.archive_md5 for f in dataset.files} == {"11f0275e95691594cd74825e0c341b7a"}


def test_fetched_from_the_fixture_mirror(prepared: dict[str, Any]) -> None:
    assert [(e["name"], e["source"]) for e in prepared["manifest"]["files"]] == [
        (name, f"mirror:trecqa/{name}") for name in RAW_FILES.values()
    ]


def test_files_come_out_of_the_jacana_archive(tmp_path: Path) -> None:
    # The members' paths are those of the release; the archive's MD5 is checked before extraction.
    mirror = tmp_path / "mirror" / "trecqa"
    mirror.mkdir(parents=True)
    archive = mirror / "jacana-qa-naacl2013-data-results.tar.bz2"
    with tarfile.open(archive, "w:bz2") as tar:
        for name in RAW_FILES.values():
            tar.add(FIXTURES / "trecqa" / name, arcname=f"jacana-qa-naacl2013-data-results/{name}")
    with pytest.raises(
        DownloadError, match=r"md5 mismatch: expected 11f0275e95691594cd74825e0c341b7a"
    ):
        fetch_dataset(TrecQA(), tmp_path / "refused", str(tmp_path / "mirror"), progress=False)

    class Repacked(TrecQA):
        files = tuple(
            dataclasses.replace(f, archive_md5=hashlib.md5(archive.read_bytes()).hexdigest())
            for f in _small(TrecQA.files)
        )

    manifest = fetch_dataset(Repacked(), tmp_path / "raw", str(tmp_path / "mirror"), progress=False)
    assert [e["source"] for e in manifest["files"]] == [
        f"mirror:trecqa/jacana-qa-naacl2013-data-results.tar.bz2!jacana-qa-naacl2013-data-results/{name}"
        for name in RAW_FILES.values()
    ]
    for name in RAW_FILES.values():
        assert (tmp_path / "raw" / name).read_bytes() == (FIXTURES / "trecqa" / name).read_bytes()


@pytest.mark.mirror
def test_member_checksums_match_the_real_files(mirror: Path) -> None:
    # TRAIN, DEV and TEST have their size and sha256 declared; TRAIN-ALL is trusted on first use.
    declared = {f.name: (f.size, f.sha256) for f in TrecQA.files if f.sha256 is not None}
    assert sorted(declared) == sorted([RAW_FILES["train"], RAW_FILES["dev"], RAW_FILES["test"]])
    for name, checks in declared.items():
        path = mirror / "trecqa" / name
        if not path.is_file():
            pytest.skip(f"the mirror {mirror} has no trecqa/{name}")
        assert (path.stat().st_size, sha256_of(path)) == checks, name


def test_train_all_counts_keep_every_question(prepared: dict[str, Any]) -> None:
    assert prepared["stats"] == {
        "passages": 24,
        "queries": 10,
        "judged_queries": 10,
        "judgements": 24,
        "split": {"train": 4, "dev": 3, "test": 3},
        "pool_pairs": 24,
        "questions_in_file": {"train": 4, "dev": 3, "test": 3},
        "pairs": {"train": 11, "dev": 6, "test": 7},
        "positives": {"train": 4, "dev": 2, "test": 4},
        "questions_with_positive_and_negative": {"train": 3, "dev": 2, "test": 2},
        "train_file": "train2393.cleanup.xml.gz",
    }
    assert read_json(prepared["out"] / "stats.json") == prepared["stats"]


def test_clean_and_raw_are_scorings_not_data() -> None:
    data = TrecQA().parse(FIXTURES / "trecqa", {"train": "train"})
    assert data.split == {
        "train": ["1395", "1398"],
        "dev": ["1.1", "1.2", "3.1"],
        "test": ["40.1", "40.2", "41.1"],
    }
    assert data.qrels["1.2"] == {
        "1.2-000": 0
    }  # only negative: counted by raw (scores 0), not by clean
    assert data.qrels["40.2"] == {
        "40.2-000": 1
    }  # only positive: counted by raw (scores 1), not by clean
    assert data.stats()["train_file"] == "train-less-than-40.manual-edit.xml"
    # The pool ranks 1.2 and 40.2 like any question; the scoring decides whether they count.
    clean, raw = (TrecQA().scoring(name) for name in ("clean", "raw"))
    for split, counted_clean in (("dev", ["1.1", "3.1"]), ("test", ["40.1", "41.1"])):
        run = {q: data.pool[q] for q in data.split[split]}
        by_clean = evaluate_run(run, data.qrels, data.split[split], scoring=clean)
        by_raw = evaluate_run(run, data.qrels, data.split[split], scoring=raw)
        assert sorted(by_clean["per_query"]) == counted_clean
        assert sorted(by_raw["per_query"]) == sorted(data.split[split])
        assert by_clean["dropped"] == {"no_relevant": 1} if split == "dev" else {"only_relevant": 1}
    # Training questions are never filtered: 2046 has only negatives.
    assert TrecQA().parse(FIXTURES / "trecqa", {}).qrels["2046"] == {"2046-000": 0, "2046-001": 0}


def test_first_and_last_records(prepared: dict[str, Any]) -> None:
    out = prepared["out"]
    queries = read_queries(out / "queries.tsv")
    assert list(queries) == [
        "1395",
        "1398",
        "2045",
        "2046",
        "1.1",
        "1.2",
        "3.1",
        "40.1",
        "40.2",
        "41.1",
    ]
    assert (queries["1395"], queries["41.1"]) == (
        "Who invented the telephone ?",
        "How many moons does Mars have ?",
    )
    assert queries["40.1"] == "What does AT&T stand for ?"
    corpus = read_corpus(out / "corpus.parquet")
    assert (next(iter(corpus)), list(corpus)[-1]) == ("1395-000", "41.1-002")
    assert corpus["1395-000"] == "Bell 's telephone patent was granted on March 7 , 1876 ."
    assert corpus["40.1-002"] == "Shares of AT&T rose 2 % < 3 % on Monday ."
    assert corpus["41.1-002"] == "Mars has two small moons , Phobos and Deimos ."
    qrels = read_qrels(out / "qrels.txt")
    assert qrels["41.1"] == {"41.1-000": 1, "41.1-001": 0, "41.1-002": 1}
    assert qrels["1398"] == {"1398-000": 0, "1398-001": 1}
    split = read_json(out / "split.json")
    assert split == {
        "train": ["1395", "1398", "2045", "2046"],
        "dev": ["1.1", "1.2", "3.1"],
        "test": ["40.1", "40.2", "41.1"],
    }
    lines = (out / "pool.run").read_text().splitlines()
    assert (len(lines), lines[0], lines[-1]) == (
        24,
        "1.1 Q0 1.1-000 1 3.0 pool",
        "41.1 Q0 41.1-002 3 1.0 pool",
    )


def test_pool_order_hides_the_labels(prepared: dict[str, Any]) -> None:
    pool = read_run(prepared["out"] / "pool.run")
    qrels = read_qrels(prepared["out"] / "qrels.txt")
    # The files list positives first; the pool does not, and rank order is pid order.
    labels = {q: [qrels[q][pid] for pid, _ in rank_order(scores)] for q, scores in pool.items()}
    assert labels["1398"] == [0, 1] and labels["40.1"] == [0, 1, 0] and labels["2045"] == [0, 0, 1]
    assert all([pid for pid, _ in rank_order(scores)] == sorted(scores) for scores in pool.values())
    block = next(b for b in read_qapairs(FIXTURES / "trecqa" / TEST_FILE) if b.qid == "41.1")
    assert [c.label for c in block.candidates] == [1, 1, 0]
    assert pool_order("41.1", block.candidates) == pool_order("41.1", block.candidates)
    assert [c.text for c in pool_order("41.1", block.candidates)] == [
        "Phobos and Deimos , the two moons of Mars , were discovered in 1877 .",
        "Mars is the fourth planet from the Sun .",
        "Mars has two small moons , Phobos and Deimos .",
    ]


def test_reader_keeps_tokens_and_ignores_annotations() -> None:
    blocks = list(read_qapairs(FIXTURES / "trecqa" / RAW_FILES["train_all"]))
    assert [(b.qid, b.line, len(b.candidates)) for b in blocks] == [
        ("1395", 2, 4),
        ("1398", 43, 2),
        ("2045", 68, 3),
        ("2046", 100, 2),
    ]
    assert blocks[0].candidates[0] == (
        "Alexander Graham Bell patented the telephone in 1876 .",
        1,
        10,
    )
    assert gzip.decompress((FIXTURES / "trecqa" / RAW_FILES["train_all"]).read_bytes()).startswith(
        b"<root>\n<QApairs id='1395'>"
    )


@pytest.mark.parametrize(
    ("edit", "line", "problem"),
    [
        (_line(25, ""), 26, "<negative> inside <negative> (opened on line 19) before </negative>"),
        (_line(3, "<positive>"), 3, "<positive> before the <question> of 40.1"),
        (_line(42, "<question>"), 42, "second <question> in <QApairs id='40.2'>"),
        (_line(33, ""), 34, "unexpected line in <QApairs id='40.1'>: \"<QApairs id='40.2'>\""),
        (_line(20, ""), 19, "<negative> of 40.1 has no tokens line"),
        (_line(52, "<QApairs id='40.1'>"), 52, "question id 40.1 is also at "),
        (_line(1, "<roots>"), 1, "expected <QApairs id='...'>, got '<roots>'"),
        (_line(34, "<QApairs id='40 2'>"), 34, "QApairs id '40 2' is empty or contains spaces"),
        (
            lambda t: t.rsplit("</QApairs>", 1)[0],
            52,
            "<QApairs id='41.1'> is not closed before the end of the file (line 84)",
        ),
        (
            lambda t: t.rsplit("</negative>", 1)[0],
            78,
            "<negative> is not closed before the end of the file (line 83)",
        ),
        (_line(2, "<QApairs id='1.1'>"), 2, "question id 1.1 is also at "),
    ],
)
def test_malformed_test_file_names_file_and_line(
    tmp_path: Path, edit: Any, line: int, problem: str
) -> None:
    raw = _broken(tmp_path, edit)
    with pytest.raises(FormatError) as caught:
        TrecQA().parse(raw, {})
    assert (caught.value.path, caught.value.line) == (raw / TEST_FILE, line)
    assert problem in caught.value.problem
    assert str(caught.value).startswith(f"{raw / TEST_FILE}:{line}: ")


def test_options_are_checked(tmp_path: Path) -> None:
    with pytest.raises(
        ConfigError,
        match=r"protocol.trecqa.options.test: clean/raw is now the scoring protocol.*scoring: clean \(default\) or raw",
    ):
        TrecQA().parse(tmp_path, {"test": "raw"})
    with pytest.raises(
        ConfigError,
        match=r"protocol.trecqa.options.train: expected one of \['train_all', 'train'\], got 'all'",
    ):
        TrecQA().parse(tmp_path, {"train": "all"})
    with pytest.raises(ConfigError, match=r"unknown option\(s\) \['seed'\]"):
        TrecQA().parse(tmp_path, {"seed": 1})
    with pytest.raises(
        DownloadError,
        match=r"train2393.cleanup.xml.gz: missing; run the download step for trecqa first",
    ):
        TrecQA().parse(tmp_path, {})
