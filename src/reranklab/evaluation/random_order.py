"""What a random ordering of a query's candidates scores, in expectation (exactly, no sampling).

A re-ranker that learned nothing orders its candidates at random. The floor a fine-tuned cell
must clear is therefore not zero but the expected score of a uniformly random permutation of
the same candidates, which depends on each query's candidate count ``N``, the relevant ones
among them ``R`` and (for AP and recall) the query's relevant passages in the qrels ``R_q``.
Every expectation follows from linearity over positions: position ``i`` holds a relevant
passage with probability ``R/N``, and positions ``i ≠ j`` both do with ``R(R−1)/(N(N−1))``:

- ``P@k`` (``P_k``): ``min(k, N)·R / (N·k)`` (trec_eval divides by ``k`` however short the run);
- AP (``map``, over the run cut at ``n = min(cutoff, N)``):
  ``(1/R_q) Σ_{i≤n} (1/i)·[R/N + (i−1)·R(R−1)/(N(N−1))]``;
- reciprocal rank (``recip_rank``, cut at ``n``): ``Σ_{i≤n} (1/i)·P(first relevant at i)``,
  ``P(first at i) = R/(N−i+1) · Π_{j<i} (N−j+1−R)/(N−j+1)`` (the hypergeometric first hit);
- nDCG@k (``ndcg_cut_k``, ``ndcg``): every position's expected gain is the candidates' mean
  gain ``G/N``, so ``E[DCG@k] = (G/N) Σ_{i≤min(k,N)} 1/log2(i+1)``, over the ideal DCG of the
  query's judged grades (negative grades gain nothing, as in trec_eval);
- recall (``recall_k``): ``min(k, N)·R / (N·R_q)``;
- SemEval's AP (``semeval_ap``, divided by the relevant passages *found* in the top ``k``): the
  expectation given ``m`` relevant in the top ``k``, averaged over the hypergeometric ``m``.

The binary measures count a candidate as relevant at the measure's relevance level, as
:func:`~reranklab.evaluation.evaluate.evaluate_run` does. The tests check every formula against
the mean over all permutations scored by :func:`evaluate_run` itself (pytrec_eval).

Example:
    >>> from reranklab.evaluation.protocol import default_scoring
    >>> scoring = default_scoring(1, ["P@1", "MRR"])
    >>> values = expected_scores([1, 0, 0, 0], {"a": 1}, scoring)
    >>> values["P@1"], round(values["MRR"], 4)
    (0.25, 0.5208)
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
from scipy import stats

from reranklab.evaluation.measures import Measure
from reranklab.evaluation.protocol import Scoring


def _precision(k: int, depth: int, n: int, r: int) -> float:
    # Expected relevant passages in the top min(k, depth), over k (trec_eval's divisor).
    return min(k, depth) * r / (n * k) if n else 0.0


def _harmonic(depth: int) -> float:
    return float(np.sum(1.0 / np.arange(1, depth + 1))) if depth > 0 else 0.0


def _precision_sum(depth: int, share: float, pair: float) -> float:
    """``Σ_{i≤depth} (share + (i−1)·pair) / i`` in closed form: ``share·H + pair·(depth − H)``."""
    harmonic = _harmonic(depth)
    return share * harmonic + pair * (depth - harmonic)


def _average_precision(depth: int, n: int, r: int, r_query: int) -> float:
    if not n or not r or not r_query:
        return 0.0
    pair = r * (r - 1) / (n * (n - 1)) if n > 1 else 0.0
    return _precision_sum(depth, r / n, pair) / r_query


def _reciprocal_rank(depth: int, n: int, r: int) -> float:
    if not n or not r or not depth:
        return 0.0
    ranks = np.arange(1, depth + 1)
    left = n - ranks + 1  # passages not yet placed when position i is filled
    # P(no relevant passage in the first i−1 positions), then P(first relevant at i).
    none_yet = np.concatenate(([1.0], np.cumprod(np.clip(left - r, 0, None) / left)[:-1]))
    return float(np.sum(none_yet * r / left / ranks))


def _discount(i: int) -> float:
    return 1.0 / math.log2(i + 1)


def _ndcg(depth: int, ideal_depth: int, gains: np.ndarray, judged: Sequence[float]) -> float:
    """E[DCG of the top ``depth``] over the ideal DCG of the judged grades' top ``ideal_depth``."""
    ideal = sorted((g for g in judged if g > 0), reverse=True)[:ideal_depth]
    ideal_dcg = math.fsum(g * _discount(i) for i, g in enumerate(ideal, start=1))
    if not len(gains) or ideal_dcg <= 0:
        return 0.0
    mean_gain = float(np.mean(gains))
    return mean_gain * math.fsum(_discount(i) for i in range(1, depth + 1)) / ideal_dcg


