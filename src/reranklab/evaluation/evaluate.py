"""Evaluate one run against qrels with pytrec_eval, the way the re-ranking papers report it.

Three rules differ from calling ``trec_eval`` on the files:

- queries without any passage graded at or above the relevance threshold are *excluded*
  (and counted): no ranking can score on them, and the papers leave them out;
- a query that has relevant passages but no candidates in the run scores 0 on every measure
  (``trec_eval`` would silently drop it and inflate the mean);
- score ties are broken by passage id (:func:`reranklab.io.rank_order`), the order the run
  files are written in; pytrec_eval is handed strictly decreasing scores so its own tie
  breaking (by reverse document id) never applies.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from itertools import groupby
from typing import Any

import pytrec_eval

from reranklab.evaluation.measures import ALL, Measure, resolve_measures
from reranklab.io import Qrels, Run, rank_order


def relevant_qids(qrels: Qrels, relevance_threshold: int = 1) -> set[str]:
    """Queries with at least one passage graded ``>= relevance_threshold``."""
    return {qid for qid, judged in qrels.items() if any(int(g) >= relevance_threshold for g in judged.values())}


def _ranked_pids(scores: dict[str, float], qid: str) -> list[str]:
    for pid, score in scores.items():
        if math.isnan(score):
            raise ValueError(f"run: query {qid!r} passage {pid!r} has a NaN score")
    return [pid for pid, _ in rank_order(scores)]


def _strict_scores(pids: list[str]) -> dict[str, float]:
    # n - rank: distinct and decreasing, so pytrec_eval keeps exactly our order.
    n = len(pids)
    return {pid: float(n - rank) for rank, pid in enumerate(pids)}


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def evaluate_run(
    run: Run,
    qrels: Qrels,
    qids: Iterable[str] | None = None,
    relevance_threshold: int = 1,
    measures: Iterable[Measure | str] = ALL,
) -> dict[str, Any]:
    """Evaluate ``run`` on ``qids`` (default: the run's queries) and average over queries.

    Args:
        run: ``{qid: {pid: score}}``; higher is better, ties broken by pid.
        qrels: ``{qid: {pid: grade}}`` with integer grades.
        qids: the queries to evaluate, e.g. a fold's test queries. Queries missing from the
            run but relevant in ``qrels`` count with 0.
        relevance_threshold: smallest grade that counts as relevant (trec_eval ``-l``).
        measures: display names or :class:`Measure` objects (default: all of them).

    Returns:
        ``{"aggregate": {name: mean or None}, "per_query": {qid: {name: value}},
        "n_queries": int, "n_excluded": int, "excluded": [qid, ...],
        "relevance_threshold": int, "measures": [name, ...]}``; ``aggregate`` holds the plain
        mean over the evaluated (non-excluded) queries, ``None`` when there are none.

    Example:
        >>> run = {"q1": {"a": 0.9, "b": 0.5}}
        >>> qrels = {"q1": {"b": 1}}
        >>> evaluate_run(run, qrels, measures=["P@1", "MRR"])["aggregate"]
        {'P@1': 0.0, 'MRR': 0.5}
    """
    chosen = resolve_measures(measures)
    wanted = set(run) if qids is None else {str(q) for q in qids}
    evaluated = sorted(wanted & relevant_qids(qrels, relevance_threshold))
    excluded = sorted(wanted - set(evaluated))

    per_query: dict[str, dict[str, float]] = {qid: dict.fromkeys((m.name for m in chosen), 0.0) for qid in evaluated}
    judged = {qid: {pid: int(g) for pid, g in qrels[qid].items()} for qid in evaluated}
    ranked = {qid: _ranked_pids(run.get(qid, {}), qid) for qid in evaluated}

    # One pytrec_eval pass per cut-off depth; sorting groups equal cut-offs together.
    by_cutoff = sorted(chosen, key=lambda m: (m.cutoff is not None, m.cutoff or 0))
    for cutoff, group in groupby(by_cutoff, key=lambda m: m.cutoff):
        group = list(group)
        cut_run = {qid: _strict_scores(pids[:cutoff]) for qid, pids in ranked.items() if pids}
        if not cut_run:
            continue
        evaluator = pytrec_eval.RelevanceEvaluator(
            judged, {m.trec_name for m in group}, relevance_level=int(relevance_threshold)
        )
        for qid, values in evaluator.evaluate(cut_run).items():
            for measure in group:
                per_query[qid][measure.name] = float(values[measure.trec_name])

    aggregate = {m.name: _mean([per_query[qid][m.name] for qid in evaluated]) for m in chosen}
    return {
        "aggregate": aggregate,
        "per_query": per_query,
        "n_queries": len(evaluated),
        "n_excluded": len(excluded),
        "excluded": excluded,
        "relevance_threshold": int(relevance_threshold),
        "measures": [m.name for m in chosen],
    }
