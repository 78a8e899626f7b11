"""InsuranceQA v2 on the real files of the mirror (fetched, verified, prepared: exact counts and
first/last records), and small files in the exact raw format (gzip, ``idx_N`` tokens) written
here for the label2answer path and the error cases."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from reranklab.data import registry
from reranklab.data.download import fetch_dataset
from reranklab.data.insuranceqa import (
    ANSWERS_JSON,
    LABEL2ANSWER,
    VOCABULARY,
    InsuranceQA,
    _Builder,
    pool_file,
    read_answers_json,
    read_vocabulary,
)
from reranklab.errors import ConfigError, DownloadError, FormatError
from reranklab.io import rank_order, read_corpus, read_json, read_queries, read_run


def test_registered_with_the_bert_dmn_protocol() -> None:
    dataset = registry.get_dataset("insuranceqa")
    assert isinstance(dataset, InsuranceQA)
    assert dataset.mirror_folder == "insuranceqa_v2"
    assert dataset.protocol.as_dict() == {
        "first_stage": "pool",
        "depth": None,
        "inject_relevant": False,
        "split": "predefined",
        "folds": 5,
        "negatives_per_positive": 1,
        "relevance_threshold": 1,
        "positives": "judged",
        "scored": "test",
        "metrics": ["MAP", "MRR"],
        "options": {
            "source": "github",
            "pool_size": 100,
            "train_questions": "all",
            "dev_questions": "all",
            "test_questions": "all",
            "subset_seed": 42,
            "candidates": None,
        },
        "scoring": None,
    }
    answers = dataset.files[-1]
    assert (answers.name, answers.member) == (
        ANSWERS_JSON,
        "insuranceqa_data-1.2/insuranceqa_data/answers.json.gz",
    )


# -- small files in the raw format ---------------------------------------------------------------

VOCAB = {
    "idx_1": "What",
    "idx_2": "Is",
    "idx_3": "Term",
    "idx_4": "Life?",
    "idx_5": "Cover",
    "idx_6": "It",
    "idx_7": "pays",
    "idx_8": "out.",
}


def _gz(path: Path, lines: list[str]) -> None:
    path.write_bytes(gzip.compress(("\n".join(lines) + "\n").encode("utf-8"), mtime=0))


@pytest.fixture
def small(tmp_path: Path) -> Path:
    raw = tmp_path / "raw"
    raw.mkdir()
    (raw / VOCABULARY).write_text(
        "".join(f"{k}\t{v}\n" for k, v in VOCAB.items()), encoding="utf-8"
    )
    answers = {str(i): {"en": f" Answer {i} text.", "zh": "答"} for i in range(1, 7)}
    (raw / ANSWERS_JSON).write_bytes(
        gzip.compress(json.dumps(answers, ensure_ascii=False).encode("utf-8"), mtime=0)
    )
    _gz(
        raw / pool_file(100, "train"),
        [
            "life-insurance\tidx_1 idx_2 idx_3 idx_4\t2\t1 2 3",
            "auto-insurance\tidx_5 idx_6\t4 5\t1 5 3",
        ],
    )
    for size in (100, 500):
        _gz(
            raw / pool_file(size, "valid"),
            ["life-insurance\tidx_2 idx_6\t6\t1 2" + (" 3" if size == 500 else "")],
        )
        _gz(raw / pool_file(size, "test"), ["home-insurance\tidx_5 idx_3\t3\t3 1"])
    return raw


def test_small_files_pool_with_ground_truth_added(small: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    stats = InsuranceQA().prepare(small, out, {})
    assert stats["passages"] == 6 and stats["split"] == {"train": 2, "dev": 1, "test": 1}
    assert stats["questions_with_ground_truth_in_pool"] == {"train": 2, "dev": 0, "test": 1}
    assert stats["ground_truth_added"] == {"train": 1, "dev": 1, "test": 0}
    assert read_queries(out / "queries.tsv") == {
        "train-1": "What Is Term Life?",
        "train-2": "Cover It",
        "valid-1": "Is It",
        "test-1": "Cover Term",
    }
    pool = read_run(out / "pool.run")
    # The pool in file order, then the ground truth the pool lacks (4 for train-2, 6 for valid-1).
    assert {qid: [pid for pid, _ in rank_order(scores)] for qid, scores in pool.items()} == {
        "train-1": ["1", "2", "3"],
        "train-2": ["1", "5", "3", "4"],
        "valid-1": ["1", "2", "6"],
        "test-1": ["3", "1"],
    }
    assert read_corpus(out / "corpus.parquet")["4"] == "Answer 4 text."
    assert read_json(out / "split.json") == {
        "train": ["train-1", "train-2"],
        "dev": ["valid-1"],
        "test": ["test-1"],
    }
    bigger = InsuranceQA().parse(small, {"pool_size": 500})
    assert list(bigger.pool["valid-1"]) == ["1", "2", "3", "6"]
    assert list(bigger.pool["train-2"]) == ["1", "5", "3", "4"]  # training always uses the 100 pool


def test_label2answer_is_preferred_when_present(small: Path) -> None:
    _gz(small / LABEL2ANSWER, [f"{i}\tidx_6 idx_7 idx_8" for i in range(1, 7)])
    prepared = InsuranceQA().parse(small, {})
    assert prepared.corpus["3"] == "It pays out."
    assert prepared.extra_stats["answer_source"] == LABEL2ANSWER


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ("life-insurance\tidx_1 idx_99\t2\t1 2", "token 'idx_99' is not in the vocabulary"),
        ("life-insurance\tidx_1\t2\t1 x", "pool '1 x' is not a list of answer labels"),
        ("life-insurance\tidx_1\t2\t1 2 2", "an answer label is listed twice"),
        ("life-insurance\tidx_1\t7\t1 2", r"answer label\(s\) \['7'\] have no answer text"),
        ("life-insurance\tidx_1\t2", "expected 4 tab-separated fields"),
    ],
)
def test_malformed_question_line(small: Path, line: str, problem: str) -> None:
    path = small / pool_file(100, "test")
    _gz(path, ["home-insurance\tidx_5 idx_3\t3\t3 1", line])
    with pytest.raises(FormatError, match=problem) as caught:
        InsuranceQA().parse(small, {})
    assert (caught.value.path, caught.value.line) == (path, 2)


def test_bad_vocabulary_answers_and_options(small: Path) -> None:
    (small / VOCABULARY).write_text("idx_1\tWhat\nidx_1\tAgain\n")
    with pytest.raises(FormatError, match="token idx_1 defined twice") as caught:
        read_vocabulary(small / VOCABULARY)
    assert caught.value.line == 2
    (small / ANSWERS_JSON).write_bytes(gzip.compress(b'{"1": {"zh": "x"}}'))
    with pytest.raises(FormatError, match="answer '1': no English text \\(\"en\"\\)"):
        read_answers_json(small / ANSWERS_JSON)
    with pytest.raises(
        ConfigError, match=r"options.pool_size: expected one of \[100, 500\], got 1000"
    ):
        InsuranceQA().parse(small, {"pool_size": 1000})
    with pytest.raises(ConfigError, match=r"unknown option\(s\) \['pool'\]"):
        InsuranceQA().parse(small, {"pool": 100})
    (small / pool_file(100, "train")).unlink()
    with pytest.raises(
        DownloadError,
        match="missing InsuranceQA.question.anslabel.raw.100.pool.solr.train.encoded.gz",
    ):
        InsuranceQA().parse(small, {})


# -- the real files ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def real(mirror: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    if not (mirror / "insuranceqa_v2" / VOCABULARY).is_file():
        pytest.skip(f"the mirror {mirror} has no insuranceqa_v2/")
    base = tmp_path_factory.mktemp("insuranceqa")
    manifest = fetch_dataset(InsuranceQA(), base / "raw", str(mirror), progress=False)
    stats = InsuranceQA().prepare(base / "raw", base / "out", {})
    return {"raw": base / "raw", "out": base / "out", "manifest": manifest, "stats": stats}


@pytest.mark.mirror
def test_real_files_fetched_and_verified(real: dict[str, Any]) -> None:
    files = real["manifest"]["files"]
    assert [f["name"] for f in files] == [f.name for f in InsuranceQA().files]
    assert {f["source"] for f in files} == {
        f"mirror:insuranceqa_v2/{f.name}" for f in InsuranceQA().files
    }


@pytest.mark.mirror
def test_real_counts(real: dict[str, Any]) -> None:
    # The V2 README's counts: 12,889 / 2,000 / 2,000 questions, 21,325 / 3,354 / 3,308 answers,
    # ground truth in the 100 pool for 8,311 / 1,278 / 1,323 questions.
    assert real["stats"] == {
        "passages": 27413,
        "queries": 16889,
        "judged_queries": 16889,
        "judgements": 27987,
        "split": {"train": 12889, "dev": 2000, "test": 2000},
        "pool_pairs": 1702044,
        "ground_truth_answers": {"train": 21325, "dev": 3354, "test": 3308},
        "questions_with_ground_truth_in_pool": {"train": 8311, "dev": 1278, "test": 1323},
        "ground_truth_added": {"train": 10034, "dev": 1602, "test": 1508},
        "pool_file": {
            split: pool_file(100, name)
            for split, name in (("train", "train"), ("dev", "valid"), ("test", "test"))
        },
        "domains": {
            "annuities": 800,
            "auto-insurance": 2165,
            "critical-illness-insurance": 135,
            "disability-insurance": 949,
            "health-insurance": 2002,
            "home-insurance": 1751,
            "life-insurance": 4371,
            "long-term-care-insurance": 596,
            "medicare-insurance": 2301,
            "other-insurance": 36,
            "renters-insurance": 1086,
            "retirement-plans": 697,
        },
        "answer_source": ANSWERS_JSON,
    }


@pytest.mark.mirror
def test_real_first_and_last_records(real: dict[str, Any]) -> None:
    out = real["out"]
    queries = read_queries(out / "queries.tsv")
    items = list(queries.items())
    assert (items[0], items[12889], items[-1]) == (
        ("train-1", "Is Disability Insurance Required By Law?"),
        ("valid-1", "Does Medicare Pick Up Co Pays?"),
        ("test-2000", "How Can I Get Auto Insurance With A Suspended License?"),
    )
    corpus = read_corpus(out / "corpus.parquet")
    assert (len(corpus), next(iter(corpus)), list(corpus)[-1]) == (27413, "1", "27413")
    assert (
        corpus["1"].startswith(
            "Coverage follows the car. Example 1: If you were given a car (loaned) "
        )
        and len(corpus["1"]) == 1130
    )
    assert (
        corpus["27413"].endswith("cause tax problems you certainly do not need")
        and len(corpus["27413"]) == 747
    )
    qrels = (out / "qrels.txt").read_text().splitlines()
    assert (len(qrels), qrels[0], qrels[-1]) == (27987, "test-1 0 16164 1", "valid-999 0 7337 1")
    lines = (out / "pool.run").read_text().splitlines()
    assert (len(lines), lines[0], lines[-1]) == (
        1702044,
        "test-1 Q0 15813 1 103.0 pool",
        "valid-999 Q0 21781 105 1.0 pool",
    )
    train1 = [line.split()[2] for line in lines if line.startswith("train-1 ")]
    assert (len(train1), train1[-1]) == (
        101,
        "20798",
    )  # ground truth missing from the pool, appended
    assert (
        "train-2 Q0 26354 27 74.0 pool" in lines
    )  # ground truth inside the pool stays at its rank
    split = read_json(out / "split.json")
    assert {k: (v[0], v[-1], len(v)) for k, v in split.items()} == {
        "train": ("train-1", "train-12889", 12889),
        "dev": ("valid-1", "valid-2000", 2000),
        "test": ("test-1", "test-2000", 2000),
    }


@pytest.mark.mirror
def test_real_500_pools(real: dict[str, Any]) -> None:
    raw = real["raw"]
    vocabulary = read_vocabulary(raw / VOCABULARY)
    builder = _Builder(vocabulary, read_answers_json(raw / ANSWERS_JSON))
    builder.add("dev", raw / pool_file(500, "valid"))
    builder.add("test", raw / pool_file(500, "test"))
    assert builder.stats["questions_with_ground_truth_in_pool"] == {"dev": 1592, "test": 1625}
    assert builder.stats["ground_truth_added"] == {"dev": 1031, "test": 927}
    assert sum(len(p) for p in builder.pool.values()) == 2 * 2000 * 500 + 1031 + 927
