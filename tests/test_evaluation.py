"""evaluate_run: hand-computed measures, tie breaking, excluded and missing queries, threshold."""

from __future__ import annotations

import math
import statistics
from fractions import Fraction
from itertools import permutations
from math import comb

import pytest

from reranklab.evaluation import ALL, NAMES, evaluate_run, resolve_measures
from reranklab.io import tie_key

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


def test_ties_follow_the_seeded_hash_whatever_the_input_order_and_are_counted():
    qrels = {"q": {"a": 1}}
    forward = {"q": {"a": 1.0, "b": 1.0, "c": 0.5}}
    backward = {"q": {"c": 0.5, "b": 1.0, "a": 1.0}}
    a_first = tie_key("q", "a") < tie_key("q", "b")
    for run in (forward, backward):
        result = evaluate_run(run, qrels)
        assert result["aggregate"]["P@1"] == (1.0 if a_first else 0.0)
        assert result["ties"] == {"queries": 1, "passages": 2}
    # Another seed, another (still deterministic) order: some seed puts b first, another a.
    firsts = {evaluate_run(forward, qrels, tie_seed=seed)["aggregate"]["P@1"] for seed in range(20)}
    assert firsts == {0.0, 1.0}
    # Distinct scores: no ties reported, and the seed changes nothing.
    assert evaluate_run({"q": {"a": 2.0, "b": 1.0}}, qrels)["ties"] == {"queries": 0, "passages": 0}


def test_ties_are_not_broken_by_passage_id():
    # Ids in "page order" with the relevant passages first: a pid tie-break would rank them
    # first for every query (P@1 = 1); the hash puts them first about as often as chance.
    qrels = {f"q{i}": {"p0": 1, "p1": 0, "p2": 0, "p3": 0} for i in range(400)}
    run = {qid: dict.fromkeys(judged, 0.0) for qid, judged in qrels.items()}
    p_at_1 = evaluate_run(run, qrels)["aggregate"]["P@1"]
    assert abs(p_at_1 - 0.25) < 4 * (0.25 * 0.75 / 400) ** 0.5  # 4 standard errors of a fair draw


def _expected_random_order(n: int, relevant: int) -> dict[str, Fraction]:
    """Exact expectations over all orders of n candidates with `relevant` relevant ones.

    AP: E = (1/n) [H_n + (R-1)/(n-1) (n - H_n)] (each position k holds a relevant passage with
    probability R/n, and then the expected precision at k is (1 + (R-1)(k-1)/(n-1)) / k);
    RR: sum over k of P(first relevant at k) / k, with P = C(n-k, R-1) / C(n, R); P@1 = R/n.
    """
    harmonic = sum(Fraction(1, k) for k in range(1, n + 1))
    ap = (harmonic + Fraction(relevant - 1, n - 1) * (n - harmonic)) / n if n > 1 else Fraction(1)
    rr = sum(
        Fraction(comb(n - k, relevant - 1), comb(n, relevant)) / k
        for k in range(1, n - relevant + 2)
    )
    return {"MAP": ap, "MRR": rr, "P@1": Fraction(relevant, n)}


def test_constant_scores_score_the_expected_value_of_a_random_order():
    # 3,000 queries of 12 candidates with 1, 2 or 3 relevant ones, every score equal: the hash
    # gives each query an order that behaves like a random one, so the means approach the
    # exact expectation (computed, not sampled) within a few standard errors.
    sizes = {1: 1000, 2: 1000, 3: 1000}
    qrels, run = {}, {}
    for relevant, count in sizes.items():
        for i in range(count):
            qid = f"r{relevant}-{i}"
            qrels[qid] = {f"p{j:02d}": int(j < relevant) for j in range(12)}
            run[qid] = dict.fromkeys(qrels[qid], 0.5)
    result = evaluate_run(run, qrels)
    assert result["ties"] == {"queries": 3000, "passages": 36000}
    for name in ("MAP", "MRR", "P@1"):
        expected = sum(float(_expected_random_order(12, r)[name]) for r in sizes) / len(sizes)
        values = [result["per_query"][q][name] for q in qrels]
        stderr = statistics.pstdev(values) / len(values) ** 0.5
        assert abs(result["aggregate"][name] - expected) < 4 * stderr, (
            name,
            result["aggregate"][name],
            expected,
        )


def test_expected_random_order_formula_against_every_order():
    # The closed forms equal the mean over all n! orders (exact fractions), for small n and R.
    for n, relevant in ((2, 1), (3, 1), (3, 2), (4, 2), (5, 3)):
        orders = list(permutations([True] * relevant + [False] * (n - relevant)))
        ap = sum(_exact_ap(order) for order in orders) / len(orders)
        rr = sum(Fraction(1, order.index(True) + 1) for order in orders) / len(orders)
        assert _expected_random_order(n, relevant) == {
            "MAP": ap,
            "MRR": rr,
            "P@1": Fraction(relevant, n),
        }
    assert _expected_random_order(3, 2)["MAP"] == Fraction(29, 36)  # RRN 1, RNR 5/6, NRR 7/12


def _exact_ap(order: tuple[bool, ...]) -> Fraction:
    hits, total = 0, Fraction(0)
    for rank, relevant in enumerate(order, start=1):
        if relevant:
            hits += 1
            total += Fraction(hits, rank)
    return total / hits


def test_ties_and_cutoff_combined():
    # Eleven passages with one score: wherever the hash puts r (relevant), MRR@10 is 0 exactly
    # when it lands 11th, and MRR is 1 / its rank.
    qrels = {"q": {"r": 1}}
    run = {"q": {**{f"a{i:02d}": 1.0 for i in range(10)}, "r": 1.0}}
    rank = 1 + sum(tie_key("q", f"a{i:02d}") < tie_key("q", "r") for i in range(10))
    result = evaluate_run(run, qrels)
    assert result["aggregate"]["MRR"] == pytest.approx(1 / rank)
    assert result["aggregate"]["MRR@10"] == (0.0 if rank == 11 else pytest.approx(1 / rank))


def test_measure_selection_and_errors():
    result = evaluate_run(RUN, QRELS, measures=["MRR@10", "P@1"])
    assert result["measures"] == ["MRR@10", "P@1"]
    assert set(result["aggregate"]) == {"MRR@10", "P@1"}
    assert resolve_measures(ALL) == ALL
    with pytest.raises(ValueError, match=r"unknown measure\(s\) 'MAP@5'"):
        evaluate_run(RUN, QRELS, measures=["MAP@5"])
    with pytest.raises(ValueError, match="NaN score"):
        evaluate_run({"q1": {"a": float("nan")}}, QRELS)


def test_no_evaluable_query_gives_none():
    result = evaluate_run({"q3": {"e": 1.0}}, QRELS)
    assert result["n_queries"] == 0
    assert result["aggregate"] == dict.fromkeys(NAMES)
