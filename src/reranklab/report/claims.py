"""The papers' findings as graded comparisons (``studies/claims.yaml``, ``reranklab regress``).

A paper's published numbers can only be reproduced with its encoder and data; most of its
*findings* are comparisons between two of its cells, and those can be checked with any encoder.
Each claim names the paper's words (``claim``) and line (``cite``), the two cells it compares
(``a`` and ``b``: a variant, optionally its max length and encoder), the dataset and measure,
and its kind:

- ``better``: A scores higher than B. H0 (mean of A − B ≤ 0) rejected by a one-sided paired
  t-test: CONFIRMED; the opposite one-sided test significant: CONTRADICTED;
- ``no_worse``: A is not worse than B by more than ``delta`` (non-inferiority): the one-sided
  test of A − B + δ > 0; CONTRADICTED when A − B < −δ is significant;
- ``equal``: A and B differ by less than ``delta`` (two one-sided tests, TOST): CONFIRMED when
  both reject; CONTRADICTED when |A − B| > δ is significant;
- ``ratio``: A's training batches per second over B's (later epochs of a lite model against
  the full model, BERT-DMN's Table 3): CONFIRMED when at least ``at_least``, CONTRADICTED when
  at most 1 (no speed-up at all), NOT CONFIRMED between.

Where the claim comes from (``source``): ``stated``, the authors' sentence quoted exactly at
``cite``; ``table``, a comparison read off a table or figure (``claim`` starts with ``Read
off``; ``cite`` may list the rows). ``stand_in`` says which reranklab cell takes the place of a
side the paper compared that is not a reranklab cell. ``paper_effect`` is the paper's own A − B
on the claim's dataset and measure: two ids of ``published.yaml`` (looked up beside the claims
file) or ``{value, cite}``; the power of the test is computed at it.

A claim is a comparison, so it can be checked on data the paper did not use: ``also_on`` names
stand-in datasets (WikiQA for WikiPassageQA, say), graded wherever a study ran them; the grade
says which dataset it was graded on.

The paired tests of one study's claims form one family: their p-values are Holm-corrected
(``statsmodels``' ``multipletests``) at the file's ``alpha``. A claim is graded on every given
study that runs its paper (the paper's own study, or one naming it: a MiniLM replication), with
whatever encoder that study used: a finding either holds with it or not. NOT RUN says which
cell is missing, or that the two cells were scored on different query sets (never graded on
their intersection: a different set of queries is a different experiment).

A grade says when the evidence cannot decide. After the correction, a paired claim is

- INCONCLUSIVE (did not learn), whatever its p, when a fine-tuned cell of the comparison is not
  significantly above a random ordering of its own candidates, or its training loss did not
  fall (:mod:`~reranklab.report.learning`): a comparison of cells that learned nothing says
  nothing about the papers' methods;
- INCONCLUSIVE (too few seeds), whatever its p, when its fine-tuned cells ran fewer seeds than
  the claim asks (``seeds``, default 3): one seed's effect can be the seed's;
- otherwise CONFIRMED or CONTRADICTED when the corrected test decides (the evidence decided);
- INCONCLUSIVE (underpowered) when it decides neither and the test's power at the paper's own
  effect (``better``; at the margin for ``no_worse``/``equal``) is below 0.8
  (:mod:`~reranklab.report.power`): NOT CONFIRMED is kept for "powered, and not seen". Where a
  ``better`` claim gives no paper effect the power is unknown and the grade stays NOT CONFIRMED.

Each grade keeps the p that decided it (the claim's corrected p; on a CONTRADICTED or would-be
CONTRADICTED grade the opposite finding's), the power and MDE, each seed's effect where a cell
ran several (the test itself is on each query's mean over the seeds), and whether the Wilcoxon
signed-rank and the paired randomisation tests, corrected over the same family, give the same
grade as the t-test (:mod:`~reranklab.report.robustness`). What is not recorded (the
random-order baseline or training losses of results recorded before they were kept) is said in
the grade's notes, never assumed.

Example:
    >>> claim = Claim.from_mapping({"id": "p/x", "paper": "p", "claim": "A beats B",
    ...     "source": "stated", "cite": "papers/p.txt:1", "kind": "better", "dataset": "d",
    ...     "measure": "MAP", "a": {"variant": "a"}, "b": {"variant": "bm25"}, "seeds": 1},
    ...     "claims.yaml claim 0")
    >>> rows = [{"study": "p", "dataset": "d", "variant": "bm25", "key": "d/bm25"},
    ...         {"study": "p", "dataset": "d", "variant": "a", "key": "d/a/L64"}]
    >>> values = [{"q1": {"MAP": 0.1}, "q2": {"MAP": 0.2}, "q3": {"MAP": 0.3}},
    ...           {"q1": {"MAP": 0.8}, "q2": {"MAP": 0.7}, "q3": {"MAP": 0.9}}]
    >>> evidence = Evidence(rows, {id(r): v for r, v in zip(rows, values)})
    >>> [(g.status, round(g.effect, 2)) for g in grade_claims([claim], evidence)]
    [('CONFIRMED', 0.6)]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from statistics import fmean
from typing import Any

import numpy as np
from scipy import stats

from reranklab.report.claim_file import (
    KINDS,
    CellRef,
    Claim,
    ClaimsFile,
    Kind,
    PaperEffect,
    load_claims,
)
from reranklab.report.evidence import Evidence
from reranklab.report.learned import FIRST_STAGE_BAR, MEASURE, Learned, learned_rows
from reranklab.report.learning import check_cell
from reranklab.report.power import TARGET, paired_power
from reranklab.report.robustness import claim_and_against
from reranklab.report.significance import correct, one_sided_t

__all__ = [
    "CONFIRMED",
    "CONTRADICTED",
    "INCONCLUSIVE",
    "KINDS",
    "NOT_CONFIRMED",
    "NOT_RUN",
    "STATUSES",
    "CellRef",
    "Claim",
    "ClaimGrade",
    "ClaimsFile",
    "Kind",
    "PaperEffect",
    "counts",
    "describe_evidence",
    "format_markdown",
    "format_text",
    "grade_claims",
    "load_claims",
    "to_json",
]

CONFIRMED, NOT_CONFIRMED, CONTRADICTED, INCONCLUSIVE, NOT_RUN = (
    "CONFIRMED",
    "NOT CONFIRMED",
    "CONTRADICTED",
    "INCONCLUSIVE",
    "NOT RUN",
)
STATUSES = (CONFIRMED, NOT_CONFIRMED, CONTRADICTED, INCONCLUSIVE, NOT_RUN)
DEFAULT_CLAIMS = "studies/claims.yaml"
UNDERPOWERED, DID_NOT_LEARN, TOO_FEW_SEEDS = "underpowered", "did not learn", "too few seeds"


# -- grading ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ClaimGrade:
    """A claim graded on one study: status, effect and its 95 % interval, the test, the seeds.

    ``effect`` is the mean of A − B over the queries (a ratio for ``ratio``); ``p`` the claim's
    one-sided p-value, ``p_corrected`` after the study's correction, ``p_against`` the p-value
    of the opposite finding (also corrected). ``test_status`` is what the corrected t-test alone
    says and ``p_deciding`` the corrected p behind it; ``status`` may be INCONCLUSIVE instead,
    for the ``inconclusive`` reasons (``underpowered``, ``did not learn``, ``too few seeds``).
    """

    claim: Claim
    study: str
    status: str
    dataset: str | None = None
    encoder: str | None = None
    n: int | None = None
    mean_a: float | None = None
    mean_b: float | None = None
    effect: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    p: float | None = None
    p_corrected: float | None = None
    p_against: float | None = None
    seeds: int | None = None
    test: str = ""
    reason: str = ""
    test_status: str | None = None
    p_deciding: float | None = None
    power: float | None = None
    mde: float | None = None
    power_at: float | None = None
    queries_needed: int | None = None
    power_note: str = ""
    inconclusive: tuple[str, ...] = ()
    problems: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    seed_effects: dict[str, float] = field(default_factory=dict)
    robustness: dict[str, Any] = field(default_factory=dict)
    # raw (uncorrected) (p, p_against) of the Wilcoxon and randomisation tests, for _decide
    alternative_p: dict[str, tuple[float, float]] = field(default_factory=dict)


def _interval(diffs: np.ndarray) -> tuple[float, float]:
    mean = float(diffs.mean())
    if len(diffs) < 2 or np.all(diffs == diffs[0]):
        return mean, mean
    half = float(stats.t.ppf(0.975, len(diffs) - 1) * stats.sem(diffs))
    return mean - half, mean + half


def _p_values(kind: str, diffs: np.ndarray, delta: float) -> tuple[float, float]:
    """(p of the claim, p of its opposite) for a paired claim."""
    if kind == "better":
        return one_sided_t(diffs, 0.0, "greater"), one_sided_t(diffs, 0.0, "less")
    if kind == "no_worse":
        return one_sided_t(diffs, delta, "greater"), one_sided_t(diffs, delta, "less")
    # equal: TOST for |A − B| < δ; against: A − B beyond δ on either side (Bonferroni x2).
    p_claim = max(one_sided_t(diffs, delta, "greater"), one_sided_t(diffs, -delta, "less"))
    p_against = min(
        1.0, 2 * min(one_sided_t(diffs, delta, "less"), one_sided_t(diffs, -delta, "greater"))
    )
    return p_claim, p_against


def _find(dataset: str, cell: CellRef, rows: Sequence[Mapping[str, Any]]) -> list[Mapping]:
    return [row for row in rows if row.get("dataset") == dataset and cell.matches(row)]


def _missing(
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
    questions without planted answers (:mod:`reranklab.report.learned`): it did not learn."""
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


