"""A claim's grade: its status, the test behind it, and the tallies over many grades.

The statuses (CONFIRMED, NOT CONFIRMED, CONTRADICTED, INCONCLUSIVE, NOT RUN) and what decides
each are described in :mod:`reranklab.grading.claims`; this module holds the value a grade is
and its JSON form (``reranklab regress --json``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from reranklab.grading.claim_file import Claim
from reranklab.grading.power import TARGET
from reranklab.grading.seed_test import SeedTest

CONFIRMED, NOT_CONFIRMED, CONTRADICTED, INCONCLUSIVE, NOT_RUN = (
    "CONFIRMED",
    "NOT CONFIRMED",
    "CONTRADICTED",
    "INCONCLUSIVE",
    "NOT RUN",
)
STATUSES = (CONFIRMED, NOT_CONFIRMED, CONTRADICTED, INCONCLUSIVE, NOT_RUN)
UNDERPOWERED, DID_NOT_LEARN, TOO_FEW_SEEDS = "underpowered", "did not learn", "too few seeds"
POWER_UNKNOWN = "power unknown"


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
    encoder_b: str | None = None
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
    power_level: float | None = None
    inconclusive: tuple[str, ...] = ()
    problems: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    seed_effects: dict[str, float] = field(default_factory=dict)
    robustness: dict[str, Any] = field(default_factory=dict)
    # the test behind p (its mean, standard error, degrees of freedom), for the power at the
    # level that decides; the row keys of A and B, so that one test is counted once a family
    seed_test: SeedTest | None = field(default=None, compare=False, repr=False)
    pair: tuple[str, ...] = ()
    # raw (uncorrected) (p, p_against) of the Wilcoxon and randomisation tests, for _decide
    alternative_p: dict[str, tuple[float, float]] = field(default_factory=dict)


def on_stand_in(g: ClaimGrade) -> bool:
    """Whether the grade rests on a stand-in: a cell graded in place of a side the paper
    compared (``stand_in``), e.g. BM25 for another work's state of the art, or, in a claim about
    the encoders (``encoders``), two other encoders in place of the paper's (MPNet-base against
    MiniLM-L6 for BERT-large against BERT-base)."""
    if g.status == NOT_RUN:
        return False
    return bool(g.claim.stand_in) or encoder_stand_in(g) is not None


def encoder_stand_in(g: ClaimGrade) -> str | None:
    """``MPNet for bert-large-uncased, ...``: the encoders graded in place of those the paper
    compared, where the claim is about its encoders and the grade's are others; else None."""
    paper = g.claim.encoders
    graded = (g.encoder, g.encoder_b)
    if paper is None or g.status == NOT_RUN or graded == paper:
        return None
    return f"{graded[0]} (A) for {paper[0]}, {graded[1]} (B) for {paper[1]}"


def label(g: ClaimGrade) -> str:
    """The status as shown: ``CONFIRMED (stand-in)`` where the grade rests on a stand-in."""
    return f"{g.status} (stand-in)" if on_stand_in(g) else g.status


def counts(grades: Sequence[ClaimGrade]) -> dict[str, int]:
    """``{"CONFIRMED": n, "NOT CONFIRMED": n, "CONTRADICTED": n, "INCONCLUSIVE": n,
    "NOT RUN": n}`` over the grades that rest on no stand-in (:func:`stand_in_counts` has
    the others)."""
    own = [g for g in grades if not on_stand_in(g)]
    return {status: sum(g.status == status for g in own) for status in STATUSES}


def stand_in_counts(grades: Sequence[ClaimGrade]) -> dict[str, int]:
    """The grades that rest on a stand-in, by status (NOT RUN never does), counted apart."""
    apart = [g for g in grades if on_stand_in(g)]
    return {status: sum(g.status == status for g in apart) for status in STATUSES[:-1]}


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


def inconclusive_counts(grades: Sequence[ClaimGrade]) -> dict[str, int]:
    """How many INCONCLUSIVE grades each reason is behind (a grade may have several)."""
    reasons = (DID_NOT_LEARN, TOO_FEW_SEEDS, UNDERPOWERED, POWER_UNKNOWN)
    return {
        reason: sum(any(r.startswith(reason) for r in g.inconclusive) for g in grades)
        for reason in reasons
    }


def to_json(grades: Sequence[ClaimGrade]) -> dict[str, Any]:
    """``{"counts": {...}, "stand_in_counts": {...}, "inconclusive": {reason: n}, "power":
    {...}, "claims": [...]}`` for programs: ``counts`` leaves out the grades that rest on a
    stand-in, which ``stand_in_counts`` counts (each claim's ``label`` says it)."""
    return {
        "counts": counts(grades),
        "stand_in_counts": stand_in_counts(grades),
        "inconclusive": inconclusive_counts(grades),
        "power": power_counts(grades),
        "claims": [_grade_json(g) for g in grades],
    }


def _grade_json(g: ClaimGrade) -> dict[str, Any]:
    c = g.claim
    effect = c.paper_effect
    return {
        "status": g.status,
        "label": label(g),
        "on_stand_in": on_stand_in(g),
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
        "not_run": c.not_run or None,
        "kind": c.kind,
        "dataset": g.dataset or c.dataset,
        "paper_dataset": c.dataset,
        "scored": c.scored,
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
        "encoder_b": g.encoder_b,
        "encoder_stand_in": encoder_stand_in(g),
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
        "power_level": g.power_level,
        "seed_test": _seed_test_json(g),
        "seeds": {"graded": g.seeds, "asked": c.seeds, "effects": dict(g.seed_effects)},
        "did_not_learn": list(g.problems),
        "robustness": dict(g.robustness) or None,
        "notes": list(dict.fromkeys(g.notes)),
        "published": list(c.published),
    }


def _seed_test_json(g: ClaimGrade) -> dict[str, Any] | None:
    t = g.seed_test
    if t is None:
        return None
    return {
        "method": t.method,
        "se": t.se,
        "df": t.df,
        "seeds": t.seeds,
        "queries": t.queries,
        "query_var": t.query_var,
        "seed_var": t.seed_var,
    }
