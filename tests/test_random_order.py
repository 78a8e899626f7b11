"""The random-ordering expectations against every permutation scored by evaluate_run."""

from __future__ import annotations

from itertools import permutations
from statistics import fmean

import numpy as np
import pytest

from reranklab.evaluation.evaluate import evaluate_run
from reranklab.evaluation.measures import Measure
from reranklab.evaluation.protocol import Scoring, default_scoring
from reranklab.evaluation.random_order import expected_score, expected_scores

MEASURES = [
    Measure("P@1", "P_1"),
    Measure("P@3", "P_3"),
    Measure("MAP", "map"),
    Measure("MAP@3", "map", cutoff=3),
    Measure("MRR", "recip_rank"),
    Measure("MRR@2", "recip_rank", cutoff=2),
    Measure("nDCG@3", "ndcg_cut_3"),
    Measure("nDCG", "ndcg"),
    Measure("R@2", "recall_2"),
    Measure("AP@3 (SemEval)", "semeval_ap", cutoff=3, official=True),
]

CASES = [
    # candidate grades (their pids c0, c1, ...), extra judged passages missing from the run
    ([1, 0, 0, 0, 0], {}),
    ([1, 1, 0, 0, 0], {"x": 1}),
    ([2, 1, 0, 0], {"x": 2}),
    ([0, 0, 0], {"x": 1}),
    ([1, 1, 1], {}),
    ([2, 0, 1, 0, 1, 0], {}),
    ([1], {}),
]


def _brute_force(grades: list[int], extra: dict[str, int], scoring: Scoring) -> dict[str, float]:
    """The mean of evaluate_run's values over every ordering of the candidates."""
    pids = [f"c{i}" for i in range(len(grades))]
    qrels = {"q": {**{p: g for p, g in zip(pids, grades, strict=True) if g}, **extra}}
    if not qrels["q"]:
        qrels["q"] = {"c0": 0}  # judged, none relevant
    # One query per ordering, all scored in one evaluate_run call.
    orders = list(permutations(pids))
    run = {
        f"q{k}": {pid: float(len(order) - rank) for rank, pid in enumerate(order)}
        for k, order in enumerate(orders)
    }
    result = evaluate_run(run, {q: qrels["q"] for q in run}, qids=list(run), scoring=scoring)
    return {
        m.name: fmean(values[m.name] for values in result["per_query"].values())
        for m in scoring.measures
    }


@pytest.mark.parametrize("level", [1, 2])
@pytest.mark.parametrize(("grades", "extra"), CASES)
def test_matches_every_permutation(grades, extra, level):
    scoring = Scoring(name="t", measures=tuple(MEASURES), relevance=level, queries="judged")
    pids = [f"c{i}" for i in range(len(grades))]
    judged = {**{p: g for p, g in zip(pids, grades, strict=True) if g}, **extra} or {"c0": 0}
    expected = expected_scores(grades, judged, scoring)
    assert set(expected) == {m.name for m in MEASURES}
    assert expected == pytest.approx(_brute_force(grades, extra, scoring), abs=1e-12)


def test_large_query_against_monte_carlo():
    # 40 candidates, too many to enumerate: the closed forms against 4,000 shuffles.
    rng = np.random.default_rng(0)
    grades = [2, 1, 1, 0, 1] + [0] * 35
    scoring = default_scoring(1)
    pids = [f"c{i}" for i in range(len(grades))]
    qrels = {"q": {p: g for p, g in zip(pids, grades, strict=True) if g}}
    expected = expected_scores(grades, qrels["q"], scoring)
    run = {}
    for k in range(4000):
        order = rng.permutation(len(pids))
        run[f"q{k}"] = {pids[i]: float(len(pids) - rank) for rank, i in enumerate(order)}
    result = evaluate_run(run, {q: qrels["q"] for q in run}, scoring=scoring)
    for name, value in expected.items():
        assert result["aggregate"][name] == pytest.approx(value, abs=0.02), name


def test_no_candidates_scores_zero_and_unknown_measure_is_left_out():
    assert expected_score(Measure("MAP", "map"), [], {"a": 1}, 1) == 0.0
    assert expected_score(Measure("bpref", "bpref"), [1, 0], {"a": 1}, 1) is None


def test_evaluate_run_keeps_the_random_expectation_per_query():
    run = {"q1": {"a": 0.9, "b": 0.5, "c": 0.1}, "q2": {"d": 1.0}}
    qrels = {"q1": {"b": 1}, "q2": {"d": 1}}
    result = evaluate_run(run, qrels, measures=["P@1", "MRR"])
    assert result["random"]["q1"]["P@1"] == pytest.approx(1 / 3)
    assert result["random"]["q1"]["MRR"] == pytest.approx((1 + 1 / 2 + 1 / 3) / 3)
    assert result["random"]["q2"] == {"P@1": 1.0, "MRR": 1.0}


def test_the_fold_and_seed_aggregates_keep_it(tmp_path):
    from reranklab.evaluation.aggregate import aggregate_folds
    from reranklab.evaluation.seeds import aggregate_seeds
    from reranklab.io import write_json, write_run

    qrels = {"q1": {"a": 1}, "q2": {"b": 1}}
    paths = []
    for seed, runs in ((1, [{"q1": {"a": 2.0, "x": 1.0}}, {"q2": {"b": 1.0, "y": 2.0}}]),
                       (2, [{"q1": {"a": 1.0, "x": 2.0}}, {"q2": {"b": 2.0, "y": 1.0}}])):  # fmt: skip
        folds = []
        for k, run in enumerate(runs):
            write_run(tmp_path / f"s{seed}f{k}.run", run)
            write_json(tmp_path / f"s{seed}f{k}.json", evaluate_run(run, qrels, measures=["MAP"]))
            folds.append(k)
        cell = aggregate_folds(
            [tmp_path / f"s{seed}f{k}.run" for k in folds],
            [tmp_path / f"s{seed}f{k}.json" for k in folds],
            qrels,
            1,
            tmp_path / f"cell{seed}.run",
            tmp_path / f"seed{seed}.json",
        )
        assert cell["random"] == {"q1": {"MAP": 0.75}, "q2": {"MAP": 0.75}}
        paths.append(tmp_path / f"seed{seed}.json")
    combined = aggregate_seeds(paths, [1, 2])
    assert combined["random"] == {"q1": {"MAP": 0.75}, "q2": {"MAP": 0.75}}
    assert combined["per_query"]["q1"]["MAP"] == 0.75  # a seed at 1.0, a seed at 0.5