def _paired(
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
    p, p_against = _p_values(claim.kind, diffs, claim.delta)
    low, high = _interval(diffs)
    seeds, seed_effects = _seeds(claim, a, b, evidence)
    effect = claim.paper_effect.value if claim.paper_effect else None
    power = paired_power(claim.kind, diffs, alpha, effect, claim.delta)
    if claim.kind == "better" and power.at is not None and a.get("dataset") != claim.dataset:
        # The paper measured its effect on its own data: on a stand-in it is a yardstick only.
        power = replace(power, note=f"power at the paper's effect on {claim.dataset}")
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
        n=len(common),
        mean_a=float(xa.mean()),
        mean_b=float(xb.mean()),
        effect=float(diffs.mean()),
        ci_low=low,
        ci_high=high,
        p=p,
        p_against=p_against,
        seeds=seeds,
        test="one-sided paired t-test" if claim.kind != "equal" else "paired TOST",
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


def _later_epochs(speeds: list[dict[str, Any]]) -> list[float]:
    # BERT-DMN's Table 3 reports a lite model's first epoch apart: reranklab's encode rule does
    # that epoch's encoder pass, so every training epoch of a lite model is a "later" one.
    later = [s for s in speeds if (s.get("epoch") or 0) >= 2] or speeds
    return [float(s["batches_per_s"]) for s in later if s.get("batches_per_s")]


def _ratio(claim: Claim, study: str, a: Mapping, b: Mapping, evidence: Evidence) -> ClaimGrade:
    speed_a, speed_b = _later_epochs(evidence.speeds(a)), _later_epochs(evidence.speeds(b))
    if not speed_a or not speed_b:
        return ClaimGrade(claim, study, NOT_RUN, reason="no recorded epoch timings")
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
        mean_a=fmean(speed_a),
        mean_b=fmean(speed_b),
        effect=ratio,
        test="ratio of mean training batches/s (later epochs)",
        test_status=status,
    )


