"""Did each trained model learn? Every trained cell against its first stage and a random order.

The claims (:mod:`reranklab.grading.claims`) compare two cells; this table checks each trained
cell of a study on its own, the floor every comparison stands on. A fine-tuned cross-encoder
that does not beat the candidates' own order (BM25's, or the dataset's pool) has not learned
what the papers' models learned; a frozen-encoder head or a word-vector model must at least beat
a random ordering of its candidates. For each trained row, on one measure (MAP by default):

- its value (each query's mean over the seeds) against its first stage's on the same queries,
  leaving out the questions given a planted answer (``inject_relevant``): there the first stage
  ranks the planted answer last by construction, so any re-ranker gains on them, and a win that
  rests on them is not a win over the first stage's own candidates. A one-sided test whose
  variance holds the seeds as well as the queries (:func:`reranklab.grading.seed_test.seed_aware`,
  as the claims use: every seed's per-query values where recorded, else each seed's overall
  value with the query means, else the query means alone), Holm-corrected over the study's
  trained rows;
- against each query's expected value under a random ordering of its candidates (recorded by
  the evaluation), tested and corrected alike;
- each seed's value against the first stage's on the same queries (from each seed's per-query
  values; a study recorded without them: each seed's overall value where no answer was planted,
  else not known): a cell above it on the mean can hold a seed that is not (a seed that did not
  learn), which the mean hides;
- its models' training loss, the means of the first and the last tenth of each loss curve.

Its verdict is ``above first stage`` (significant, every seed above, every loss fell), ``above
first stage, not every seed`` (significant on the mean, a seed at or below it), ``above random
only``, ``did not learn`` (not above random, or a loss that did not fall) or ``not recorded``.
First stages and models that train nothing are left out.

Each cell also has a bar, the floor it must clear to count as learned: a fine-tuned
cross-encoder (the variant registry's ``cross_encoder``, passed in by the caller: this layer
loads no model code) its first stage, since every paper's cross-encoder beats it; any other
trained model (a lite head on a frozen encoder, QA-LSTM or K-NRM on word vectors trained from
scratch, a bi-encoder) a random ordering, since no paper compares those with a first stage
(BERT-DMN's Table 2 has no first-stage row). A variant not named (an alias recorded without its
base) gets the stricter bar.

Example:
    >>> from reranklab.grading.evidence import Evidence
    >>> learned_rows(Evidence(rows=[]))
    []
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from reranklab.grading.evidence import Evidence
from reranklab.grading.learning import fine_tuned, loss_means
from reranklab.grading.seed_test import SeedTest, seed_aware
from reranklab.grading.significance import correct

MEASURE = "MAP"
ALPHA = 0.05

ABOVE_FIRST_STAGE = "above first stage"
SEED_BELOW = "above first stage, not every seed"
ABOVE_RANDOM = "above random only"
DID_NOT_LEARN = "did not learn"
NOT_RECORDED = "not recorded"

FIRST_STAGE_BAR = "first stage"
RANDOM_BAR = "random order"


@dataclass(frozen=True)
class Learned:
    """One trained cell's check (``p_*`` Holm-corrected once :func:`learned_rows` returns).

    Args:
        study: the row's study.
        key: the row's key (``dataset/variant/L<length>``).
        first_stage: the key of the first stage it is compared with (``None``: none found).
        value: the cell's measure (mean over queries of each query's mean over seeds).
        first_value: the first stage's on the same queries.
        random_value: a random ordering's expected value on the same queries.
        seeds: each seed's overall value (``{}``: one seed, or not recorded).
        n: the queries compared.
        planted: the queries left out because they were given a planted answer (``None``:
            not recorded whether any were).
        loss: ``(start, end)`` means over the models of their first and last tenth's loss.
        loss_fell: whether every model's loss fell (``None``: no loss recorded).
        p_first: the corrected p of *above the first stage*.
        p_random: the corrected p of *above a random ordering*.
        verdict: see the module docstring.
        bar: the floor it must clear, ``first stage`` or ``random order`` (:func:`bar`).
        clears_bar: whether it does (``False`` until :func:`learned_rows` decides).
    """

    study: str
    key: str
    first_stage: str | None
    value: float | None = None
    first_value: float | None = None
    random_value: float | None = None
    seeds: dict[str, float] = field(default_factory=dict)
    n: int = 0
    planted: int | None = None
    loss: tuple[float, float] | None = None
    loss_fell: bool | None = None
    p_first: float | None = None
    p_random: float | None = None
    verdict: str = NOT_RECORDED
    test: str | None = None  # what p_first rests on (reranklab.grading.seed_test's methods)
    bar: str = FIRST_STAGE_BAR
    clears_bar: bool = False

    @property
    def seeds_below(self) -> list[str]:
        """The seeds at or below the first stage's value."""
        if self.first_value is None:
            return []
        return [seed for seed, value in self.seeds.items() if value <= self.first_value]


