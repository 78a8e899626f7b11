"""Significance across the grid: every pair of rows of a dataset, per measure, paired by query.

For each dataset and measure, every pair of its summary rows (the first stage and each cell) is
compared on the per-query values of the queries both count:

- the two-sided paired t-test (``scipy.stats.ttest_rel``);
- the two-sided paired randomisation test (``scipy.stats.permutation_test`` with
  ``permutation_type="samples"``: the sign of each query's difference flipped at random; exact
  when ``2**n`` is within the resamples), statistic the mean difference;
- the effect size, Cohen's d for paired samples (``d_z``: mean difference / sample std of the
  differences);
- a bootstrap 95 % confidence interval of the mean difference (``scipy.stats.bootstrap``,
  percentile method, the queries resampled).

The p-values of the test the study names are corrected for multiple comparisons within each
family, one family per (dataset, measure), i.e. per column of a dataset's table
(``statsmodels.stats.multitest.multipletests``: ``holm``, ``bonferroni`` or ``none``). Every
random draw comes from one seeded generator per comparison, so the values are the same on every
run and machine.

Example:
    >>> rows = [{"dataset": "d", "key": "d/bm25"}, {"dataset": "d", "key": "d/bert/L128"}]
    >>> per_query = [{"q1": {"MAP": 0.2}, "q2": {"MAP": 0.4}, "q3": {"MAP": 0.1}},
    ...              {"q1": {"MAP": 0.9}, "q2": {"MAP": 0.8}, "q3": {"MAP": 0.7}}]
    >>> (c,) = compare_rows(rows, per_query, ["MAP"], Significance(resamples=2000))
    >>> c.a, c.b, round(c.diff, 4), round(c.t_p, 4), round(c.perm_p, 4)
    ('d/bert/L128', 'd/bm25', 0.5667, 0.0234, 0.25)
"""

from __future__ import annotations

import gc
import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from hashlib import blake2b
from typing import Any, Literal

import numpy as np
from scipy import stats

Test = Literal["t", "permutation"]
Correction = Literal["holm", "bonferroni", "none"]
TEST_NAMES = {
    "t": "two-sided paired t-test (scipy.stats.ttest_rel)",
    "permutation": "two-sided paired randomisation test (scipy.stats.permutation_test)",
}
CORRECTION_NAMES = {
    "holm": "Holm-Bonferroni",
    "bonferroni": "Bonferroni",
    "none": "no correction",
}


@dataclass(frozen=True)
class Significance:
    """How rows are compared (the ``report.significance`` block of params.yaml).

    Args:
        test: whose p-value decides (``t`` or ``permutation``); both are always computed.
        correction: ``holm``, ``bonferroni`` or ``none``, within each (dataset, measure).
        alpha: the level of the corrected p-values.
        resamples: permutations of the randomisation test and bootstrap resamples.
        seed: seeds every comparison's generator (with the two rows' keys and the measure).
        reference: a row key (``wikiqa/bertlets/L256``) every other row of its dataset is
            also compared with in the Markdown (``None``: none besides the first stage).
    """

    test: Test = "t"
    correction: Correction = "holm"
    alpha: float = 0.05
    resamples: int = 10_000
    seed: int = 0
    reference: str | None = None

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any] | None) -> Significance:
        return cls(**dict(settings or {}))

    def describe(self) -> str:
        return (
            f"{TEST_NAMES[self.test]}, {CORRECTION_NAMES[self.correction]} within each dataset's "
            f"measure, corrected p < {self.alpha}"
        )


@dataclass(frozen=True)
class Comparison:
    """Row ``a`` against row ``b`` on one measure (``diff`` = mean of a − b over the queries)."""

    dataset: str
    measure: str
    a: str
    b: str
    n: int
    mean_a: float
    mean_b: float
    diff: float
    t_p: float | None
    perm_p: float | None
    p: float | None  # the chosen test's
    p_corrected: float | None
    significant: bool
    effect_size: float | None
    ci_low: float | None
    ci_high: float | None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def seeded_generator(seed: int, *names: str) -> np.random.Generator:
    """A generator seeded by ``seed`` and the names (the same draws on every run and machine)."""
    digest = blake2b("\x1f".join([str(seed), *names]).encode(), digest_size=8).digest()
    return np.random.default_rng(int.from_bytes(digest, "big"))