def _grade_one(
    claim: Claim,
    study: str,
    dataset: str,
    rows: list[Mapping],
    evidence: Evidence,
    alpha: float,
    gate: Mapping[tuple[str, str], Learned] | None = None,
) -> ClaimGrade:
    found_a, found_b = _find(dataset, claim.a, rows), _find(dataset, claim.b, rows)
    if len(found_a) != 1:
        return _missing(claim, study, dataset, "A", claim.a, found_a)
    if len(found_b) != 1:
        return _missing(claim, study, dataset, "B", claim.b, found_b)
    if claim.kind == "ratio":
        grade = _ratio(claim, study, found_a[0], found_b[0], evidence)
    else:
        grade = _paired(claim, study, found_a[0], found_b[0], evidence, alpha, gate)
    return replace(grade, dataset=dataset)


def _datasets(claim: Claim, rows: list[Mapping]) -> list[str]:
    """The claim's dataset and stand-ins (``also_on``) that the study ran; else the paper's."""
    ran = {row.get("dataset") for row in rows}
    return [d for d in (claim.dataset, *claim.also_on) if d in ran] or [claim.dataset]


def _studies_of(claim: Claim, rows: Sequence[Mapping[str, Any]]) -> list[str]:
    return list(
        dict.fromkeys(
            row["study"]
            for row in rows
            if row.get("study") == claim.study or row.get("paper") == claim.paper
        )
    )