def _semeval_ap(depth: int, n: int, r: int) -> float:
    """E[mean precision at the relevant ranks found in the top ``depth``] (0 when none found)."""
    if not n or not r or not depth:
        return 0.0
    found = stats.hypergeom(n, r, depth)  # relevant passages among the top ``depth``
    expected = 0.0
    for m in range(1, min(r, depth) + 1):
        pair = m * (m - 1) / (depth * (depth - 1)) if depth > 1 else 0.0
        expected += float(found.pmf(m)) * _precision_sum(depth, m / depth, pair) / m
    return expected


def _cut(name: str, prefix: str) -> int | None:
    """``P_1`` -> 1, ``ndcg_cut_10`` -> 10 for a trec_eval name with that prefix."""
    if name.startswith(prefix) and name[len(prefix) :].isdigit():
        return int(name[len(prefix) :])
    return None


def expected_score(
    measure: Measure,
    candidates: Sequence[int] | np.ndarray,
    judged: Mapping[str, int],
    level: int,
) -> float | None:
    """A random ordering's expected value of ``measure`` on one query.

    Args:
        measure: the measure (its trec_eval or official name and cut-off).
        candidates: the grade of each candidate of the query's run (0 when unjudged).
        judged: the query's qrels ``{pid: grade}``.
        level: the smallest grade the (binary) measure counts as relevant.

    Returns:
        The expectation, or ``None`` for a measure without a closed form here.
    """
    grades_run = np.asarray(candidates, dtype=float)
    n = len(grades_run)
    depth = min(measure.cutoff or n, n)
    r = int(np.count_nonzero(grades_run >= level))
    r_query = sum(1 for g in judged.values() if int(g) >= level)
    name = measure.trec_name
    if measure.official:
        return _semeval_ap(depth, n, r) if name == "semeval_ap" else None
    if name == "map":
        return _average_precision(depth, n, r, r_query)
    if name == "recip_rank":
        return _reciprocal_rank(depth, n, r)
    if (k := _cut(name, "P_")) is not None:
        return _precision(k, depth, n, r)
    gains = np.clip(grades_run, 0.0, None)
    grades = [float(g) for g in judged.values()]
    if name == "ndcg":
        return _ndcg(depth, len(grades), gains, grades)
    if (k := _cut(name, "ndcg_cut_")) is not None:
        return _ndcg(min(k, depth), k, gains, grades)  # trec_eval cuts the ideal at k too
    if (k := _cut(name, "recall_")) is not None:
        return min(k, depth) * r / (n * r_query) if n and r_query else 0.0
    return None


def expected_scores(
    candidates: Sequence[int] | np.ndarray, judged: Mapping[str, int], scoring: Scoring
) -> dict[str, float]:
    """A random ordering's expected value of each of ``scoring``'s measures on one query.

    Measures without a closed form are left out (never guessed).
    """
    out: dict[str, float] = {}
    grades = np.asarray(candidates, dtype=float)  # once for every measure
    for measure in scoring.measures:
        value = expected_score(measure, grades, judged, scoring.level(measure))
        if value is not None:
            out[measure.name] = value
    return out