def t_test(diffs: np.ndarray) -> float | None:
    """Two-sided paired t-test p-value of the differences (1.0 when all are zero).

    Example:
        >>> round(t_test(np.array([0.25, 0.5, 0.0, 0.5])), 4)
        0.0796
    """
    if len(diffs) < 2:
        return None
    if not diffs.any():
        return 1.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # near-constant differences
        p = float(stats.ttest_rel(diffs, np.zeros_like(diffs)).pvalue)
    return None if math.isnan(p) else p


def one_sided_t(diffs: np.ndarray, shift: float, alternative: str) -> float:
    """p of H1 ``mean(diffs) + shift`` > 0 (``greater``) or < 0 (``less``): the one-sided
    one-sample t-test, exact (0 or 1) when the shifted differences are all equal.

    Example:
        >>> round(one_sided_t(np.array([0.25, 0.5, 0.0, 0.5]), 0.0, "greater"), 4)
        0.0398
    """
    values = diffs + shift
    if np.all(values == values[0]):
        holds = values[0] > 0 if alternative == "greater" else values[0] < 0
        return 0.0 if holds else 1.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        p = float(stats.ttest_1samp(values, 0.0, alternative=alternative).pvalue)
    return 1.0 if math.isnan(p) else p


def randomisation_test(
    diffs: np.ndarray,
    resamples: int,
    rng: np.random.Generator,
    alternative: str = "two-sided",
) -> float | None:
    """Paired randomisation test of the mean difference (signs flipped per query).

    Exact (every one of the ``2**n`` sign patterns) when that many fit in ``resamples``;
    ``alternative``: ``two-sided``, ``greater`` (mean > 0) or ``less``.

    Example:
        >>> randomisation_test(np.array([1.0, 2.0, 3.0]), 100, np.random.default_rng(0))
        0.25
        >>> randomisation_test(np.array([1.0, 2.0, 3.0]), 100, np.random.default_rng(0), "greater")
        0.125
    """
    if len(diffs) < 2:
        return None
    if not diffs.any():
        return 1.0
    result = stats.permutation_test(
        (diffs, np.zeros_like(diffs)),
        lambda x, y, axis: np.mean(x - y, axis=axis),
        permutation_type="samples",
        n_resamples=resamples,
        alternative=alternative,
        vectorized=True,
        rng=rng,
    )
    return float(min(1.0, result.pvalue))


def effect_size(diffs: np.ndarray) -> float | None:
    """Cohen's d for paired samples: mean / sample std of the differences (None if undefined)."""
    if len(diffs) < 2 or np.all(diffs == diffs[0]):
        return None  # no spread (np.std of equal floats can be 1e-17, not 0)
    return float(np.mean(diffs)) / float(np.std(diffs, ddof=1))


def bootstrap_ci(
    diffs: np.ndarray, resamples: int, rng: np.random.Generator
) -> tuple[float | None, float | None]:
    """The percentile bootstrap 95 % interval of the mean difference (a point when constant)."""
    if len(diffs) < 2:
        return None, None
    if np.all(diffs == diffs[0]):
        return float(diffs[0]), float(diffs[0])
    result = stats.bootstrap(
        (diffs,),
        np.mean,
        n_resamples=resamples,
        confidence_level=0.95,
        method="percentile",
        vectorized=True,
        rng=rng,
    )
    return float(result.confidence_interval.low), float(result.confidence_interval.high)


