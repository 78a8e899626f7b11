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
  fall (:mod:`~reranklab.grading.learning`): a comparison of cells that learned nothing says
  nothing about the papers' methods;
- INCONCLUSIVE (too few seeds), whatever its p, when its fine-tuned cells ran fewer seeds than
  the claim asks (``seeds``, default 3): one seed's effect can be the seed's;
- otherwise CONFIRMED or CONTRADICTED when the corrected test decides (the evidence decided);
- INCONCLUSIVE (underpowered) when it decides neither and the test's power at the paper's own
  effect (``better``; at the margin for ``no_worse``/``equal``) is below 0.8
  (:mod:`~reranklab.grading.power`), or INCONCLUSIVE (power unknown) where the claim gives no
  paper effect: NOT CONFIRMED is kept for "powered, and not seen".

The test is seed-aware (:mod:`~reranklab.grading.seed_test`): its variance holds the spread of
the seeds as well as of the queries (every seed's per-query values where recorded, else each
seed's overall effect, conservatively), so an effect must hold across seeds to be seen. The
power and MDE are computed at the level that decides the claim: Holm's step for its p
(:func:`step_levels`), not the uncorrected alpha. Two claims over the same comparison (the same
rows, measure, kind and margin) are one test: it enters the correction once.

Each grade keeps the p that decided it (the claim's corrected p; on a CONTRADICTED or would-be
CONTRADICTED grade the opposite finding's), the power and MDE, each seed's effect where a cell
ran several, and whether the Wilcoxon
signed-rank and the paired randomisation tests, corrected over the same family, give the same
grade as the t-test (:mod:`~reranklab.grading.robustness`). What is not recorded (the
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
from dataclasses import replace
from fnmatch import fnmatchcase
from typing import Any

from reranklab.grading.claim_file import Claim
from reranklab.grading.claim_grade import (
    CONFIRMED,
    CONTRADICTED,
    DID_NOT_LEARN,
    INCONCLUSIVE,
    NOT_CONFIRMED,
    NOT_RUN,
    POWER_UNKNOWN,
    TOO_FEW_SEEDS,
    UNDERPOWERED,
    ClaimGrade,
)
from reranklab.grading.claim_tests import find, missing, paired, power_at, ratio
from reranklab.grading.evidence import Evidence
from reranklab.grading.learned import Learned, learned_rows
from reranklab.grading.power import TARGET
from reranklab.grading.significance import correct

DEFAULT_CLAIMS = "studies/claims.yaml"


def _grade_one(
    claim: Claim,
    study: str,
    dataset: str,
    rows: list[Mapping],
    evidence: Evidence,
    alpha: float,
    gate: Mapping[tuple[str, str], Learned] | None = None,
) -> ClaimGrade:
    found_a, found_b = find(dataset, claim.a, rows), find(dataset, claim.b, rows)
    if len(found_a) != 1:
        return missing(claim, study, dataset, "A", claim.a, found_a)
    if len(found_b) != 1:
        return missing(claim, study, dataset, "B", claim.b, found_b)
    if claim.kind == "ratio":
        grade = ratio(claim, study, found_a[0], found_b[0], evidence)
    else:
        grade = paired(claim, study, found_a[0], found_b[0], evidence, alpha, gate)
    return replace(grade, dataset=dataset)


def _datasets(claim: Claim, rows: list[Mapping]) -> list[str]:
    """The claim's dataset and stand-ins (``also_on``) that the study ran; else the paper's."""
    ran = {row.get("dataset") for row in rows}
    return [d for d in (claim.dataset, *claim.also_on) if d in ran] or [claim.dataset]


def _studies_of(
    claim: Claim, rows: Sequence[Mapping[str, Any]], all_rows: bool = False
) -> list[str]:
    """The given studies of the claim's paper whose rows grade it (any of its rows: ``all_rows``)."""
    return list(
        dict.fromkeys(
            row["study"]
            for row in rows
            if (row.get("study") == claim.study or row.get("paper") == claim.paper)
            and (all_rows or _row_grades(claim, row))
        )
    )


def _row_grades(claim: Claim, row: Mapping[str, Any]) -> bool:
    """Whether the row grades the claim: it was scored on the questions the claim is about
    (test unless a study's ``protocol.<dataset>.scored`` is dev: a dev-scored study grades only
    the dev claims), and its study grades the claim (``paper.claims``, patterns; all if unset).

    Example:
        >>> claim = Claim.from_mapping({"id": "p/large-beats-base", "paper": "p", "claim": "x",
        ...     "source": "stated", "cite": "papers/p.txt:1", "kind": "better", "dataset": "d",
        ...     "measure": "MAP", "a": "large", "b": "base"}, "claim")
        >>> _row_grades(claim, {"claims": ["p/large-*"]}), _row_grades(claim, {"scored": "dev"})
        (True, False)
    """
    patterns = row.get("claims")
    if patterns and not any(fnmatchcase(claim.id, p) for p in patterns):
        return False
    return row.get("scored", "test") == claim.scored


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
            f"; no number of queries reaches {TARGET:.0%} power at {at} with these seeds"
            if g.queries_needed is None
            else f"; {TARGET:.0%} power at {at} needs ~{g.queries_needed:,} queries"
        )
        mde = "none" if g.mde is None else f"{g.mde:.3f}"
        reasons.append(
            f"{UNDERPOWERED}: power {g.power:.2f} at {at} {g.power_at:+.3f} (n={g.n}); "
            f"the smallest effect seen with {TARGET:.0%} power is {mde}{needs}"
        )
    if test_status == NOT_CONFIRMED and g.power is None:
        # NOT CONFIRMED says "powered, and not seen": without a power it cannot say that.
        why = g.power_note.split(";")[0].removeprefix("power unknown: ") or "no paper effect"
        mde = "" if g.mde is None else f"; the smallest effect seen with 80 % power is {g.mde:.3f}"
        reasons.append(f"{POWER_UNKNOWN}: {why}{mde}")
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


def step_levels(p_values: Sequence[float], alpha: float, correction: str) -> list[float]:
    """The level each p is compared with where the correction decides it: Holm's step
    ``alpha / (m − rank + 1)`` (rank among the ascending p-values; tied p-values take the
    stricter step), Bonferroni's ``alpha / m``, or ``alpha`` uncorrected. The power and MDE of
    a claim's test are computed at it.

    Example:
        >>> step_levels([0.01, 0.04, 0.03], 0.05, "holm")
        [0.016666666666666666, 0.05, 0.025]
    """
    m = len(p_values)
    if correction == "none":
        return [alpha] * m
    if correction == "bonferroni":
        return [alpha / m] * m
    return [alpha / (m - sum(q < p for q in p_values)) for p in p_values]


def _same_test(g: ClaimGrade) -> tuple[Any, ...]:
    """What makes two grades one test: the same two rows, measure, kind and margin."""
    return (g.dataset, g.pair, g.claim.measure, g.claim.kind, g.claim.delta)


def _family(out: list[ClaimGrade], study: str) -> tuple[list[int], dict[int, int]]:
    """The study's tested grades, each test once (``tested``), and the repeats: a grade whose
    test is an earlier one's (two claims over the same comparison), mapped to that grade."""
    tested: list[int] = []
    repeats: dict[int, int] = {}
    first: dict[tuple[Any, ...], int] = {}
    for i, g in enumerate(out):
        if g.study != study or g.p is None:
            continue
        key = _same_test(g)
        if key in first:
            repeats[i] = first[key]
        else:
            first[key] = i
            tested.append(i)
    return tested, repeats


def _decide(
    grades: list[ClaimGrade],
    alpha: float,
    correction: str,
    alphas: Mapping[str, float] | None = None,
) -> list[ClaimGrade]:
    """Correct the paired claims' p-values within each study (each test once) and set their
    status, with the power at the level that decides each."""
    out = list(grades)
    for study in dict.fromkeys(g.study for g in grades):
        level = (alphas or {}).get(study, alpha)
        tested, repeats = _family(out, study)
        p_claim = correct([out[i].p for i in tested], correction, level)
        p_against = correct([out[i].p_against for i in tested], correction, level)
        steps = step_levels([out[i].p for i in tested], level, correction)
        statuses = [_verdict(pc, pa, level) for pc, pa in zip(p_claim, p_against, strict=True)]
        robust = _robustness([out[i] for i in tested], statuses, level, correction)
        for k, i in enumerate(tested):
            g, test_status = _at_step(out[i], steps[k]), statuses[k]
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
        for i, j in repeats.items():
            out[i] = _repeat(out[i], out[j])
    return out


def _at_step(g: ClaimGrade, step: float) -> ClaimGrade:
    """The grade with its power and MDE at ``step``, the level that decides it."""
    if g.seed_test is None:
        return g
    power = power_at(g, g.dataset, step)
    note = "; ".join(x for x in (power.note, f"power at the deciding level {step:.4g}") if x)
    return replace(
        g,
        power=power.power,
        mde=power.mde,
        power_at=power.at,
        queries_needed=power.queries,
        power_note=note,
        power_level=step,
    )


def _repeat(g: ClaimGrade, same: ClaimGrade) -> ClaimGrade:
    """A claim whose test is ``same``'s, counted once in the study's correction: its p-values and
    test verdict are ``same``'s; its power (at its own paper effect) and so its status are its own."""
    g = replace(
        _at_step(g, same.power_level or 0.0) if same.power_level else g,
        test_status=same.test_status,
        p_corrected=same.p_corrected,
        p_against=same.p_against,
        p_deciding=same.p_deciding,
        robustness=same.robustness,
    )
    reasons = _inconclusive(g, str(same.test_status))
    note = f"the same test as {same.claim.id}: counted once in the study's correction"
    return replace(
        g,
        status=INCONCLUSIVE if reasons else str(same.test_status),
        inconclusive=reasons,
        reason="; ".join(reasons),
        power_note="; ".join(x for x in (g.power_note, note) if x),
    )


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
    learn table decides it (:func:`reranklab.grading.learned.learned_rows`).
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
        if claim.not_run:  # no faithful comparison can be run: never graded on a substitute
            grades.append(
                ClaimGrade(claim, claim.study, NOT_RUN, claim.dataset, reason=claim.not_run)
            )
            continue
        studies = _studies_of(claim, evidence.rows)
        if not studies:
            # Named after a given study of its paper, if any, so that the view of those studies
            # shows it (a dev claim beside a study that scored test questions only).
            given = _studies_of(claim, evidence.rows, all_rows=True)
            study = given[0] if given else claim.study
            reason = _no_study(claim, given)
            grades.append(ClaimGrade(claim, study, NOT_RUN, claim.dataset, reason=reason))
            continue
        mine = []
        for study in studies:
            rows = [
                row
                for row in evidence.rows
                if row.get("study") == study and _row_grades(claim, row)
            ]
            for dataset in _datasets(claim, rows):
                level = alphas.get(study, alpha)
                mine.append(_grade_one(claim, study, dataset, rows, evidence, level, gate))
        # A study that lacks the cells says NOT RUN only where no other study graded the claim
        # (the paper's main study beside one run for its large-vs-base claims, say).
        graded = [g for g in mine if g.status != NOT_RUN]
        grades += graded or _one_not_run(mine)
    return _decide(grades, alpha, correction, alphas)


def _no_study(claim: Claim, given: list[str]) -> str:
    """Why no given study grades the claim: none runs its paper, none scores the questions it
    is about (dev), or those that run it grade other claims of it (``paper.claims``)."""
    if claim.scored == "dev":
        return (
            "a statement about the dev set: no given summary of this paper scores its dev"
            " questions (protocol.<dataset>.scored: dev)"
        )
    if given:
        studies = ", ".join(given)
        return (
            f"the given studies of this paper ({studies}) grade other claims of it (paper.claims)"
        )
    return "no given summary runs this paper"


def _one_not_run(grades: list[ClaimGrade]) -> list[ClaimGrade]:
    """A claim no study could grade is one NOT RUN line, whose reason names each study's gap.

    Two studies of a paper lacking its cells (its main study and one run for a few of its claims)
    must not count the claim twice.
    """
    if len(grades) <= 1:
        return grades
    reasons = "; ".join(dict.fromkeys(g.reason for g in grades))
    return [replace(grades[0], reason=reasons)]
