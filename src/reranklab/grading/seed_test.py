"""A paired test whose variance holds the seeds as well as the queries.

A claim's cells are trained with several seeds (3 by default). Testing each query's mean over
the seeds leaves the seed-to-seed spread out: a comparison whose seeds disagree (effects −0.008,
+0.087 and +0.019, say) can still look certain on 500 queries. Here the difference
``d[s, q] = A_s(q) − B_s(q)`` (a first stage has one value a query, the same for every seed) is
read as a two-way random-effects layout, query × seed, without replication (the crossed model
of a mixed model with query and seed as random effects, estimated by its mean squares):

    d[s, q] = μ + a_q + b_s + e_sq,

and the mean difference ``d̄`` has variance ``σ_a²/Q + σ_b²/S + σ_e²/(QS)``, estimated by the
mean squares ``(MS_Q + MS_S − MS_E)/(QS)``. The seed component ``MS_S − MS_E`` is kept only
where positive, so the test is never looser than the query-mean t-test (which is the case
``S = 1``). The statistic ``(d̄ + shift)/se`` is referred to a t distribution with
Satterthwaite's degrees of freedom: with 3 seeds and a real seed spread they fall towards 2,
and the test asks for the effect to hold across seeds, not only across queries.

A record made before per-seed per-query values were kept still has each seed's overall value:
then ``MS_E`` is unknown and taken as 0, which over-states the variance (a conservative test).

Example:
    >>> import numpy as np
    >>> d = np.array([[0.10, 0.20, 0.00, 0.10], [0.12, 0.18, 0.02, 0.08], [0.09, 0.21, 0.01, 0.1]])
    >>> t = seed_aware(d)
    >>> round(t.mean, 3), t.seeds, t.queries, t.method
    (0.101, 3, 4, 'query x seed')
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import optimize, stats

QUERY_MEANS = "query means"  # one seed, or no seed values: the ordinary paired t-test
QUERY_BY_SEED = "query x seed"  # every seed's per-query values
SEED_MEANS = "query means + seed means"  # each seed's overall value only (MS_E taken as 0)


@dataclass(frozen=True)
class SeedTest:
    """The mean difference, its standard error and degrees of freedom, and what they rest on.

    ``query_var`` and ``seed_var`` are the two parts of ``se²`` (the seed part is 0 without a
    seed spread): :meth:`queries_for` scales the first with the number of queries.
    """

    mean: float
    se: float
    df: float
    queries: int
    seeds: int
    method: str
    query_var: float
    seed_var: float

    def p(self, shift: float, alternative: str) -> float:
        """One-sided p of H1 ``mean + shift`` > 0 (``greater``) or < 0 (``less``), as
        :func:`reranklab.grading.significance.one_sided_t` on the query means."""
        if self.se == 0.0:
            diff = self.mean + shift
            return float(not (diff > 0)) if alternative == "greater" else float(not (diff < 0))
        t = (self.mean + shift) / self.se
        tail = stats.t.sf if alternative == "greater" else stats.t.cdf
        return float(tail(t, self.df))

    def interval(self, level: float) -> tuple[float, float]:
        """The two-sided ``level`` confidence interval of the mean difference."""
        if self.se == 0.0:
            return self.mean, self.mean
        half = float(stats.t.ppf((1 + level) / 2, self.df)) * self.se
        return self.mean - half, self.mean + half

    def power(self, effect: float, alpha: float) -> float:
        """The one-sided test's power at a true difference ``effect`` (noncentral t)."""
        if self.se == 0.0:
            return float(effect > 0)
        critical = stats.t.ppf(1 - alpha, self.df)
        return float(stats.nct.sf(critical, self.df, effect / self.se))

    def mde(self, alpha: float, power: float) -> float | None:
        """The smallest true difference found with ``power`` at level ``alpha``."""
        if self.se == 0.0:
            return 0.0
        goal = lambda effect: self.power(effect, alpha) - power  # noqa: E731
        high = self.se * 50
        if goal(high) < 0:
            return None
        return float(optimize.brentq(goal, 0.0, high))

    def queries_for(self, effect: float, alpha: float, power: float) -> int | None:
        """The queries the test would need for ``power`` at ``effect``, the seeds as they are
        (their part of the variance does not shrink with more queries): ``None`` where no
        number of queries gets there (more seeds would)."""
        if effect <= 0 or self.se == 0.0:
            return None

        def at(n: float) -> float:
            var = self.query_var * self.queries / n + self.seed_var
            df = self.df if self.seed_var else n - 1
            critical = stats.t.ppf(1 - alpha, df)
            return float(stats.nct.sf(critical, df, effect / math.sqrt(var))) - power

        if at(10**7) < 0:
            return None
        if at(2) >= 0:
            return 2
        return math.ceil(optimize.brentq(at, 2, 10**7))