def _verdict(p_claim: float, p_against: float, alpha: float) -> str:
    return CONFIRMED if p_claim < alpha else CONTRADICTED if p_against < alpha else NOT_CONFIRMED


def _inconclusive(g: ClaimGrade, test_status: str) -> tuple[str, ...]:
    """Why the evidence cannot decide (see the module docstring for when each applies)."""
    reasons = []
    if g.problems:
        reasons.append(f"{DID_NOT_LEARN}: " + "; ".join(g.problems))
    if g.seeds is not None and g.seeds < g.claim.seeds:
        reasons.append(f"{TOO_FEW_SEEDS}: {g.seeds} seed(s), the claim asks for {g.claim.seeds}")
    if test_status == NOT_CONFIRMED and g.power is not None and g.power < TARGET:
        at = "the paper's effect" if g.claim.kind == "better" else "the margin"
        needs = (
            ""
            if g.queries_needed is None
            else f"; {TARGET:.0%} power at {at} needs ~{g.queries_needed:,} queries"
        )
        reasons.append(
            f"{UNDERPOWERED}: power {g.power:.2f} at {at} {g.power_at:+.3f} (n={g.n}); "
            f"the smallest effect seen with {TARGET:.0%} power is {g.mde:.3f}{needs}"
        )
    return tuple(reasons)


def _robustness(
    tested: list[ClaimGrade], statuses: list[str], alpha: float, correction: str
) -> list[dict[str, Any]]:
    """Each alternative test corrected over the same family: its p (in the direction that
    decided) and whether it gives the same grade as the t-test."""
    out: list[dict[str, Any]] = [{} for _ in tested]
    for name in ("wilcoxon", "randomisation"):
        p_claim = correct([g.alternative_p[name][0] for g in tested], correction, alpha)
        p_against = correct([g.alternative_p[name][1] for g in tested], correction, alpha)
        for i, status in enumerate(statuses):
            verdict = _verdict(p_claim[i], p_against[i], alpha)
            out[i][f"{name}_p"] = p_against[i] if status == CONTRADICTED else p_claim[i]
            out[i][f"{name}_agrees"] = verdict == status
    for entry in out:
        entry["agree"] = entry["wilcoxon_agrees"] and entry["randomisation_agrees"]
    return out


def study_alphas(evidence: Evidence, alpha: float) -> dict[str, float]:
    """Each recorded study's significance level: ``alpha`` divided by the looks its provenance
    says were taken at its claims (``looks``: a study graded on a smaller test set, then re-graded
    on a larger one holding it, spends its alpha over both; Bonferroni over the looks).

    Example:
        >>> study_alphas(Evidence(rows=[], provenance={"s": {"study": "x", "looks": 2}}), 0.05)
        {'x': 0.025}
    """
    return {
        str(p["study"]): alpha / int(p["looks"])
        for p in evidence.provenance.values()
        if p.get("study") and int(p.get("looks") or 1) > 1
    }


def _decide(
    grades: list[ClaimGrade],
    alpha: float,
    correction: str,
    alphas: Mapping[str, float] | None = None,
) -> list[ClaimGrade]:
    """Correct the paired claims' p-values within each study and set their status."""
    out = list(grades)
    for study in dict.fromkeys(g.study for g in grades):
        level = (alphas or {}).get(study, alpha)
        tested = [i for i, g in enumerate(out) if g.study == study and g.p is not None]
        p_claim = correct([out[i].p for i in tested], correction, level)
        p_against = correct([out[i].p_against for i in tested], correction, level)
        statuses = [_verdict(pc, pa, level) for pc, pa in zip(p_claim, p_against, strict=True)]
        robust = _robustness([out[i] for i in tested], statuses, level, correction)
        for k, i in enumerate(tested):
            g, test_status = out[i], statuses[k]
            reasons = _inconclusive(g, test_status)
            out[i] = replace(
                g,
                status=INCONCLUSIVE if reasons else test_status,
                test_status=test_status,
                p_corrected=p_claim[k],
                p_against=p_against[k],
                p_deciding=p_against[k] if test_status == CONTRADICTED else p_claim[k],
                inconclusive=reasons,
                reason="; ".join(reasons),
                robustness=robust[k],
            )
    return out