def correct(p_values: Sequence[float], correction: Correction, alpha: float) -> list[float]:
    """The corrected p-values of one family (statsmodels' ``multipletests``).

    Example:
        >>> [round(p, 3) for p in correct([0.01, 0.04, 0.03], "holm", 0.05)]
        [0.03, 0.06, 0.06]
    """
    if correction == "none" or not p_values:
        return list(p_values)
    from statsmodels.stats.multitest import multipletests

    # statsmodels' Holm runs a full gc.collect() on every call (statsmodels 0.15,
    # stats/multitest.py): with a study's per-query values in memory that is ~0.3 s a family,
    # most of a claims regrade. Frozen objects are skipped by it; nothing is left frozen.
    gc.freeze()
    try:
        corrected = multipletests(list(p_values), alpha=alpha, method=correction)[1]
    finally:
        gc.unfreeze()
    return [float(p) for p in corrected]


def compare(
    dataset: str,
    measure: str,
    a: str,
    b: str,
    values_a: Mapping[str, Mapping[str, float]],
    values_b: Mapping[str, Mapping[str, float]],
    settings: Significance,
) -> Comparison:
    """Row ``a`` against row ``b`` on ``measure``, over the queries both count (uncorrected)."""
    common = sorted(
        q
        for q in set(values_a) & set(values_b)
        if values_a[q].get(measure) is not None and values_b[q].get(measure) is not None
    )
    xa = np.array([float(values_a[q][measure]) for q in common])
    xb = np.array([float(values_b[q][measure]) for q in common])
    diffs = xa - xb
    rng = seeded_generator(settings.seed, dataset, measure, a, b)
    t_p = t_test(diffs)
    perm_p = randomisation_test(diffs, settings.resamples, rng)
    low, high = bootstrap_ci(diffs, settings.resamples, rng)
    p = t_p if settings.test == "t" else perm_p
    return Comparison(
        dataset=dataset,
        measure=measure,
        a=a,
        b=b,
        n=len(common),
        mean_a=float(xa.mean()) if len(common) else math.nan,
        mean_b=float(xb.mean()) if len(common) else math.nan,
        diff=float(diffs.mean()) if len(common) else math.nan,
        t_p=t_p,
        perm_p=perm_p,
        p=p,
        p_corrected=p,
        significant=False,
        effect_size=effect_size(diffs),
        ci_low=low,
        ci_high=high,
    )


def compare_rows(
    rows: Sequence[Mapping[str, Any]],
    per_query: Sequence[Mapping[str, Mapping[str, float]]],
    measures: Sequence[str],
    settings: Significance,
) -> list[Comparison]:
    """Every pair of rows of each dataset on every measure, corrected per (dataset, measure).

    Args:
        rows: summary rows (``dataset``, ``key``), in table order; ``a`` of a pair is the later
            row, ``b`` the earlier (a re-ranker against the first stage above it).
        per_query: each row's ``{qid: {measure: value}}``.
        measures: the measures to compare.
        settings: the test, correction, level, resamples and seed.
    """
    comparisons: list[Comparison] = []
    datasets = list(dict.fromkeys(row["dataset"] for row in rows))
    for dataset in datasets:
        members = [i for i, row in enumerate(rows) if row["dataset"] == dataset]
        for measure in measures:
            family = [
                compare(
                    dataset,
                    measure,
                    rows[i]["key"],
                    rows[j]["key"],
                    per_query[i],
                    per_query[j],
                    settings,
                )
                for pos, i in enumerate(members)
                for j in members[:pos]
            ]
            tested = [c for c in family if c.p is not None]
            corrected = correct([c.p for c in tested], settings.correction, settings.alpha)
            adjusted = {id(c): p for c, p in zip(tested, corrected, strict=True)}
            for c in family:
                p = adjusted.get(id(c))
                comparisons.append(
                    Comparison(
                        **{
                            **c.as_dict(),
                            "p_corrected": p,
                            "significant": p is not None and p < settings.alpha and c.diff != 0,
                        }
                    )
                )
    return comparisons


def beaten(comparisons: Sequence[Comparison], key: str, measure: str) -> list[str]:
    """The rows that ``key`` is significantly better than on ``measure``."""
    out = []
    for c in comparisons:
        if c.measure != measure or not c.significant:
            continue
        if c.a == key and c.diff > 0:
            out.append(c.b)
        elif c.b == key and c.diff < 0:
            out.append(c.a)
    return out