def _satterthwaite(total: float, terms: list[tuple[float, float]]) -> float:
    """Satterthwaite's degrees of freedom of ``total``, a signed sum of mean-square pieces given
    as ``(piece, its df)``."""
    denominator = sum(piece**2 / df for piece, df in terms if df > 0)
    return total**2 / denominator if denominator > 0 else math.inf


def seed_aware(
    by_seed: np.ndarray | None = None,
    query_diffs: np.ndarray | None = None,
    seed_effects: np.ndarray | None = None,
) -> SeedTest:
    """The mean difference and its seed-aware standard error (see the module docstring).

    Args:
        by_seed: ``S × Q`` differences, every seed on every query (the best evidence).
        query_diffs: each query's difference of the seed means (used when ``by_seed`` is
            missing or has one seed).
        seed_effects: each seed's overall difference (mean over the queries), with
            ``query_diffs`` when the per-seed per-query values were not recorded.
    """
    if by_seed is not None and by_seed.shape[0] >= 2:
        return _crossed(np.asarray(by_seed, dtype=float))
    if by_seed is not None:
        query_diffs = by_seed[0]
    if query_diffs is None:
        raise ValueError("seed_aware needs by_seed or query_diffs")
    diffs = np.asarray(query_diffs, dtype=float)
    q = len(diffs)
    query_var = float(np.var(diffs, ddof=1)) / q if q >= 2 else 0.0
    if seed_effects is None or len(seed_effects) < 2:
        return SeedTest(
            float(diffs.mean()), math.sqrt(query_var), q - 1, q, 1, QUERY_MEANS, query_var, 0.0
        )
    effects = np.asarray(seed_effects, dtype=float)
    s = len(effects)
    seed_var = float(np.var(effects, ddof=1)) / s
    df = _satterthwaite(query_var + seed_var, [(query_var, q - 1), (seed_var, s - 1)])
    se = math.sqrt(query_var + seed_var)
    return SeedTest(float(diffs.mean()), se, df, q, s, SEED_MEANS, query_var, seed_var)


def _crossed(d: np.ndarray) -> SeedTest:
    s, q = d.shape
    grand = float(d.mean())
    query_means, seed_means = d.mean(axis=0), d.mean(axis=1)
    ms_q = s * float(np.sum((query_means - grand) ** 2)) / (q - 1) if q >= 2 else 0.0
    ms_s = q * float(np.sum((seed_means - grand) ** 2)) / (s - 1)
    residual = d - query_means[None, :] - seed_means[:, None] + grand
    df_e = (q - 1) * (s - 1)
    ms_e = float(np.sum(residual**2)) / df_e if df_e > 0 else 0.0
    query_var = ms_q / (q * s)
    if ms_s > ms_e:  # a seed spread beyond the noise: its part of the variance
        seed_var = (ms_s - ms_e) / (q * s)
        pieces = [(query_var, q - 1), (ms_s / (q * s), s - 1), (ms_e / (q * s), df_e)]
        df = _satterthwaite(query_var + seed_var, pieces)
    else:
        seed_var, df = 0.0, float(q - 1)
    se = math.sqrt(query_var + seed_var)
    return SeedTest(grand, se, df, q, s, QUERY_BY_SEED, query_var, seed_var)