def grade_claims(
    claims: Sequence[Claim],
    evidence: Evidence,
    alpha: float = 0.05,
    correction: str = "holm",
    paper: str | None = None,
    cross_encoders: Mapping[str, bool] | None = None,
) -> list[ClaimGrade]:
    """Grade every claim (or those of ``paper``) on every given study that runs its paper.

    A claim no given study runs is one NOT RUN line. With ``cross_encoders`` (``{registered
    variant: whether it is a fine-tuned cross-encoder}``, which this layer cannot import), a
    comparison holding a fine-tuned cross-encoder that did not beat its first stage on the
    questions without planted answers is INCONCLUSIVE (did not learn), as the did-each-model-
    learn table decides it (:func:`reranklab.report.learned.learned_rows`).
    """
    gate = (
        None
        if cross_encoders is None
        else {
            (c.study, c.key): c
            for c in learned_rows(evidence, alpha=alpha, cross_encoders=cross_encoders)
        }
    )
    alphas = study_alphas(evidence, alpha)
    grades: list[ClaimGrade] = []
    for claim in claims:
        if paper is not None and claim.paper != paper and claim.study != paper:
            continue
        studies = _studies_of(claim, evidence.rows)
        if not studies:
            grades.append(
                ClaimGrade(
                    claim,
                    claim.study,
                    NOT_RUN,
                    claim.dataset,
                    reason="no given summary runs this paper",
                )
            )
            continue
        for study in studies:
            rows = [row for row in evidence.rows if row.get("study") == study]
            for dataset in _datasets(claim, rows):
                level = alphas.get(study, alpha)
                grades.append(_grade_one(claim, study, dataset, rows, evidence, level, gate))
    return _decide(grades, alpha, correction, alphas)


def counts(grades: Sequence[ClaimGrade]) -> dict[str, int]:
    """``{"CONFIRMED": n, "NOT CONFIRMED": n, "CONTRADICTED": n, "INCONCLUSIVE": n,
    "NOT RUN": n}``."""
    return {status: sum(g.status == status for g in grades) for status in STATUSES}


def power_counts(grades: Sequence[ClaimGrade]) -> dict[str, int]:
    """Of the graded claims (not NOT RUN): how many had power >= 0.8 at the paper's effect (or
    margin), and how many have no power (no paper effect, or a ratio claim).

    Example:
        >>> power_counts([])
        {'graded': 0, 'powered': 0, 'power unknown': 0}
    """
    graded = [g for g in grades if g.status != NOT_RUN]
    return {
        "graded": len(graded),
        "powered": sum(g.power is not None and g.power >= TARGET for g in graded),
        "power unknown": sum(g.power is None for g in graded),
    }


def _power_tally(grades: Sequence[ClaimGrade]) -> str:
    n = power_counts(grades)
    return (
        f"Of the {n['graded']} graded, {n['powered']} had power ≥ {TARGET} at the paper's effect "
        f"(or margin); {n['power unknown']} have no power (no paper effect, or a ratio claim)."
    )


def inconclusive_counts(grades: Sequence[ClaimGrade]) -> dict[str, int]:
    """How many INCONCLUSIVE grades each reason is behind (a grade may have several)."""
    reasons = (DID_NOT_LEARN, TOO_FEW_SEEDS, UNDERPOWERED)
    return {
        reason: sum(any(r.startswith(reason) for r in g.inconclusive) for g in grades)
        for reason in reasons
    }


# -- rendering ----------------------------------------------------------------------------------


def _f(value: float | None, digits: int = 3, signed: bool = False) -> str:
    if value is None:
        return "–"
    return f"{value:+.{digits}f}" if signed else f"{value:.{digits}f}"


