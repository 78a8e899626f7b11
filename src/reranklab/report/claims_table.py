"""The claims' grades as text, Markdown (``results/regression.md``, the README's findings) and
the sentence saying what they were graded on (:func:`describe_evidence`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from reranklab.grading.claim_grade import (
    CONFIRMED,
    CONTRADICTED,
    INCONCLUSIVE,
    ClaimGrade,
    counts,
    encoder_stand_in,
    label,
    on_stand_in,
    power_counts,
    stand_in_counts,
)
from reranklab.grading.evidence import Evidence
from reranklab.grading.power import TARGET


def _power_tally(grades: Sequence[ClaimGrade]) -> str:
    n = power_counts(grades)
    return (
        f"Of the {n['graded']} graded, {n['powered']} had power ≥ {TARGET} at the paper's effect "
        f"(or margin); {n['power unknown']} have no power (no paper effect, or a ratio claim)."
    )


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
        return f"{label(g)} (t-test: {g.test_status})"
    return label(g)


def tally(grades: Sequence[ClaimGrade]) -> str:
    """``30 claims: 5 CONFIRMED, ...; on a stand-in (counted apart): 2 CONFIRMED, ...``."""
    own = ", ".join(f"{n} {s}" for s, n in counts(grades).items())
    apart = stand_in_counts(grades)
    text = f"{len(grades)} claims: {own}"
    if any(apart.values()):
        text += "; resting on a stand-in (counted apart): " + ", ".join(
            f"{n} {s}" for s, n in apart.items() if n
        )
    return text


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
    if pair := encoder_stand_in(g):
        parts.append(f"stand-in encoders: {pair}")
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
    lines.append(tally(grades))
    return "\n".join(lines) + "\n"


_LEGEND = (
    "CONFIRMED: the claim's one-sided paired t-test (TOST for `equal`) rejects its null after "
    "Holm's correction over the study's claims; CONTRADICTED: the opposite finding is "
    "significant (the p shown is its corrected p, marked *against*); NOT CONFIRMED: neither, "
    "with power ≥ 0.8 at the paper's own effect (or at the margin); INCONCLUSIVE: the evidence "
    "cannot decide: a fine-tuned cell did not learn (a cross-encoder not above its first stage "
    "without planted answers, another model not above a random ordering, or a training loss "
    "that did not fall) or ran fewer seeds than the claim asks (whatever the p), or the test "
    "decided nothing and was underpowered (its note says how many queries 80 % power would "
    "take) or its power is unknown (no paper effect); NOT RUN: a cell of the claim is missing, "
    "or the two cells were scored on different queries. The t-test's variance includes the "
    "seeds' spread as well as the queries'. Power: at the paper's effect and at the level that decides "
    "(Holm's step; `?`: the claim gives no effect), MDE: the effect found with 80 % power there. "
    "Seeds: graded/asked (each seed's effect). Other tests: whether the Wilcoxon "
    "signed-rank (W) and paired randomisation (R) tests, corrected alike, give the same grade. "
    "A ratio claim is graded on the measured training speeds. (stand-in): the grade compares a "
    "cell that stands in for a side the paper compared (its note says which); such grades are "
    "counted apart from the findings."
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
        tally(grades) + ". " + _power_tally(grades),
        "",
        "| " + " | ".join(header) + " |",
        "|" + "|".join(["---"] * 6 + ["---:"] * 8 + ["---"] * 2) + "|",
    ]
    for g in grades:
        c = g.claim
        cells = [
            f"**{label(g)}**" if g.status in (CONFIRMED, CONTRADICTED) else _status_text(g),
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


# -- what was graded ----------------------------------------------------------------------------


def _span(values: Sequence[int], unit: str) -> str:
    low, high = min(values), max(values)
    return f"{low} {unit}" if low == high else f"{low}–{high} {unit}"


def describe_evidence(grades: Sequence[ClaimGrade], evidence: Evidence) -> str:
    """One sentence saying what the claims were graded on: the studies, encoder, data, training
    (epochs and optimiser steps per model), seeds, input lengths against the papers', the first
    stages (depth, recall, planted answers) and how many grades rest on a stand-in, from the
    graded rows themselves.

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
        spans = []
        for scored in ("test", "dev"):  # a study may score dev questions (protocol.scored)
            counts_ = [
                int(r["n_queries"])
                for r in rows
                if r.get("dataset") == dataset
                and r.get("n_queries")
                and r.get("scored", "test") == scored
            ]
            spans += [_span(counts_, f"{scored} queries")] if counts_ else []
        data.append(dataset + (f" ({'; '.join(spans)})" if spans else ""))
    epochs = [int(r["epochs"]) for r in trained if r.get("epochs")]
    steps = _steps(trained, evidence)
    seeds = [int(r.get("n_seeds") or 1) for r in trained]
    asked = sorted({g.claim.seeds for g in grades if g.p is not None})
    parts = [f"encoder {', '.join(encoders) or 'none (first stages only)'}"]
    parts.append(f"data {', '.join(data)}")
    if epochs or steps:
        training = [_span(epochs, "epochs")] if epochs else []
        training += [_span(steps, "optimiser steps per model")] if steps else []
        training += _train_questions(trained, evidence)
        parts.append("training " + ", ".join(training))
    if seeds:
        parts.append(
            _span(seeds, "seed(s)")
            + " per cell"
            + (f" (the claims ask for {'/'.join(map(str, asked))})" if asked else "")
        )
    parts += _lengths(grades, trained)
    parts += _first_stages(rows)
    graded = sum(
        g.p is not None or g.claim.kind == "ratio" and g.effect is not None for g in grades
    )
    apart = sum(on_stand_in(g) for g in grades)
    parts.append(
        f"{apart} of the {graded} grades rest on a stand-in for a side the paper compared "
        "(counted apart)"
    )
    return (
        f"{graded} claim grades over {len(studies)} {'study' if len(studies) == 1 else 'studies'} "
        f"({', '.join(studies)}): " + "; ".join(parts) + "."
    )


