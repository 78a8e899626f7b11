"""The tests behind one claim on one study: the paired test of two cells' per-query values
(:func:`paired`) and the training-speed ratio (:func:`ratio`).

A paired test reads both cells' per-query values from the evidence, refuses two cells scored on
different queries (NOT RUN), and gives the claim's one-sided p (TOST for ``equal``), the
opposite finding's p, the effect's 95 % interval, the power at the paper's effect, each seed's
effect, the did-not-learn checks and the alternative tests' raw p-values. The study's
correction and the status come after, in :mod:`reranklab.grading.claims`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from statistics import fmean
from typing import Any

import numpy as np

from reranklab.grading.claim_file import CellRef, Claim
from reranklab.grading.claim_grade import (
    CONFIRMED,
    CONTRADICTED,
    NOT_CONFIRMED,
    NOT_RUN,
    ClaimGrade,
)
from reranklab.grading.evidence import Evidence
from reranklab.grading.learned import FIRST_STAGE_BAR, MEASURE, Learned
from reranklab.grading.learning import check_cell
from reranklab.grading.power import Power, claim_power
from reranklab.grading.robustness import claim_and_against
from reranklab.grading.seed_test import QUERY_BY_SEED, QUERY_MEANS, SEED_MEANS, SeedTest, seed_aware

# What the test's variance rests on, as the grade names it.
TEST_NAMES = {
    QUERY_BY_SEED: "over queries and seeds",
    SEED_MEANS: "over queries, with the seeds' spread of their overall effects",
    QUERY_MEANS: "over the query means",
}


def _p_values(kind: str, test: SeedTest, delta: float) -> tuple[float, float]:
    """(p of the claim, p of its opposite) for a paired claim, from its seed-aware test."""
    if kind == "better":
        return test.p(0.0, "greater"), test.p(0.0, "less")
    if kind == "no_worse":
        return test.p(delta, "greater"), test.p(delta, "less")
    # equal: TOST for |A − B| < δ; against: A − B beyond δ on either side (Bonferroni x2).
    p_claim = max(test.p(delta, "greater"), test.p(-delta, "less"))
    p_against = min(1.0, 2 * min(test.p(delta, "less"), test.p(-delta, "greater")))
    return p_claim, p_against


def _by_seed(
    a: Mapping, b: Mapping, common: list[str], measure: str, evidence: Evidence
) -> np.ndarray | None:
    """``S × Q`` differences A − B, every seed on every common query, where both cells'
    per-seed per-query values are recorded (a first stage, seedless, repeats its one value);
    ``None`` where a trained cell's are not, or fewer than two seeds are shared."""
    sides = []
    for row in (a, b):
        if row.get("first_stage"):
            sides.append(None)
            continue
        by_seed = evidence.seed_queries(row)
        if len(by_seed) < 2:
            return None
        sides.append(by_seed)
    trained = [side for side in sides if side is not None]
    if not trained:
        return None
    seeds = sorted(set.intersection(*(set(side) for side in trained)))
    if len(seeds) < 2:
        return None
    values_a, values_b = evidence.queries(a) or {}, evidence.queries(b) or {}

    def value(side, overall, seed: str, qid: str) -> float | None:
        source = overall if side is None else side[seed]
        return (source.get(qid) or {}).get(measure)

    rows = []
    for seed in seeds:
        row = []
        for qid in common:
            va, vb = value(sides[0], values_a, seed, qid), value(sides[1], values_b, seed, qid)
            if va is None or vb is None:
                return None
            row.append(float(va) - float(vb))
        rows.append(row)
    return np.array(rows)


def claim_test(
    claim: Claim, a: Mapping, b: Mapping, common: list[str], diffs: np.ndarray, evidence: Evidence
) -> SeedTest:
    """The claim's seed-aware test: every seed's per-query differences where recorded, else the
    query means with each seed's overall effect (conservative), else the query means alone."""
    by_seed = _by_seed(a, b, common, str(claim.measure), evidence)
    if by_seed is not None:
        return seed_aware(by_seed)
    _, effects = _seeds(claim, a, b, evidence)
    spread = np.array(list(effects.values())) if len(effects) >= 2 else None
    return seed_aware(query_diffs=diffs, seed_effects=spread)


def power_at(g: ClaimGrade, a_dataset: str | None, alpha: float) -> Power:
    """The power of the grade's test at ``alpha`` (the level that decides it)."""
    claim = g.claim
    effect = claim.paper_effect.value if claim.paper_effect else None
    power = claim_power(claim.kind, g.seed_test, alpha, effect, claim.delta)
    if claim.kind == "better" and power.at is not None and a_dataset != claim.dataset:
        # The paper measured its effect on its own data: on a stand-in it is a yardstick only.
        power = replace(power, note=f"power at the paper's effect on {claim.dataset}")
    return power


def find(dataset: str, cell: CellRef, rows: Sequence[Mapping[str, Any]]) -> list[Mapping]:
    return [row for row in rows if row.get("dataset") == dataset and cell.matches(row)]