def _p(value: float | None) -> str:
    if value is None:
        return "–"
    return "<0.001" if value < 0.001 else f"{value:.3f}"


def dataset_text(g: ClaimGrade) -> str:
    """The dataset graded on, and the paper's where a stand-in took its place."""
    dataset = g.dataset or g.claim.dataset
    return dataset if dataset == g.claim.dataset else f"{dataset} (for {g.claim.dataset})"


def effect_text(g: ClaimGrade) -> str:
    """``+0.041 [+0.012, +0.070]`` (A − B and its 95 % interval), or ``3.21×`` for a ratio."""
    if g.effect is None:
        return "–"
    if g.claim.kind == "ratio":
        return f"{g.effect:.2f}×"
    return (
        f"{_f(g.effect, signed=True)} [{_f(g.ci_low, signed=True)}, {_f(g.ci_high, signed=True)}]"
    )


def deciding_text(g: ClaimGrade) -> str:
    """The corrected p behind the grade, and which finding's it is when not the claim's."""
    if g.p_deciding is None:
        return "–"
    against = g.test_status == CONTRADICTED
    return _p(g.p_deciding) + (" (against)" if against else "")


def power_text(g: ClaimGrade) -> str:
    """``0.42 (MDE 0.061)``, or ``? (MDE 0.061)`` where the power is unknown."""
    if g.p is None:
        return "–"
    power = "?" if g.power is None else f"{g.power:.2f}"
    return power + ("" if g.mde is None else f" (MDE {g.mde:.3f})")


def seeds_text(g: ClaimGrade) -> str:
    """``1/3`` (seeds graded / asked for) and each seed's effect where there are several."""
    if g.seeds is None:
        return "–"
    text = f"{g.seeds}/{g.claim.seeds}"
    if g.seed_effects:
        text += " (" + ", ".join(f"{s}: {v:+.3f}" for s, v in g.seed_effects.items()) + ")"
    return text


def robustness_text(g: ClaimGrade) -> str:
    """``W ✓ R ✓``: whether the Wilcoxon (W) and randomisation (R) tests give the same grade."""
    if not g.robustness:
        return "–"
    mark = {True: "✓", False: "✗"}
    return (
        f"W {mark[g.robustness['wilcoxon_agrees']]} R {mark[g.robustness['randomisation_agrees']]}"
    )


def _status_text(g: ClaimGrade) -> str:
    if g.status == INCONCLUSIVE and g.test_status:
        return f"{INCONCLUSIVE} (t-test: {g.test_status})"
    return g.status


def _compact(notes: Sequence[str]) -> list[str]:
    """``X not recorded for k1``, ``X not recorded for k2`` -> ``X not recorded (k1, k2)``."""
    missing: dict[str, list[str]] = {}
    rest = []
    for note in dict.fromkeys(notes):
        what, found, key = note.partition(" not recorded for ")
        if found:
            missing.setdefault(what, []).append(key)
        else:
            rest.append(note)
    return [f"{what} not recorded ({', '.join(keys)})" for what, keys in missing.items()] + rest


def _notes(g: ClaimGrade) -> str:
    parts = [g.reason] if g.status != INCONCLUSIVE and g.reason else []
    if g.status == INCONCLUSIVE:
        parts += list(g.inconclusive)
    if g.power_note and g.p is not None:
        parts.append(g.power_note)
    parts += _compact(g.notes)
    if g.claim.stand_in:
        parts.append(f"stand-in: {g.claim.stand_in}")
    if g.claim.note:
        parts.append(g.claim.note)
    return "; ".join(parts)


def format_text(grades: Sequence[ClaimGrade]) -> str:
    """One line per graded claim: status, study, id, the comparison, effect, p, power, why."""
    lines = []
    for g in grades:
        c = g.claim
        text = (
            f"{_status_text(g):<13}  {g.study}  {c.id}  {dataset_text(g)} {c.measure or ''} "
            f"{c.statement}"
        )
        if g.effect is not None:
            text += f"  effect {effect_text(g)}"
        if g.p_deciding is not None:
            text += (
                f"  p(corrected) {deciding_text(g)}  power {power_text(g)}  n={g.n}  "
                f"seeds={seeds_text(g)}  other tests {robustness_text(g)}"
            )
        notes = _notes(g)
        if notes:
            text += f"  ({notes})"
        lines.append(text)
    tally = ", ".join(f"{n} {s}" for s, n in counts(grades).items())
    lines.append(f"{len(grades)} claims: {tally}")
    return "\n".join(lines) + "\n"