def bar(row: Mapping[str, Any], cross_encoders: Mapping[str, bool]) -> str:
    """The floor a trained row must clear (see the module docstring).

    Args:
        row: a summary row (its ``base`` where it is an alias's, else its ``variant``).
        cross_encoders: ``{registered variant: whether it is a fine-tuned cross-encoder}``.

    Example:
        >>> known = {"dmn": True, "dmn_lite": False, "bertsel": True}
        >>> bar({"variant": "dmn"}, known), bar({"variant": "dmn_lite"}, known)
        ('first stage', 'random order')
        >>> bar({"variant": "bertsel_epoch5"}, known), bar({"variant": "x", "base": "bertsel"}, known)
        ('first stage', 'first stage')
    """
    name = str(row.get("base") or row.get("variant"))
    return RANDOM_BAR if cross_encoders.get(name) is False else FIRST_STAGE_BAR


def _first_stage(row: Mapping[str, Any], rows: Sequence[Mapping[str, Any]]) -> Mapping | None:
    # The summary names each cell's first stage (baseline); older rows: the dataset's only one.
    stages = [
        r
        for r in rows
        if r.get("first_stage")
        and r.get("study") == row.get("study")
        and r.get("dataset") == row.get("dataset")
    ]
    named = [r for r in stages if r.get("key") == row.get("baseline")]
    if named:
        return named[0]
    return stages[0] if len(stages) == 1 else None


def _values(values: Mapping[str, Mapping[str, float]] | None, measure: str) -> dict[str, float]:
    return {q: float(v[measure]) for q, v in (values or {}).items() if v.get(measure) is not None}


def _check(
    row: Mapping[str, Any],
    rows: Sequence[Mapping[str, Any]],
    evidence: Evidence,
    measure: str,
    cross_encoders: Mapping[str, bool],
) -> Learned:
    """One row's values and raw (uncorrected) p-values."""
    stage = _first_stage(row, rows)
    learned = Learned(
        str(row.get("study")),
        str(row.get("key")),
        stage and stage.get("key"),
        bar=bar(row, cross_encoders),
    )
    loss, fell = loss_means(evidence.trainings(row))
    learned = replace(learned, loss=loss, loss_fell=fell)
    cell = _values(evidence.queries(row), measure)
    first = _values(evidence.queries(stage), measure) if stage else {}
    if not cell or not first or set(cell) != set(first):
        return learned  # never compared on a part of the queries
    planted = evidence.planted_queries(row)
    queries = sorted(set(cell) - (planted or set()))
    if len(queries) < 2:
        return replace(learned, planted=len(cell) - len(queries))
    xs = np.array([cell[q] for q in queries])
    fs = np.array([first[q] for q in queries])
    per_seed = _seed_queries(row, evidence, measure, queries)
    seeds = _seed_values(row, evidence, measure, per_seed, bool(planted))
    against_first = _test(per_seed, fs, xs, seeds)
    learned = replace(
        learned,
        value=float(xs.mean()),
        first_value=float(fs.mean()),
        seeds=seeds,
        n=len(queries),
        planted=None if planted is None else len(cell) - len(queries),
        p_first=against_first.p(0.0, "greater"),
        test=against_first.method,
    )
    random = _values(evidence.random_order(row), measure)
    if set(queries) <= set(random):
        rs = np.array([random[q] for q in queries])
        against_random = _test(per_seed, rs, xs, seeds)
        learned = replace(
            learned,
            random_value=float(rs.mean()),
            p_random=against_random.p(0.0, "greater"),
        )
    return learned


def _seed_queries(
    row: Mapping[str, Any], evidence: Evidence, measure: str, queries: list[str]
) -> dict[str, np.ndarray] | None:
    """Each seed's per-query values on ``queries`` (seeds missing one are left out); ``None``
    for a record that kept no per-seed per-query values."""
    by_query = evidence.seed_queries(row)
    if not by_query:
        return None
    return {
        str(seed): np.array([float(values[q][measure]) for q in queries])
        for seed, values in by_query.items()
        if all((values.get(q) or {}).get(measure) is not None for q in queries)
    }


