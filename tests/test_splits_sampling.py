"""Folds partition the queries and are stable for a seed; sampling keeps positives and the ratio."""

from __future__ import annotations

import pytest

from reranklab.errors import ConfigError
from reranklab.retrieval import first_stage_record, inject_relevant
from reranklab.sampling import sample_examples
from reranklab.splits import kfold, make_folds, predefined

QIDS = [f"q{i}" for i in range(23)]


def test_kfold_partitions_queries():
    folds = kfold(QIDS, k=5, seed=7)
    tests = [set(f.test) for f in folds.folds]
    assert set().union(*tests) == set(QIDS)
    assert sum(len(t) for t in tests) == len(QIDS)
    assert sorted(len(t) for t in tests) == [4, 4, 5, 5, 5]
    for fold in folds.folds:
        assert set(fold.train) | set(fold.test) == set(QIDS)
        assert not set(fold.train) & set(fold.test)


def test_kfold_is_stable_for_a_seed_and_input_order():
    assert kfold(QIDS, 5, seed=7) == kfold(list(reversed(QIDS)), 5, seed=7)
    assert kfold(QIDS, 5, seed=7) != kfold(QIDS, 5, seed=8)


def test_kfold_too_few_queries():
    with pytest.raises(ConfigError, match="3 queries cannot make 5 folds"):
        kfold(["a", "b", "c"], 5, seed=1)


def test_predefined_split():
    folds = make_folds(
        {"split": "predefined", "folds": 5},
        [],
        {"train": ["a"], "dev": ["b"], "test": ["c"]},
        1,
        "d",
    )
    assert (
        folds.kind == "predefined" and folds.folds[0].test == ["c"] and folds.folds[0].dev == ["b"]
    )
    with pytest.raises(ConfigError, match="has no predefined split"):
        predefined(None, "d")
    with pytest.raises(ConfigError, match="both in test and train"):
        predefined({"train": ["a"], "test": ["a"]}, "d")


CANDIDATES = {
    "q1": {f"n{i}": float(10 - i) for i in range(8)} | {"p1": 0.5},
    "q2": {"n1": 1.0},  # its positive was not retrieved: still kept
    "q3": {"p3": 1.0},  # only a positive: dropped
    "q4": {"n2": 1.0, "n3": 0.5},  # no positive: dropped
}
QRELS = {"q1": {"p1": 2, "p1b": 1, "n0": 0}, "q2": {"p2": 1}, "q3": {"p3": 1}, "q4": {"n2": 0}}


def test_sampling_keeps_every_positive_and_respects_the_ratio():
    ex = sample_examples(
        list(CANDIDATES), CANDIDATES, QRELS, negatives_per_positive=2, threshold=1, seed=0
    )
    pw = ex.pointwise
    assert sorted(pw[pw.label == 1].pid) == ["p1", "p1b", "p2"]
    assert (pw[(pw.qid == "q1") & (pw.label == 0)].shape[0]) == 4  # 2 positives x 2
    assert (pw[(pw.qid == "q2") & (pw.label == 0)].shape[0]) == 1  # only one negative exists
    assert ex.stats["dropped_no_negative"] == 1 and ex.stats["dropped_no_positive"] == 1
    assert len(ex.triplets[ex.triplets.qid == "q1"]) == 4
    negatives_q1 = set(pw[(pw.qid == "q1") & (pw.label == 0)].pid)
    assert set(ex.triplets[ex.triplets.qid == "q1"].neg_pid) == negatives_q1
    assert "p1" not in negatives_q1


def test_sampling_all_and_threshold():
    ex = sample_examples(
        ["q1"], CANDIDATES, QRELS, negatives_per_positive="all", threshold=2, seed=0
    )
    # threshold 2: only p1 is positive, p1b is neither (not a candidate), all 8 n* are negatives
    assert list(ex.pointwise[ex.pointwise.label == 1].pid) == ["p1"]
    assert len(ex.pointwise) == 9 and len(ex.triplets) == 8


def test_sampling_is_seeded():
    a = sample_examples(["q1"], CANDIDATES, QRELS, 1, seed=5)
    b = sample_examples(["q1"], CANDIDATES, QRELS, 1, seed=5)
    assert a.pointwise.equals(b.pointwise)
    others = [sample_examples(["q1"], CANDIDATES, QRELS, 1, seed=s).pointwise for s in range(6, 12)]
    assert any(not a.pointwise.equals(other) for other in others)


def test_scoring_dev_swaps_each_folds_dev_queries_in_for_its_test_queries():
    from reranklab.splits import hold_out_dev, score_dev

    folds = score_dev(predefined({"train": ["a", "b"], "dev": ["c"], "test": ["d"]}, "x"))
    [fold] = folds.folds
    # The test query leaves the run: nothing trains or scores on it.
    assert (fold.train, fold.dev, fold.test) == (["a", "b"], [], ["c"])
    assert folds.meta["scored"] == "dev"
    held = score_dev(hold_out_dev(kfold([f"q{i}" for i in range(10)], 2, 1), 0.25, 1))
    assert all(len(f.test) == 2 and not f.dev for f in held.folds)
    with pytest.raises(ConfigError, match="protocol.x.scored: dev, but fold0 has no dev"):
        score_dev(predefined({"train": ["a"], "test": ["b"]}, "x"))


def test_positives_among_the_candidates_leave_out_an_answer_the_first_stage_missed():
    candidates = {"q1": {"a": 3.0, "n": 2.0}, "q2": {"m": 3.0, "o": 2.0}}
    qrels = {"q1": {"a": 1, "z": 1}, "q2": {"b": 1}}
    judged = sample_examples(["q1", "q2"], candidates, qrels, "all")
    retrieved = sample_examples(["q1", "q2"], candidates, qrels, "all", positives_from="candidates")
    assert sorted(judged.triplets["pos_pid"]) == ["a", "b", "b", "z"]
    # q1 keeps only the answer BM25 found; q2, whose answer BM25 missed, is dropped.
    assert list(retrieved.triplets.itertuples(index=False, name=None)) == [("q1", "a", "n")]
    assert retrieved.stats["dropped_no_positive"] == 1
    assert retrieved.stats["positives_from"] == "candidates"


def test_a_planted_answer_is_not_a_positive_among_the_candidates():
    # Mass et al. plant an answer BM25 missed only to evaluate (papers/mass2019.txt:104): with
    # positives from the candidates, a training query whose answer was planted has none.
    bm25 = {"q1": {"a": 3.0, "n": 2.0}, "q2": {"m": 3.0, "o": 2.0}}
    qrels = {"q1": {"a": 1}, "q2": {"b": 1}}
    protocol = {"first_stage": "bm25", "depth": 2, "inject_relevant": True}
    record = first_stage_record(bm25, qrels, ["q1", "q2"], protocol)
    candidates, injected = inject_relevant(bm25, qrels, depth=2)
    assert injected == 1 and "b" in candidates["q2"] and record["planted"] == ["q2"]
    kept = sample_examples(
        ["q1", "q2"],
        candidates,
        qrels,
        "all",
        positives_from="candidates",
        planted=record["planted"],
    )
    assert list(kept.triplets.itertuples(index=False, name=None)) == [("q1", "a", "n")]
    assert kept.stats["dropped_no_positive"] == 1
    # Judged positives are every judged answer, planted or not: unchanged.
    judged = sample_examples(["q1", "q2"], candidates, qrels, "all", planted=record["planted"])
    assert sorted(judged.triplets["pos_pid"]) == ["a", "b"]