_LEGEND = (
    "CONFIRMED: the claim's one-sided paired t-test (TOST for `equal`) rejects its null after "
    "Holm's correction over the study's claims; CONTRADICTED: the opposite finding is "
    "significant (the p shown is its corrected p, marked *against*); NOT CONFIRMED: neither, "
    "with power ≥ 0.8 at the paper's own effect (or at the margin); INCONCLUSIVE: the evidence "
    "cannot decide: a fine-tuned cell did not learn (not above a random ordering of its "
    "candidates, or its training loss did not fall) or ran fewer seeds than the claim asks "
    "(whatever the p), or the test was underpowered and decided nothing (its note says how "
    "many queries 80 % power would take); NOT RUN: a cell of the "
    "claim is missing, or the two cells were scored on different queries. Power: the t-test's "
    "at the paper's effect (`?`: the claim gives none), MDE: the effect it finds with 80 % "
    "power. Seeds: graded/asked (each seed's effect). Other tests: whether the Wilcoxon "
    "signed-rank (W) and paired randomisation (R) tests, corrected alike, give the same grade. "
    "A ratio claim is graded on the measured training speeds."
)


def format_markdown(grades: Sequence[ClaimGrade], title: str | None = "Claims") -> str:
    """The claims table (regression.md's second part, the README's claims table)."""
    header = [
        "status",
        "study",
        "claim",
        "dataset",
        "measure",
        "comparison",
        "A",
        "B",
        "effect (A − B) [95 % CI]",
        "p (Holm)",
        "power (MDE)",
        "n",
        "seeds",
        "other tests",
        "encoder",
        "note",
    ]
    lines = [f"# {title}", ""] if title else []
    lines += [
        f"{len(grades)} claims: "
        + ", ".join(f"{n} {s}" for s, n in counts(grades).items())
        + ". "
        + _power_tally(grades),
        "",
        "| " + " | ".join(header) + " |",
        "|" + "|".join(["---"] * 6 + ["---:"] * 8 + ["---"] * 2) + "|",
    ]
    for g in grades:
        c = g.claim
        cells = [
            f"**{g.status}**" if g.status in (CONFIRMED, CONTRADICTED) else _status_text(g),
            g.study,
            f"{c.id}: “{c.claim}” ({c.cite})",
            dataset_text(g),
            c.measure or "batches/s",
            c.statement,
            _f(g.mean_a),
            _f(g.mean_b),
            effect_text(g),
            deciding_text(g),
            power_text(g),
            "–" if g.n is None else str(g.n),
            seeds_text(g),
            robustness_text(g),
            g.encoder or "–",
            _notes(g),
        ]
        lines.append("| " + " | ".join(x.replace("|", "\\|") for x in cells) + " |")
    lines += ["", _LEGEND, ""]
    return "\n".join(lines)


def to_json(grades: Sequence[ClaimGrade]) -> dict[str, Any]:
    """``{"counts": {...}, "inconclusive": {reason: n}, "power": {...}, "claims": [...]}`` for
    programs (:func:`power_counts`)."""
    return {
        "counts": counts(grades),
        "inconclusive": inconclusive_counts(grades),
        "power": power_counts(grades),
        "claims": [_grade_json(g) for g in grades],
    }


