"""Evaluate one run against qrels under a dataset's scoring protocol.

What differs from calling ``trec_eval`` on the files, and why:

- which queries count is the scoring protocol's rule (:class:`~reranklab.evaluation.protocol.Scoring`),
  with the dropped queries counted by reason;
- a counted query that has relevant passages but no candidates scores 0 (``missing: zero``;
  ``trec_eval`` would silently drop it and inflate the mean) unless the protocol says ``skip``;
- score ties are broken by a seeded hash of (qid, pid) (:func:`reranklab.io.rank_order`), never
  by passage id or file order, and the result says how many ties it met; pytrec_eval is handed
  strictly decreasing scores so its own tie breaking (by document id) never applies;
- measures that the official scorer defines otherwise than trec_eval (SemEval's AP over the top
  10) are computed by that definition (:data:`~reranklab.evaluation.measures.OFFICIAL`);
- each counted query's expected value under a random ordering of its candidates is kept
  (``random``, :mod:`~reranklab.evaluation.random_order`): the floor a trained re-ranker must
  clear to show it learned anything.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from itertools import groupby
from typing import Any

import pytrec_eval

from reranklab.evaluation.measures import ALL, OFFICIAL, Measure
from reranklab.evaluation.protocol import Scoring, default_scoring
from reranklab.evaluation.random_order import expected_scores
from reranklab.io import Qrels, Run, count_ties, rank_order
from reranklab.io.trec import TIE_SEED


def relevant_qids(qrels: Qrels, relevance_threshold: int = 1) -> set[str]:
    """Queries with at least one passage graded ``>= relevance_threshold``."""
    return {
        qid
        for qid, judged in qrels.items()
        if any(int(g) >= relevance_threshold for g in judged.values())
    }


def _ranked_pids(scores: dict[str, float], qid: str, seed: int) -> list[str]:
    for pid, score in scores.items():
        if math.isnan(score):
            raise ValueError(f"run: query {qid!r} passage {pid!r} has a NaN score")
    return [pid for pid, _ in rank_order(scores, qid, seed)]


def _strict_scores(pids: list[str]) -> dict[str, float]:
    # n - rank: distinct and decreasing, so pytrec_eval keeps exactly our order.
    n = len(pids)
    return {pid: float(n - rank) for rank, pid in enumerate(pids)}


def _mean(values: list[float]) -> float | None:
    return math.fsum(values) / len(values) if values else None


def _trec_values(
    group: list[Measure],
    scoring: Scoring,
    judged: Qrels,
    ranked: dict[str, list[str]],
    per_query: dict[str, dict[str, float]],
) -> None:
    cutoff = group[0].cutoff
    cut_run = {qid: _strict_scores(pids[:cutoff]) for qid, pids in ranked.items() if pids}
    if not cut_run:
        return
    evaluator = pytrec_eval.RelevanceEvaluator(
        judged, {m.trec_name for m in group}, relevance_level=scoring.level(group[0])
    )
    for qid, values in evaluator.evaluate(cut_run).items():
        for measure in group:
            per_query[qid][measure.name] = float(values[measure.trec_name])


def _official_values(
    measure: Measure,
    scoring: Scoring,
    judged: Qrels,
    ranked: dict[str, list[str]],
    per_query: dict[str, dict[str, float]],
) -> None:
    try:
        function = OFFICIAL[measure.trec_name]
    except KeyError:
        raise ValueError(
            f"measure {measure.name}: no official definition {measure.trec_name!r} (known: {', '.join(OFFICIAL)})"
        ) from None
    level = scoring.level(measure)
    for qid, pids in ranked.items():
        flags = [judged[qid].get(pid, 0) >= level for pid in pids[: measure.cutoff]]
        per_query[qid][measure.name] = function(flags)


def evaluate_run(
    run: Run,
    qrels: Qrels,
    qids: Iterable[str] | None = None,
    relevance_threshold: int = 1,
    measures: Iterable[Measure | str] = ALL,
    *,
    scoring: Scoring | None = None,
    tie_seed: int = TIE_SEED,
) -> dict[str, Any]:
    """Evaluate ``run`` on ``qids`` (default: the run's queries) and average over queries.

    Args:
        run: ``{qid: {pid: score}}``; higher is better, ties broken by a seeded hash.
        qrels: ``{qid: {pid: grade}}`` with integer grades.
        qids: the queries to evaluate, e.g. a fold's or a split's test queries. Queries
            missing from the run count as the scoring's ``missing`` rule says.
        relevance_threshold: without ``scoring``: smallest grade that counts as relevant.
        measures: without ``scoring``: display names or :class:`Measure` objects.
        scoring: the dataset's scoring protocol; default: queries with a relevant passage,
            ``measures`` at ``relevance_threshold`` (:func:`default_scoring`).
        tie_seed: seed of the tie-breaking hash.

    Returns:
        ``{"aggregate": {name: mean or None}, "per_query": {qid: {name: value}},
        "n_queries": int, "n_excluded": int, "excluded": [qid, ...], "dropped": {reason: n},
        "ties": {"queries": n, "passages": n}, "relevance_threshold": int,
        "measures": [name, ...], "scoring": {...}, "tie_seed": int,
        "random": {qid: {name: expected value of a random ordering of its candidates}}}``;
        ``aggregate`` holds the mean over the counted queries (``None`` when there are none).

    Example:
        >>> run = {"q1": {"a": 0.9, "b": 0.5}}
        >>> qrels = {"q1": {"b": 1}}
        >>> evaluate_run(run, qrels, measures=["P@1", "MRR"])["aggregate"]
        {'P@1': 0.0, 'MRR': 0.5}
    """
    scoring = scoring or default_scoring(relevance_threshold, measures)
    wanted = set(run) if qids is None else {str(q) for q in qids}
    evaluated, dropped = scoring.counted(qrels, wanted, run)
    excluded = sorted(q for qs in dropped.values() for q in qs)

    names = [m.name for m in scoring.measures]
    per_query: dict[str, dict[str, float]] = {qid: dict.fromkeys(names, 0.0) for qid in evaluated}
    judged = {qid: {pid: int(g) for pid, g in qrels[qid].items()} for qid in evaluated}
    ranked = {qid: _ranked_pids(run.get(qid, {}), qid, tie_seed) for qid in evaluated}
    tied = {qid: count_ties(run[qid]) for qid in evaluated if run.get(qid)}

    trec = [m for m in scoring.measures if not m.official]
    # One pytrec_eval pass per (cut-off, relevance level); sorting groups equal ones together.
    key = lambda m: (m.cutoff is not None, m.cutoff or 0, scoring.level(m))  # noqa: E731
    for _, group in groupby(sorted(trec, key=key), key=key):
        _trec_values(list(group), scoring, judged, ranked, per_query)
    for measure in scoring.measures:
        if measure.official:
            _official_values(measure, scoring, judged, ranked, per_query)

    aggregate = {name: _mean([per_query[qid][name] for qid in evaluated]) for name in names}
    random_order = {
        qid: expected_scores([judged[qid].get(pid, 0) for pid in ranked[qid]], judged[qid], scoring)
        for qid in evaluated
    }
    return {
        "aggregate": aggregate,
        "per_query": per_query,
        "n_queries": len(evaluated),
        "n_excluded": len(excluded),
        "excluded": excluded,
        "dropped": {reason: len(qs) for reason, qs in sorted(dropped.items())},
        "ties": {"queries": sum(1 for n in tied.values() if n), "passages": sum(tied.values())},
        "relevance_threshold": int(scoring.relevance),
        "measures": names,
        "scoring": scoring.as_dict(),
        "tie_seed": int(tie_seed),
        "random": random_order,
    }