def _lengths(grades: Sequence[ClaimGrade], trained: Sequence[Mapping[str, Any]]) -> list[str]:
    """``inputs of 64–256 word pieces (the papers': 256–512)``."""
    ours = [int(r["max_length"]) for r in trained if r.get("max_length")]
    if not ours:
        return []
    theirs = [g.claim.paper_max_length for g in grades if g.p is not None or g.effect]
    known = [n for n in theirs if n]
    text = _span(ours, "word pieces a pair")
    return [
        f"inputs of {text}"
        + (f" (the papers': {_span(known, '')})".replace(" )", ")") if known else "")
    ]


def _first_stages(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """``first stages: insuranceqa bm25 top 20 (recall 0.47; answers planted in 0 of 500)``."""
    out = []
    for row in rows:
        if not row.get("first_stage"):
            continue
        text = f"{row.get('dataset')} {row.get('variant')}"
        if row.get("depth"):
            text += f" top {row['depth']}"
        facts = []
        if row.get("recall_at_depth") is not None:
            facts.append(f"recall {float(row['recall_at_depth']):.2f}")
        if row.get("n_planted") is not None:
            facts.append(f"answers planted in {row['n_planted']} of {row.get('n_queries')}")
        out.append(text + (f" ({'; '.join(facts)})" if facts else ""))
    return ["first stages: " + ", ".join(dict.fromkeys(out))] if out else []


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


def _train_questions(rows: Sequence[Mapping[str, Any]], evidence: Evidence) -> list[str]:
    """``400–3000 training questions a model (recorded for 12 of 24 models)``: the distinct
    questions of each model's examples, as its training record gives them (records made before
    they were kept have none)."""
    records = [
        t for row in rows for t in evidence.trainings(row) or [] if t.get("fine_tuned", True)
    ]
    known = [int(t["train_queries"]) for t in records if t.get("train_queries")]
    if not known:
        return []
    text = _span(known, "training questions a model")
    if len(known) < len(records):
        text += f" (recorded for {len(known)} of {len(records)} models)"
    return [text]
