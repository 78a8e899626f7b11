"""Did a fine-tuned cell learn anything? Its scores against a random ordering, its training loss.

A comparison of two re-rankers says something about the papers' methods only when both
learned to rank: a cell that scores no better than a random ordering of its own candidates, or
whose training loss never fell, was not trained enough (too few steps, a broken setting) and
any difference it shows is noise about the papers. :func:`check_cell` says so, from

- each query's expected score under a random ordering of the cell's candidates (recorded by the
  evaluation, :mod:`reranklab.evaluation.random_order`): the cell must be significantly above
  it on the claim's measure (one-sided paired t-test at the claims' alpha, uncorrected: a
  sanity gate on the cell, not one of the study's findings);
- each fold (and seed) model's training loss near the start and at the end (the means of the
  first and the last tenth of its loss curve, :func:`reranklab.grading.evidence.live_training`):
  it must have fallen.

A first-stage row (BM25, the candidate pool) trains nothing and is never checked; nor is a
cell whose every model says ``fine_tuned: false``. What is not recorded (results recorded
before these checks existed) is said, never assumed either way.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from statistics import fmean
from typing import Any

import numpy as np

from reranklab.grading.significance import one_sided_t


@dataclass(frozen=True)
class CellCheck:
    """``problems``: why the cell did not learn (empty: it did, or could not be checked);
    ``notes``: what could not be checked."""

    problems: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    p_random: float | None = None
    mean_random: float | None = None
    details: dict[str, Any] = field(default_factory=dict)


def fine_tuned(row: Mapping[str, Any], trainings: Sequence[Mapping[str, Any]] | None) -> bool:
    """Whether the row is a trained re-ranker (not a first stage, not a frozen model)."""
    if row.get("first_stage"):
        return False
    return not trainings or any(t.get("fine_tuned", True) for t in trainings)


def _losses(trainings: Sequence[Mapping[str, Any]] | None) -> list[tuple[float, float]]:
    return [
        (float(t["loss_start"]), float(t["loss_end"]))
        for t in trainings or []
        if t.get("loss_start") is not None and t.get("loss_end") is not None
    ]


def loss_means(
    trainings: Sequence[Mapping[str, Any]] | None,
) -> tuple[tuple[float, float] | None, bool | None]:
    """The models' mean start and end loss, and whether every model's loss fell.

    Args:
        trainings: a cell's models, each with ``loss_start`` and ``loss_end`` (the means of the
            first and last tenth of its loss curve); a model without them is left out.

    Returns:
        ``((mean start, mean end), every loss fell)``; ``(None, None)`` when no model has both.

    Example:
        >>> loss_means([{"loss_start": 0.75, "loss_end": 0.5}, {"loss_start": 0.5, "loss_end": 0.5}])
        ((0.625, 0.5), False)
        >>> loss_means(None)
        (None, None)
    """
    pairs = _losses(trainings)
    if not pairs:
        return None, None
    means = (fmean(start for start, _ in pairs), fmean(end for _, end in pairs))
    return means, all(end < start for start, end in pairs)


def _against_random(
    key: str,
    measure: str,
    values: Mapping[str, Mapping[str, float]],
    random: Mapping[str, Mapping[str, float]],
    alpha: float,
) -> tuple[list[str], list[str], float | None, float | None]:
    queries = [q for q in values if values[q].get(measure) is not None]
    missing = [q for q in queries if (random.get(q) or {}).get(measure) is None]
    if missing:
        return [], [f"random-order baseline of {key} lacks {len(missing)} queries"], None, None
    if not queries:
        return [], [], None, None
    xs = np.array([float(values[q][measure]) for q in queries])
    rs = np.array([float(random[q][measure]) for q in queries])
    p = one_sided_t(xs - rs, 0.0, "greater")
    mean_random = float(rs.mean())
    if p < alpha:
        return [], [], p, mean_random
    problem = (
        f"{key} did not learn: its {measure} {xs.mean():.3f} is not significantly above a random "
        f"ordering of its candidates ({mean_random:.3f}, p = {p:.3f})"
    )
    return [problem], [], p, mean_random


def _loss(key: str, trainings: Sequence[Mapping[str, Any]]) -> tuple[list[str], list[str]]:
    problems, unknown = [], 0
    for t in trainings:
        start, end = t.get("loss_start"), t.get("loss_end")
        if start is None or end is None:
            unknown += 1
            continue
        if end >= start:
            where = ", ".join(
                f"{name} {t[name]}" for name in ("fold", "seed") if t.get(name) is not None
            )
            problems.append(
                f"{key}'s training loss did not fall ({where}: {start:.4f} -> {end:.4f} "
                f"over {t.get('steps')} steps)"
            )
    notes = [f"{key}: {unknown} model(s) without a loss curve"] if unknown else []
    return problems, notes


def check_cell(
    row: Mapping[str, Any],
    measure: str,
    values: Mapping[str, Mapping[str, float]] | None,
    random: Mapping[str, Mapping[str, float]] | None,
    trainings: Sequence[Mapping[str, Any]] | None,
    alpha: float,
) -> CellCheck:
    """The did-not-learn check of one cell of a claim (see the module docstring)."""
    if not fine_tuned(row, trainings):
        return CellCheck()
    key = str(row.get("key"))
    problems: list[str] = []
    notes: list[str] = []
    p = mean_random = None
    if random is None:
        notes.append(f"random-order baseline not recorded for {key}")
    elif values is not None:
        found, missing, p, mean_random = _against_random(key, measure, values, random, alpha)
        problems += found
        notes += missing
    if trainings is None:
        notes.append(f"training loss not recorded for {key}")
    else:
        found, missing = _loss(key, trainings)
        problems += found
        notes += missing
    means, _ = loss_means(trainings)
    details = {
        "p_above_random": p,
        "random_mean": mean_random,
        "loss_start": means and means[0],
        "loss_end": means and means[1],
    }
    return CellCheck(tuple(problems), tuple(notes), p, mean_random, details)