def _test(
    per_seed: Mapping[str, np.ndarray] | None,
    baseline: np.ndarray,
    means: np.ndarray,
    seeds: Mapping[str, float],
) -> SeedTest:
    """The cell against a baseline of one value a query (a first stage, a random order): every
    seed's per-query differences where recorded, else the query means with each seed's overall
    effect (conservative), else the query means alone."""
    if per_seed and len(per_seed) >= 2:
        return seed_aware(np.array(list(per_seed.values())) - baseline[None, :])
    effects = np.array([value - float(baseline.mean()) for value in seeds.values()])
    return seed_aware(
        query_diffs=means - baseline, seed_effects=effects if len(effects) >= 2 else None
    )


def _seed_values(
    row: Mapping[str, Any],
    evidence: Evidence,
    measure: str,
    per_seed: Mapping[str, np.ndarray] | None,
    planted: bool,
) -> dict[str, float]:
    """Each seed's value on the queries: from its per-query values, else (a record without them)
    its overall value, which holds only when no query was left out."""
    if per_seed is not None:
        return {seed: float(values.mean()) for seed, values in per_seed.items()}
    if planted:
        return {}
    return {
        str(seed): float(values[measure])
        for seed, values in evidence.seed_values(row).items()
        if values.get(measure) is not None
    }


def _verdict(learned: Learned, alpha: float) -> str:
    if learned.p_first is None:
        return NOT_RECORDED
    if learned.loss_fell is False:
        return DID_NOT_LEARN
    if learned.p_first < alpha:
        return SEED_BELOW if learned.seeds_below else ABOVE_FIRST_STAGE
    if learned.p_random is not None and learned.p_random < alpha:
        return ABOVE_RANDOM
    return DID_NOT_LEARN if learned.p_random is not None else NOT_RECORDED


def _clears(learned: Learned, alpha: float) -> bool:
    if learned.verdict == ABOVE_FIRST_STAGE:
        return True
    if learned.bar != RANDOM_BAR or learned.loss_fell is False:
        return False
    return learned.p_random is not None and learned.p_random < alpha


def learned_rows(
    evidence: Evidence,
    measure: str = MEASURE,
    alpha: float = ALPHA,
    correction: str = "holm",
    cross_encoders: Mapping[str, bool] | None = None,
) -> list[Learned]:
    """Every trained row's check, its p-values corrected over its study's trained rows.

    Args:
        evidence: the studies' rows and recorded per-query values (:func:`load_evidence`).
        cross_encoders: ``{registered variant: whether it is a fine-tuned cross-encoder}``
            (:func:`reranklab.models.registry.cross_encoders`); a variant not in it is held to
            its first stage.
        measure: the measure compared (each row must hold it per query).
        alpha: the significance level of the verdicts.
        correction: ``holm``, ``bonferroni`` or ``none`` (statsmodels' ``multipletests``).

    Returns:
        One :class:`Learned` per trained row, in the evidence's order.
    """
    rows = evidence.rows
    checked = [
        _check(row, rows, evidence, measure, cross_encoders or {})
        for row in rows
        if fine_tuned(row, evidence.trainings(row))
    ]
    for study in dict.fromkeys(c.study for c in checked):
        for name in ("p_first", "p_random"):
            family = [
                i
                for i, c in enumerate(checked)
                if c.study == study and getattr(c, name) is not None
            ]
            if not family:
                continue
            ps = correct([getattr(checked[i], name) for i in family], correction, alpha)
            for i, p in zip(family, ps, strict=True):
                checked[i] = replace(checked[i], **{name: p})
    checked = [replace(c, verdict=_verdict(c, alpha)) for c in checked]
    return [replace(c, clears_bar=_clears(c, alpha)) for c in checked]


def counts(checked: Sequence[Learned]) -> dict[str, int]:
    """How many rows got each verdict (every verdict listed, in order)."""
    verdicts = (ABOVE_FIRST_STAGE, SEED_BELOW, ABOVE_RANDOM, DID_NOT_LEARN, NOT_RECORDED)
    return {v: sum(c.verdict == v for c in checked) for v in verdicts}