def missing(
    claim: Claim, study: str, dataset: str, side: str, cell: CellRef, found: list
) -> ClaimGrade:
    what = "no row" if not found else f"{len(found)} rows (pin max_length or model)"
    return ClaimGrade(
        claim, study, NOT_RUN, dataset, reason=f"{what} of {dataset}/{cell} ({side}) in {study}"
    )


def _scored(values: Mapping[str, Mapping[str, float]], measure: str) -> set[str]:
    return {q for q, v in values.items() if v.get(measure) is not None}


def _query_sets(a: Mapping, b: Mapping, qa: set[str], qb: set[str]) -> str | None:
    """The reason two cells cannot be paired: they were scored on different queries."""
    if qa == qb:
        return None
    only_a, only_b = sorted(qa - qb), sorted(qb - qa)
    shown = ", ".join(
        f"{len(only)} only in {row.get('key')} (e.g. {only[0]})"
        for only, row in ((only_a, a), (only_b, b))
        if only
    )
    return (
        f"different query sets: {a.get('key')} has {len(qa)} queries, {b.get('key')} "
        f"{len(qb)}; {shown} (never graded on the intersection)"
    )


def _seeds(claim: Claim, a: Mapping, b: Mapping, evidence: Evidence) -> tuple[int | None, dict]:
    """The fewest seeds of the claim's trained cells (``None``: no trained cell), and each
    seed's effect (that seed's overall A − B; a first stage's single value on the other side)."""
    trained = [row for row in (a, b) if not row.get("first_stage")]
    if not trained:
        return None, {}
    seeds = min(int(row.get("n_seeds") or 1) for row in trained)
    per_a, per_b = evidence.seed_values(a), evidence.seed_values(b)
    if not (per_a or per_b) or claim.measure is None:
        return seeds, {}
    names = sorted(set(per_a) & set(per_b)) if per_a and per_b else sorted(per_a or per_b)
    effects = {}
    for seed in names:
        value_a = (per_a.get(seed) or {}).get(claim.measure, a.get(claim.measure))
        value_b = (per_b.get(seed) or {}).get(claim.measure, b.get(claim.measure))
        if value_a is not None and value_b is not None:
            effects[str(seed)] = float(value_a) - float(value_b)
    return seeds, effects


def _gate_problems(rows: Sequence[Mapping], gate: Mapping[tuple[str, str], Learned]) -> list[str]:
    """A fine-tuned cross-encoder of the comparison that did not beat its first stage on the
    questions without planted answers (:mod:`reranklab.grading.learned`): it did not learn."""
    problems = []
    for row in rows:
        check = gate.get((str(row.get("study")), str(row.get("key"))))
        if check is None or check.bar != FIRST_STAGE_BAR or check.clears_bar:
            continue
        problems.append(
            f"{check.key} did not beat its first stage ({check.first_stage}) on the "
            f"{check.n} questions without planted answers ({MEASURE} "
            f"{_num(check.value)} vs {_num(check.first_value)}, Holm p "
            f"{_num(check.p_first)}; {check.verdict})"
        )
    return problems


def _num(value: float | None) -> str:
    return "?" if value is None else f"{value:.3f}"


def paired(
    claim: Claim,
    study: str,
    a: Mapping,
    b: Mapping,
    evidence: Evidence,
    alpha: float,
    gate: Mapping[tuple[str, str], Learned] | None = None,
) -> ClaimGrade:
    values_a, values_b = evidence.queries(a), evidence.queries(b)
    if values_a is None or values_b is None:
        return ClaimGrade(claim, study, NOT_RUN, reason="per-query values are not recorded")
    measure = str(claim.measure)
    qa, qb = _scored(values_a, measure), _scored(values_b, measure)
    different = _query_sets(a, b, qa, qb)
    if different:
        return ClaimGrade(claim, study, NOT_RUN, reason=different)
    common = sorted(qa)
    if len(common) < 2:
        return ClaimGrade(claim, study, NOT_RUN, reason=f"{len(common)} queries in common")
    xa = np.array([float(values_a[q][measure]) for q in common])
    xb = np.array([float(values_b[q][measure]) for q in common])
    diffs = xa - xb
    test = claim_test(claim, a, b, common, diffs, evidence)
    p, p_against = _p_values(claim.kind, test, claim.delta)
    low, high = test.interval(0.95)
    seeds, seed_effects = _seeds(claim, a, b, evidence)
    power = power_at(ClaimGrade(claim, study, NOT_RUN, seed_test=test), a.get("dataset"), alpha)
    problems: list[str] = []
    notes: list[str] = []
    for row, values in ((a, values_a), (b, values_b)):
        check = check_cell(
            row, measure, values, evidence.random_order(row), evidence.trainings(row), alpha
        )
        problems += check.problems
        notes += check.notes
    problems += _gate_problems((a, b), gate or {})
    alternative = claim_and_against(
        claim.kind, diffs, claim.delta, (claim.id, study, str(a.get("dataset")))
    )
    return ClaimGrade(
        claim,
        study,
        NOT_CONFIRMED,  # decided after the study's correction
        encoder=a.get("encoder") or b.get("encoder"),
        encoder_b=b.get("encoder") or a.get("encoder"),
        n=len(common),
        mean_a=float(xa.mean()),
        mean_b=float(xb.mean()),
        effect=float(diffs.mean()),
        ci_low=low,
        ci_high=high,
        p=p,
        p_against=p_against,
        seeds=seeds,
        test=("one-sided paired t-test" if claim.kind != "equal" else "paired TOST")
        + f" ({TEST_NAMES[test.method]})",
        seed_test=test,
        pair=(str(a.get("key")), str(b.get("key"))),
        power=power.power,
        mde=power.mde,
        power_at=power.at,
        queries_needed=power.queries,
        power_note=power.note,
        problems=tuple(problems),
        notes=tuple(notes),
        seed_effects=seed_effects,
        alternative_p=alternative,
    )


