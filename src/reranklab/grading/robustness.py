"""Would another paired test have graded a claim the same? Wilcoxon and randomisation p-values.

A claim's grade rests on a one-sided paired t-test (TOST for ``equal``), which assumes the mean
of the per-query differences is close to normal: with a few dozen bounded, often tied values
(P@1 is 0 or 1) that is worth checking. The same hypotheses, in the same directions and with
the same margin, are tested by

- the Wilcoxon signed-rank test (``scipy.stats.wilcoxon``): the median, not the mean;
- the paired randomisation test (:func:`~reranklab.grading.significance.randomisation_test`,
  signs flipped per query, seeded by the claim so every run gives the same p).

:func:`claim_and_against` gives each test's (p of the claim, p of its opposite) exactly as the
t-test's are built, so the grading can correct them over the same family and compare grades.

Example:
    >>> import numpy as np
    >>> diffs = np.array([0.2, 0.1, 0.3, 0.25, 0.15, 0.05, 0.2, 0.1])
    >>> ps = claim_and_against("better", diffs, 0.0, seed_names=("x",))
    >>> [round(p, 4) for p in ps["wilcoxon"]], [round(p, 4) for p in ps["randomisation"]]
    ([0.0039, 1.0], [0.0039, 1.0])
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable

import numpy as np
from scipy import stats

from reranklab.grading.significance import randomisation_test, seeded_generator

RESAMPLES = 10_000
SEED = 0
OneSided = Callable[[np.ndarray, str], float]


def _wilcoxon(values: np.ndarray, alternative: str) -> float:
    if not values.any():
        return 1.0  # every difference is zero: nothing to rank
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # small samples, ties and zeros
        try:
            p = float(stats.wilcoxon(values, alternative=alternative).pvalue)
        except ValueError:
            return 1.0
    return 1.0 if math.isnan(p) else p


def _pair(kind: str, diffs: np.ndarray, delta: float, test: OneSided) -> tuple[float, float]:
    """(p of the claim, p of its opposite), built as the t-test's are (see claim_tests._p_values)."""
    if kind == "better":
        return test(diffs, "greater"), test(diffs, "less")
    if kind == "no_worse":
        return test(diffs + delta, "greater"), test(diffs + delta, "less")
    p_claim = max(test(diffs + delta, "greater"), test(diffs - delta, "less"))
    p_against = min(1.0, 2 * min(test(diffs + delta, "less"), test(diffs - delta, "greater")))
    return p_claim, p_against


def claim_and_against(
    kind: str,
    diffs: np.ndarray,
    delta: float,
    seed_names: tuple[str, ...],
    resamples: int = RESAMPLES,
) -> dict[str, tuple[float, float]]:
    """``{"wilcoxon": (p, p_against), "randomisation": (p, p_against)}``, uncorrected.

    Args:
        kind: ``better``, ``no_worse`` or ``equal``.
        diffs: the per-query differences A − B.
        delta: the claim's margin.
        seed_names: names the randomisation test's generator is seeded with (the claim, the
            study, the dataset), so each claim draws its own reproducible signs.
        resamples: sign patterns drawn (all ``2**n`` when fewer).
    """
    rng = seeded_generator(SEED, *seed_names)

    def randomisation(values: np.ndarray, alternative: str) -> float:
        p = randomisation_test(values, resamples, rng, alternative=alternative)
        return 1.0 if p is None else p

    return {
        "wilcoxon": _pair(kind, diffs, delta, _wilcoxon),
        "randomisation": _pair(kind, diffs, delta, randomisation),
    }