def _grade_json(g: ClaimGrade) -> dict[str, Any]:
    c = g.claim
    effect = c.paper_effect
    return {
        "status": g.status,
        "test_status": g.test_status,
        "reason": g.reason,
        "inconclusive": list(g.inconclusive),
        "study": g.study,
        "id": c.id,
        "paper": c.paper,
        "claim": c.claim,
        "source": c.source,
        "cite": c.cite,
        "cites": list(c.cites),
        "stand_in": c.stand_in or None,
        "kind": c.kind,
        "dataset": g.dataset or c.dataset,
        "paper_dataset": c.dataset,
        "measure": c.measure,
        "a": str(c.a),
        "b": str(c.b),
        "delta": c.delta,
        "at_least": c.at_least,
        "statement": c.statement,
        "paper_effect": None
        if effect is None
        else {"value": effect.value, "a": effect.a, "b": effect.b, "cite": effect.cite},
        "encoder": g.encoder,
        "n": g.n,
        "mean_a": g.mean_a,
        "mean_b": g.mean_b,
        "effect": g.effect,
        "ci_low": g.ci_low,
        "ci_high": g.ci_high,
        "p": g.p,
        "p_corrected": g.p_corrected,
        "p_against": g.p_against,
        "p_deciding": g.p_deciding,
        "test": g.test,
        "power": g.power,
        "power_at": g.power_at,
        "mde": g.mde,
        "queries_needed": g.queries_needed,
        "power_note": g.power_note or None,
        "seeds": {"graded": g.seeds, "asked": c.seeds, "effects": dict(g.seed_effects)},
        "did_not_learn": list(g.problems),
        "robustness": dict(g.robustness) or None,
        "notes": list(dict.fromkeys(g.notes)),
        "published": list(c.published),
    }


# -- what was graded ----------------------------------------------------------------------------


def _span(values: Sequence[int], unit: str) -> str:
    low, high = min(values), max(values)
    return f"{low} {unit}" if low == high else f"{low}–{high} {unit}"


def describe_evidence(grades: Sequence[ClaimGrade], evidence: Evidence) -> str:
    """One sentence saying what the claims were graded on: the studies, encoder, data, training
    (epochs and optimiser steps per model) and seeds, from the graded rows themselves.

    Example:
        >>> describe_evidence([], Evidence(rows=[]))
        'No claim was graded on results.'
    """
    studies = list(dict.fromkeys(g.study for g in grades if g.p is not None or g.effect))
    rows = [r for r in evidence.rows if r.get("study") in studies]
    if not rows:
        return "No claim was graded on results."
    trained = [r for r in rows if not r.get("first_stage")]
    encoders = sorted({str(r["encoder"]) for r in trained if r.get("encoder")})
    data = []
    for dataset in dict.fromkeys(str(r.get("dataset")) for r in rows):
        counts_ = [
            int(r["n_queries"]) for r in rows if r.get("dataset") == dataset and r.get("n_queries")
        ]
        data.append(dataset + (f" ({_span(counts_, 'test queries')})" if counts_ else ""))
    epochs = [int(r["epochs"]) for r in trained if r.get("epochs")]
    steps = _steps(trained, evidence)
    seeds = [int(r.get("n_seeds") or 1) for r in trained]
    asked = sorted({g.claim.seeds for g in grades if g.p is not None})
    parts = [f"encoder {', '.join(encoders) or 'none (first stages only)'}"]
    parts.append(f"data {', '.join(data)}")
    if epochs or steps:
        training = [_span(epochs, "epochs")] if epochs else []
        training += [_span(steps, "optimiser steps per model")] if steps else []
        parts.append("training " + ", ".join(training))
    if seeds:
        parts.append(
            _span(seeds, "seed(s)")
            + " per cell"
            + (f" (the claims ask for {'/'.join(map(str, asked))})" if asked else "")
        )
    graded = sum(
        g.p is not None or g.claim.kind == "ratio" and g.effect is not None for g in grades
    )
    return (
        f"{graded} claim grades over {len(studies)} {'study' if len(studies) == 1 else 'studies'} "
        f"({', '.join(studies)}): " + "; ".join(parts) + "."
    )


def _steps(rows: Sequence[Mapping[str, Any]], evidence: Evidence) -> list[int]:
    """Optimiser steps per model: the training records', else the epoch timings' sum."""
    steps = []
    for row in rows:
        trainings = evidence.trainings(row) or []
        found = [int(t["steps"]) for t in trainings if t.get("steps")]
        if not found:
            by_model: dict[tuple, int] = {}
            for epoch in evidence.speeds(row):
                model = (epoch.get("fold"), epoch.get("seed"))
                by_model[model] = by_model.get(model, 0) + int(epoch.get("steps") or 0)
            found = [s for s in by_model.values() if s]
        steps += found
    return steps
