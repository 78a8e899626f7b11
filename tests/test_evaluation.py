"""evaluate_run: hand-computed measures, tie breaking, excluded and missing queries, threshold."""

from __future__ import annotations

import math

import pytest
import pytrec_eval

from reranklab.evaluation import ALL, NAMES, evaluate_run, resolve_measures

# q1: grades a=1, b=0, c=2 (x unjudged). Ranking: b, a, x, c.
# q2: d=1, ranked 11th behind ten unjudged passages.
# q3: only a grade-0 passage -> no relevant passage -> excluded.
QRELS = {
    "q1": {"a": 1, "b": 0, "c": 2},
    "q2": {"d": 1},
    "q3": {"e": 0},
    "q4": {"f": 1},
}
RUN = {
    "q1": {"b": 0.9, "a": 0.8, "x": 0.7, "c": 0.6},
    "q2": {**{f"n{i:02d}": 2.0 - i / 100 for i in range(10)}, "d": 0.5},
    "q3": {"e": 1.0},
}
LOG2 = math.log2

# q1, threshold 1 (relevant: a at rank 2, c at rank 4):
#   P@1 = 0 (b is not relevant); MRR = MRR@10 = 1/2
#   MAP = (1/2 + 2/4) / 2 = 0.5
#   nDCG@10 (linear gains = grades): DCG = 1/log2(3) + 2/log2(5);
#   ideal = 2/log2(2) + 1/log2(3)
Q1_NDCG = (1 / LOG2(3) + 2 / LOG2(5)) / (2 / LOG2(2) + 1 / LOG2(3))
# q2: d at rank 11: P@1 = 0, MRR = 1/11, MRR@10 = 0 (not in the top 10), MAP = 1/11, nDCG@10 = 0.
EXPECTED = {
    "q1": {"P@1": 0.0, "MAP": 0.5, "MRR": 0.5, "MRR@10": 0.5, "nDCG@10": Q1_NDCG},
    "q2": {"P@1": 0.0, "MAP": 1 / 11, "MRR": 1 / 11, "MRR@10": 0.0, "nDCG@10": 0.0},
}


def test_hand_computed_measures_per_query_and_mean():
    result = evaluate_run(RUN, QRELS)
    assert abs(Q1_NDCG - 0.5672074) < 1e-7  # 1.4922829 / 2.6309298
    assert set(result["per_query"]) == {"q1", "q2"}
    for qid, expected in EXPECTED.items():
        assert result["per_query"][qid] == pytest.approx(expected, abs=1e-12)
    # Plain means over q1 and q2.
    assert result["aggregate"] == pytest.approx(
        {
            "P@1": 0.0,
            "MAP": (0.5 + 1 / 11) / 2,  # 0.29545...
            "MRR": (0.5 + 1 / 11) / 2,
            "MRR@10": 0.25,
            "nDCG@10": Q1_NDCG / 2,
        },
        abs=1e-12,
    )
    assert list(result["aggregate"]) == list(NAMES)
    assert result["n_queries"] == 2
    assert result["relevance_threshold"] == 1


def test_query_without_relevant_passage_is_excluded_and_counted():
    result = evaluate_run(RUN, QRELS)
    assert result["n_excluded"] == 1
    assert result["excluded"] == ["q3"]
    assert "q3" not in result["per_query"]
    # Unjudged queries in the run are excluded too.
    result = evaluate_run({**RUN, "q9": {"z": 1.0}}, QRELS)
    assert result["excluded"] == ["q3", "q9"]
    assert result["n_queries"] == 2


def test_relevant_query_missing_from_run_counts_zero():
    result = evaluate_run(RUN, QRELS, qids=["q1", "q2", "q3", "q4"])
    assert result["n_queries"] == 3
    assert result["per_query"]["q4"] == dict.fromkeys(NAMES, 0.0)
    assert result["aggregate"]["MRR"] == pytest.approx((0.5 + 1 / 11 + 0) / 3)
    assert result["aggregate"]["MRR@10"] == pytest.approx(0.5 / 3)
    # An empty candidate list is the same as a missing one.
    empty = evaluate_run({**RUN, "q4": {}}, QRELS)
    assert empty["per_query"]["q4"] == dict.fromkeys(NAMES, 0.0)


def test_qids_restrict_the_evaluation():
    result = evaluate_run(RUN, QRELS, qids=["q1"])
    assert list(result["per_query"]) == ["q1"]
    assert result["aggregate"]["MAP"] == pytest.approx(0.5)
    assert result["n_excluded"] == 0


def test_threshold_two_changes_map_and_exclusions():
    result = evaluate_run(RUN, QRELS, relevance_threshold=2)
    # Only c (grade 2) is relevant in q1, at rank 4: MAP = P@4 / 1 = 1/4, MRR = 1/4.
    # q2 has no grade >= 2 and is excluded with q3.
    assert result["excluded"] == ["q2", "q3"]
    assert result["n_queries"] == 1
    assert result["aggregate"]["MAP"] == pytest.approx(0.25)
    assert result["aggregate"]["MRR"] == pytest.approx(0.25)
    assert result["aggregate"]["P@1"] == 0.0
    # nDCG keeps graded gains whatever the threshold (trec_eval's convention).
    assert result["aggregate"]["nDCG@10"] == pytest.approx(Q1_NDCG)


def test_ties_are_broken_by_pid_whatever_the_input_order():
    qrels = {"q": {"a": 1}}
    forward = {"q": {"a": 1.0, "b": 1.0, "c": 0.5}}
    backward = {"q": {"c": 0.5, "b": 1.0, "a": 1.0}}
    # rank_order puts "a" before "b" (equal scores, pid ascending): P@1 = 1, MRR = 1.
    for run in (forward, backward):
        assert evaluate_run(run, qrels)["aggregate"]["P@1"] == 1.0
        assert evaluate_run(run, qrels)["aggregate"]["MRR"] == 1.0
    # trec_eval on its own breaks the tie the other way (pid descending): the rule matters.
    raw = pytrec_eval.RelevanceEvaluator(qrels, {"P_1"}).evaluate(forward)
    assert raw["q"]["P_1"] == 0.0


def test_ties_and_cutoff_combined():
    # Eleven passages with one score: pid order puts r (relevant) 11th, outside MRR@10.
    qrels = {"q": {"r": 1}}
    run = {"q": {**{f"a{i:02d}": 1.0 for i in range(10)}, "r": 1.0}}
    result = evaluate_run(run, qrels)
    assert result["aggregate"]["MRR"] == pytest.approx(1 / 11)
    assert result["aggregate"]["MRR@10"] == 0.0


def test_measure_selection_and_errors():
    result = evaluate_run(RUN, QRELS, measures=["MRR@10", "P@1"])
    assert result["measures"] == ["MRR@10", "P@1"]
    assert set(result["aggregate"]) == {"MRR@10", "P@1"}
    assert resolve_measures(ALL) == ALL
    with pytest.raises(ValueError, match="unknown measure 'MAP@5'"):
        evaluate_run(RUN, QRELS, measures=["MAP@5"])
    with pytest.raises(ValueError, match="NaN score"):
        evaluate_run({"q1": {"a": float("nan")}}, QRELS)


def test_no_evaluable_query_gives_none():
    result = evaluate_run({"q3": {"e": 1.0}}, QRELS)
    assert result["n_queries"] == 0
    assert result["aggregate"] == dict.fromkeys(NAMES)