def _later(speeds: list[dict[str, Any]]) -> list[dict[str, Any]]:
    # BERT-DMN's Table 3 reports a lite model's first epoch apart: reranklab's encode rule does
    # that epoch's encoder pass, so every training epoch of a lite model is a "later" one.
    return [s for s in speeds if (s.get("epoch") or 0) >= 2] or speeds


def _throughput(
    speed_a: list[dict[str, Any]], speed_b: list[dict[str, Any]]
) -> tuple[str, list[float], list[float]] | str:
    """What the two models' speeds are compared in: training pairs a second where both epochs
    recorded them; batches a second only where both took as many steps an epoch (equal batches
    over the same pairs); else why they cannot be compared."""
    if all(s.get("pairs_per_s") for s in speed_a + speed_b):
        return "pairs/s", [s["pairs_per_s"] for s in speed_a], [s["pairs_per_s"] for s in speed_b]
    steps = {int(s.get("steps") or 0) for s in speed_a + speed_b}
    if len(steps) == 1:
        return (
            "batches/s",
            [s["batches_per_s"] for s in speed_a],
            [s["batches_per_s"] for s in speed_b],
        )
    a_steps = sorted({int(s.get("steps") or 0) for s in speed_a})
    b_steps = sorted({int(s.get("steps") or 0) for s in speed_b})
    return (
        f"unequal batches ({a_steps} against {b_steps} steps an epoch) and no pairs/s recorded: "
        "batches a second at different batch sizes are not comparable (re-record the study)"
    )


def _which(claim: Claim) -> str:
    sides = [
        ("first epoch, encoder pass included" if c.epoch == "first" else "later epochs")
        for c in (claim.a, claim.b)
    ]
    return sides[0] if sides[0] == sides[1] else f"A: {sides[0]}; B: {sides[1]}"


def _first(speeds: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each model's first epoch with its encoder pass (``encoder_pass_seconds``: a lite model's
    frozen encoder over the training pairs, timed by the encode rule) added to its time."""
    out = []
    for s in speeds:
        if s.get("epoch") != 1 or s.get("encoder_pass_seconds") is None:
            continue
        seconds = float(s["seconds"]) + float(s["encoder_pass_seconds"])
        pairs = s.get("pairs")
        out.append(
            {
                **s,
                "seconds": seconds,
                "batches_per_s": s["steps"] / seconds,
                "pairs_per_s": pairs / seconds if pairs else None,
            }
        )
    return out


def _epochs(side: CellRef, speeds: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return _first(speeds) if side.epoch == "first" else _later(speeds)


def ratio(claim: Claim, study: str, a: Mapping, b: Mapping, evidence: Evidence) -> ClaimGrade:
    """A's training throughput over B's in their later epochs (or a side's first, encoder pass
    included: ``epoch: first``), per training pair (or per batch where the batches are equal)."""
    later_a = _epochs(claim.a, evidence.speeds(a))
    later_b = _epochs(claim.b, evidence.speeds(b))
    later_a = [s for s in later_a if s.get("batches_per_s")]
    later_b = [s for s in later_b if s.get("batches_per_s")]
    if not later_a or not later_b:
        first = "first" in (claim.a.epoch, claim.b.epoch)
        reason = (
            "no first epoch with its encoder pass recorded (a record older than the encode rule's "
            "timing: re-record the study)"
            if first
            else "no recorded epoch timings"
        )
        return ClaimGrade(claim, study, NOT_RUN, reason=reason)
    compared = _throughput(later_a, later_b)
    if isinstance(compared, str):
        return ClaimGrade(claim, study, NOT_RUN, reason=compared)
    unit, speed_a, speed_b = compared
    ratio = fmean(speed_a) / fmean(speed_b)
    if ratio >= claim.at_least:
        status = CONFIRMED
    elif ratio <= 1.0:
        status = CONTRADICTED
    else:
        status = NOT_CONFIRMED
    return ClaimGrade(
        claim,
        study,
        status,
        encoder=a.get("encoder") or b.get("encoder"),
        encoder_b=b.get("encoder") or a.get("encoder"),
        mean_a=fmean(speed_a),
        mean_b=fmean(speed_b),
        effect=ratio,
        test=f"ratio of mean training {unit} ({_which(claim)})",
        test_status=status,
    )
