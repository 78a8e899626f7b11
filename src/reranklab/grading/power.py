"""Could a claim's paired test have seen the effect at all? Power and minimum detectable effect.

A one-sided paired t-test on ``n`` queries whose differences have standard deviation ``s``
detects a true mean difference ``μ`` with the power of the noncentral t (statsmodels'
``TTestPower``, effect size ``μ / s``). A claim not seen by a test that had little chance to
see it says nothing: the grade is INCONCLUSIVE (underpowered), not NOT CONFIRMED.

The effect the power is computed at:

- ``better``: the paper's own A − B (``paper_effect``); without one the power is unknown;
- ``no_worse``: A − B = 0, i.e. the margin δ away from the null A − B = −δ;
- ``equal`` (TOST): A − B = 0; both one-sided tests must reject, so the power is at least
  ``2·P₁ − 1`` with ``P₁`` the one-sided power at δ (the bound is tight when both tests see the
  same data: the normal approximation of TOST's power at 0).

The MDE is the effect (``better``) or margin (``no_worse``, ``equal``) the test finds with
80 % power on these ``n`` and ``s``; ``queries`` is how many queries with this ``s`` the test
needs for 80 % power at the effect looked for (what an underpowered claim would take).

Example:
    >>> import numpy as np
    >>> diffs = np.array([0.1, -0.05, 0.2, 0.0, 0.15, -0.1, 0.05, 0.1])
    >>> p = paired_power("better", diffs, 0.05, paper_effect=0.03)
    >>> round(p.power, 2), round(p.mde, 3), p.queries
    (0.19, 0.099, 73)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from reranklab.grading.seed_test import SeedTest

TARGET = 0.8  # the power a claim's test should have at the effect it looks for


@dataclass(frozen=True)
class Power:
    """The power at the effect looked for (``at``), the MDE at 80 %, the queries 80 % at ``at``
    needs, and why any is missing."""

    power: float | None
    mde: float | None
    at: float | None = None
    note: str = ""
    queries: int | None = None

    @property
    def underpowered(self) -> bool:
        return self.power is not None and self.power < TARGET


def _one_sided(effect_size: float, n: int, alpha: float) -> float:
    from statsmodels.stats.power import TTestPower

    return float(
        TTestPower().power(effect_size=effect_size, nobs=n, alpha=alpha, alternative="larger")
    )


def _solve(**known: float | None) -> float | None:
    """The one unknown (passed as ``None``) of the one-sided paired t-test's power equation
    (statsmodels' ``TTestPower.solve_power``); ``None`` when the solver finds no value."""
    from statsmodels.stats.power import TTestPower

    try:
        value = TTestPower().solve_power(alternative="larger", **known)
    except (ValueError, RuntimeError):
        return None
    value = float(np.atleast_1d(value)[0])
    return None if math.isnan(value) else value


def _needed(n: int, alpha: float, power: float) -> float | None:
    """The effect size (in SDs) found with ``power``; ``None`` when no size reaches it."""
    return _solve(nobs=n, alpha=alpha, power=power, effect_size=None)


def _queries_for(effect_size: float, alpha: float, power: float) -> int | None:
    """The queries a one-sided paired t-test needs to find ``effect_size`` (in SDs) with
    ``power``; ``None`` when the solver finds no count."""
    n = _solve(effect_size=effect_size, alpha=alpha, power=power, nobs=None)
    return None if n is None or n <= 0 else math.ceil(n)


def paired_power(
    kind: str,
    diffs: np.ndarray,
    alpha: float,
    paper_effect: float | None = None,
    delta: float = 0.0,
) -> Power:
    """The power of a claim's paired test on these differences (see the module docstring).

    Args:
        kind: ``better``, ``no_worse`` or ``equal``.
        diffs: the per-query differences A − B.
        alpha: the test's one-sided level.
        paper_effect: the paper's own A − B (``better``).
        delta: the margin (``no_worse``, ``equal``).
    """
    n = len(diffs)
    sd = float(np.std(diffs, ddof=1)) if n >= 2 else math.nan
    if n < 2 or math.isnan(sd):
        return Power(None, None, note="power unknown: fewer than 2 queries")
    if kind == "better":
        at, size_for = paper_effect, TARGET
    else:
        at = delta
        size_for = (1 + TARGET) / 2 if kind == "equal" else TARGET  # TOST: 2·P₁ − 1 ≥ 0.8
    if sd == 0.0:  # constant differences: the test is exact, any nonzero effect is seen
        power = None if at is None else float(at > 0)
        return Power(power, 0.0, at, "" if at is not None else "power unknown: no paper effect")
    needed = _needed(n, alpha, size_for)
    mde = None if needed is None else needed * sd
    if at is None:
        return Power(None, mde, None, "power unknown: the claim gives no paper effect")
    if at <= 0:
        return Power(None, mde, at, f"power unknown: the paper's effect {at:+.3f} is not > 0")
    power = _one_sided(at / sd, n, alpha)
    if kind == "equal":
        power = max(0.0, 2 * power - 1)
    return Power(power, mde, at, queries=_queries_for(at / sd, alpha, size_for))


def claim_power(
    kind: str,
    test: SeedTest,
    alpha: float,
    paper_effect: float | None = None,
    delta: float = 0.0,
) -> Power:
    """The power of a claim's seed-aware test (:mod:`reranklab.grading.seed_test`) at ``alpha``:
    the level that decides it, Holm-adjusted by the grading. As :func:`paired_power`, whose
    numbers it gives for one seed; with several, the seeds' spread is part of the variance, and
    ``queries`` is ``None`` where no number of queries reaches 80 % (more seeds would).

    Example:
        >>> import numpy as np
        >>> from reranklab.grading.seed_test import seed_aware
        >>> diffs = np.array([0.1, -0.05, 0.2, 0.0, 0.15, -0.1, 0.05, 0.1])
        >>> p = claim_power("better", seed_aware(query_diffs=diffs), 0.05, paper_effect=0.03)
        >>> round(p.power, 2), round(p.mde, 3), p.queries
        (0.19, 0.099, 73)
    """
    if test.queries < 2:
        return Power(None, None, note="power unknown: fewer than 2 queries")
    if kind == "better":
        at, size_for = paper_effect, TARGET
    else:
        at = delta
        size_for = (1 + TARGET) / 2 if kind == "equal" else TARGET  # TOST: 2·P₁ − 1 ≥ 0.8
    mde = test.mde(alpha, size_for)
    if at is None:
        return Power(None, mde, None, "power unknown: the claim gives no paper effect")
    if at <= 0:
        return Power(None, mde, at, f"power unknown: the paper's effect {at:+.3f} is not > 0")
    power = test.power(at, alpha)
    if kind == "equal":
        power = max(0.0, 2 * power - 1)
    return Power(power, mde, at, queries=test.queries_for(at, alpha, size_for))
