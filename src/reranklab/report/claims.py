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

A claim is a comparison, so it can be checked on data the paper did not use: ``also_on`` names
stand-in datasets (WikiQA for WikiPassageQA, say), graded wherever a study ran them; the grade
says which dataset it was graded on.

The paired tests of one study's claims form one family: their p-values are Holm-corrected
(``statsmodels``' ``multipletests``) at the file's ``alpha``. A claim is graded on every given
study that runs its paper (the paper's own study, or one naming it: a MiniLM replication), with
whatever encoder that study used: a finding either holds with it or not. NOT RUN says which
cell is missing.

Example:
    >>> claim = Claim.from_mapping({"id": "p/x", "paper": "p", "claim": "A beats B",
    ...     "cite": "papers/p.txt:1", "kind": "better", "dataset": "d", "measure": "MAP",
    ...     "a": {"variant": "a"}, "b": {"variant": "bm25"}}, "claims.yaml claim 0")
    >>> rows = [{"study": "p", "dataset": "d", "variant": "bm25", "key": "d/bm25"},
    ...         {"study": "p", "dataset": "d", "variant": "a", "key": "d/a/L64"}]
    >>> values = [{"q1": {"MAP": 0.1}, "q2": {"MAP": 0.2}, "q3": {"MAP": 0.3}},
    ...           {"q1": {"MAP": 0.8}, "q2": {"MAP": 0.7}, "q3": {"MAP": 0.9}}]
    >>> evidence = Evidence(rows, {id(r): v for r, v in zip(rows, values)})
    >>> [(g.status, round(g.effect, 2)) for g in grade_claims([claim], evidence)]
    [('CONFIRMED', 0.6)]
"""

from __future__ import annotations

import math
import os
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from statistics import fmean
from typing import Any, Literal

import numpy as np
import yaml
from scipy import stats

from reranklab.errors import FormatError
from reranklab.report.evidence import Evidence
from reranklab.report.regress import MEASURES
from reranklab.report.significance import correct

CONFIRMED, NOT_CONFIRMED, CONTRADICTED, NOT_RUN = (
    "CONFIRMED",
    "NOT CONFIRMED",
    "CONTRADICTED",
    "NOT RUN",
)
STATUSES = (CONFIRMED, NOT_CONFIRMED, CONTRADICTED, NOT_RUN)
KINDS = ("better", "no_worse", "equal", "ratio")
DEFAULT_CLAIMS = "studies/claims.yaml"
Kind = Literal["better", "no_worse", "equal", "ratio"]

_REQUIRED = ("id", "paper", "claim", "cite", "kind", "dataset", "a", "b")
_OPTIONAL = ("study", "measure", "delta", "at_least", "published", "note", "seeds", "also_on")
_CELL_KEYS = ("variant", "max_length", "model")


@dataclass(frozen=True)
class CellRef:
    """One side of a claim: a variant (or ``bm25``/``pool``), optionally its length and encoder."""

    variant: str
    max_length: int | None = None
    model: str | None = None

    def matches(self, row: Mapping[str, Any]) -> bool:
        if row.get("variant") != self.variant:
            return False
        if self.max_length is not None and row.get("max_length") != self.max_length:
            return False
        return self.model is None or row.get("first_stage") or row.get("encoder") == self.model

    def __str__(self) -> str:
        text = self.variant + ("" if self.max_length is None else f"-L{self.max_length}")
        return text + (f" [{self.model}]" if self.model else "")


@dataclass(frozen=True)
class Claim:
    """One finding of a paper, as a comparison of two cells (see the module docstring)."""

    id: str
    paper: str
    study: str
    claim: str
    cite: str
    kind: Kind
    dataset: str
    a: CellRef
    b: CellRef
    measure: str | None = None
    delta: float = 0.0
    at_least: float = 1.0
    seeds: int = 1
    published: tuple[str, ...] = ()
    note: str = ""
    also_on: tuple[str, ...] = ()

    @classmethod
    def from_mapping(cls, raw: Any, origin: str) -> Claim:
        """A claim from its YAML mapping; ``origin`` names it in errors (file and index)."""
        if not isinstance(raw, Mapping):
            raise ValueError(f"{origin}: expected a mapping of keys")
        for key in raw:
            if key not in (*_REQUIRED, *_OPTIONAL):
                raise ValueError(
                    f"{origin}, key {key}: unknown key (allowed: {', '.join(_REQUIRED + _OPTIONAL)})"
                )
        for key in _REQUIRED:
            if raw.get(key) in (None, ""):
                raise ValueError(f"{origin}, key {key}: missing")
        kind = raw["kind"]
        if kind not in KINDS:
            raise ValueError(
                f"{origin}, key kind: expected one of {', '.join(KINDS)}, got {kind!r}"
            )
        measure = raw.get("measure")
        if kind != "ratio" and measure not in MEASURES:
            raise ValueError(
                f"{origin}, key measure: expected one of {', '.join(MEASURES)}, got {measure!r}"
            )
        delta = raw.get("delta", 0.0)
        if kind in ("no_worse", "equal") and not (isinstance(delta, (int, float)) and delta > 0):
            raise ValueError(f"{origin}, key delta: a {kind} claim needs a margin delta > 0")
        return cls(
            id=str(raw["id"]),
            paper=str(raw["paper"]),
            study=str(raw.get("study") or raw["paper"]),
            claim=str(raw["claim"]).strip(),
            cite=str(raw["cite"]),
            kind=kind,
            dataset=str(raw["dataset"]),
            a=_cell(raw["a"], f"{origin}, key a"),
            b=_cell(raw["b"], f"{origin}, key b"),
            measure=measure,
            delta=float(delta),
            at_least=float(raw.get("at_least", 1.0)),
            seeds=int(raw.get("seeds", 1)),
            published=tuple(raw.get("published") or ()),
            note=str(raw.get("note") or "").strip(),
            also_on=tuple(raw.get("also_on") or ()),
        )

    @property
    def statement(self) -> str:
        """``A > B``, ``A ≥ B − 0.02``, ``|A − B| ≤ 0.02`` or ``A/B ≥ 1.5``, in cell names."""
        a, b = str(self.a), str(self.b)
        return {
            "better": f"{a} > {b}",
            "no_worse": f"{a} ≥ {b} − {self.delta:g}",
            "equal": f"|{a} − {b}| ≤ {self.delta:g}",
            "ratio": f"{a} / {b} ≥ {self.at_least:g} (batches/s)",
        }[self.kind]


def _cell(raw: Any, origin: str) -> CellRef:
    if isinstance(raw, str):
        return CellRef(raw)
    if not isinstance(raw, Mapping) or not raw.get("variant"):
        raise ValueError(f"{origin}: expected a variant name or {{variant, max_length, model}}")
    unknown = [k for k in raw if k not in _CELL_KEYS]
    if unknown:
        raise ValueError(f"{origin}: unknown key {unknown[0]} (allowed: {', '.join(_CELL_KEYS)})")
    return CellRef(str(raw["variant"]), raw.get("max_length"), raw.get("model"))


@dataclass(frozen=True)
class ClaimsFile:
    """``studies/claims.yaml``: the level, the correction and the claims."""

    alpha: float
    correction: Literal["holm", "bonferroni", "none"]
    claims: list[Claim] = field(default_factory=list)


def load_claims(path: str | os.PathLike[str]) -> ClaimsFile:
    """Read and validate a claims file.

    Raises:
        FormatError: naming the file, the claim's index and the key at fault.
    """
    path = Path(path)
    try:
        document = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise FormatError(path, None, "claims file does not exist") from None
    except yaml.YAMLError as exc:
        raise FormatError(path, None, f"invalid YAML: {exc}") from None
    if not isinstance(document, Mapping) or document.get("kind") != "claims":
        raise FormatError(path, None, "expected a mapping with kind: claims and claims: [...]")
    claims, seen = [], set()
    for index, raw in enumerate(document.get("claims") or []):
        try:
            claim = Claim.from_mapping(raw, f"claim {index}")
        except ValueError as exc:
            raise FormatError(path, None, str(exc)) from None
        if claim.id in seen:
            raise FormatError(path, None, f"claim {index}, key id: {claim.id} is listed twice")
        seen.add(claim.id)
        claims.append(claim)
    correction = document.get("correction", "holm")
    if correction not in ("holm", "bonferroni", "none"):
        raise FormatError(path, None, "key correction: expected holm, bonferroni or none")
    return ClaimsFile(float(document.get("alpha", 0.05)), correction, claims)


# -- grading ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ClaimGrade:
    """A claim graded on one study: status, effect and its 95 % interval, the test, the seeds.

    ``effect`` is the mean of A − B over the queries both count (a ratio for ``ratio``);
    ``p`` the claim's one-sided p-value, ``p_corrected`` after the study's correction,
    ``p_against`` the p-value of the opposite finding (also corrected).
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


def _one_sided(diffs: np.ndarray, shift: float, alternative: str) -> float:
    """p of H1 ``mean(diffs) + shift`` > 0 (``greater``) or < 0 (``less``); exact when constant."""
    values = diffs + shift
    if np.all(values == values[0]):
        holds = values[0] > 0 if alternative == "greater" else values[0] < 0
        return 0.0 if holds else 1.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        p = float(stats.ttest_1samp(values, 0.0, alternative=alternative).pvalue)
    return 1.0 if math.isnan(p) else p


def _interval(diffs: np.ndarray) -> tuple[float, float]:
    mean = float(diffs.mean())
    if len(diffs) < 2 or np.all(diffs == diffs[0]):
        return mean, mean
    half = float(stats.t.ppf(0.975, len(diffs) - 1) * stats.sem(diffs))
    return mean - half, mean + half


def _p_values(kind: str, diffs: np.ndarray, delta: float) -> tuple[float, float]:
    """(p of the claim, p of its opposite) for a paired claim."""
    if kind == "better":
        return _one_sided(diffs, 0.0, "greater"), _one_sided(diffs, 0.0, "less")
    if kind == "no_worse":
        return _one_sided(diffs, delta, "greater"), _one_sided(diffs, delta, "less")
    # equal: TOST for |A − B| < δ; against: A − B beyond δ on either side (Bonferroni x2).
    p_claim = max(_one_sided(diffs, delta, "greater"), _one_sided(diffs, -delta, "less"))
    p_against = min(
        1.0, 2 * min(_one_sided(diffs, delta, "less"), _one_sided(diffs, -delta, "greater"))
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


def _paired(claim: Claim, study: str, a: Mapping, b: Mapping, evidence: Evidence) -> ClaimGrade:
    values_a, values_b = evidence.queries(a), evidence.queries(b)
    if values_a is None or values_b is None:
        return ClaimGrade(claim, study, NOT_RUN, reason="per-query values are not recorded")
    common = sorted(
        q
        for q in set(values_a) & set(values_b)
        if values_a[q].get(claim.measure) is not None and values_b[q].get(claim.measure) is not None
    )
    if len(common) < 2:
        return ClaimGrade(claim, study, NOT_RUN, reason=f"{len(common)} queries in common")
    xa = np.array([float(values_a[q][claim.measure]) for q in common])
    xb = np.array([float(values_b[q][claim.measure]) for q in common])
    diffs = xa - xb
    p, p_against = _p_values(claim.kind, diffs, claim.delta)
    low, high = _interval(diffs)
    seeds = min(int(a.get("n_seeds") or 1), int(b.get("n_seeds") or 1))
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
    )


def _grade_one(
    claim: Claim, study: str, dataset: str, rows: list[Mapping], evidence: Evidence
) -> ClaimGrade:
    found_a, found_b = _find(dataset, claim.a, rows), _find(dataset, claim.b, rows)
    if len(found_a) != 1:
        return _missing(claim, study, dataset, "A", claim.a, found_a)
    if len(found_b) != 1:
        return _missing(claim, study, dataset, "B", claim.b, found_b)
    if claim.kind == "ratio":
        grade = _ratio(claim, study, found_a[0], found_b[0], evidence)
    else:
        grade = _paired(claim, study, found_a[0], found_b[0], evidence)
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


def _decide(grades: list[ClaimGrade], alpha: float, correction: str) -> list[ClaimGrade]:
    """Correct the paired claims' p-values within each study and set their status."""
    out = list(grades)
    for study in dict.fromkeys(g.study for g in grades):
        tested = [i for i, g in enumerate(out) if g.study == study and g.p is not None]
        p_claim = correct([out[i].p for i in tested], correction, alpha)
        p_against = correct([out[i].p_against for i in tested], correction, alpha)
        for i, pc, pa in zip(tested, p_claim, p_against, strict=True):
            status = CONFIRMED if pc < alpha else CONTRADICTED if pa < alpha else NOT_CONFIRMED
            reason = (
                ""
                if out[i].claim.seeds <= (out[i].seeds or 1)
                else (f"{out[i].seeds} seed(s), the claim asks for {out[i].claim.seeds}")
            )
            out[i] = replace(out[i], status=status, p_corrected=pc, p_against=pa, reason=reason)
    return out


def grade_claims(
    claims: Sequence[Claim],
    evidence: Evidence,
    alpha: float = 0.05,
    correction: str = "holm",
    paper: str | None = None,
) -> list[ClaimGrade]:
    """Grade every claim (or those of ``paper``) on every given study that runs its paper.

    A claim no given study runs is one NOT RUN line.
    """
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
                grades.append(_grade_one(claim, study, dataset, rows, evidence))
    return _decide(grades, alpha, correction)


def counts(grades: Sequence[ClaimGrade]) -> dict[str, int]:
    """``{"CONFIRMED": n, "NOT CONFIRMED": n, "CONTRADICTED": n, "NOT RUN": n}``."""
    return {status: sum(g.status == status for g in grades) for status in STATUSES}


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


def format_text(grades: Sequence[ClaimGrade]) -> str:
    """One line per graded claim: status, study, id, the comparison, effect, p, why."""
    lines = []
    for g in grades:
        c = g.claim
        text = (
            f"{g.status:<13}  {g.study}  {c.id}  {dataset_text(g)} {c.measure or ''} {c.statement}"
        )
        if g.effect is not None:
            text += f"  effect {effect_text(g)}"
        if g.p_corrected is not None:
            text += f"  p(corrected) {_p(g.p_corrected)}  n={g.n}  seeds={g.seeds}"
        if g.reason:
            text += f"  ({g.reason})"
        lines.append(text)
    tally = ", ".join(f"{n} {s}" for s, n in counts(grades).items())
    lines.append(f"{len(grades)} claims: {tally}")
    return "\n".join(lines) + "\n"


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
        "n",
        "seeds",
        "encoder",
        "note",
    ]
    lines = [f"# {title}", ""] if title else []
    lines += [
        f"{len(grades)} claims: " + ", ".join(f"{n} {s}" for s, n in counts(grades).items()) + ".",
        "",
        "| " + " | ".join(header) + " |",
        "|" + "|".join(["---"] * 6 + ["---:"] * 6 + ["---"] * 2) + "|",
    ]
    for g in grades:
        c = g.claim
        cells = [
            f"**{g.status}**" if g.status in (CONFIRMED, CONTRADICTED) else g.status,
            g.study,
            f"{c.id}: “{c.claim}” ({c.cite})",
            dataset_text(g),
            c.measure or "batches/s",
            c.statement,
            _f(g.mean_a),
            _f(g.mean_b),
            effect_text(g),
            _p(g.p_corrected),
            "–" if g.n is None else str(g.n),
            "–" if g.seeds is None else str(g.seeds),
            g.encoder or "–",
            "; ".join(x for x in (g.reason, c.note) if x),
        ]
        lines.append("| " + " | ".join(x.replace("|", "\\|") for x in cells) + " |")
    lines += [
        "",
        "CONFIRMED: the claim's one-sided paired t-test (TOST for `equal`) rejects its null "
        "after Holm's correction over the study's claims; CONTRADICTED: the opposite finding "
        "is significant; NOT CONFIRMED: neither; NOT RUN: a cell of the claim is missing. "
        "A ratio claim is graded on the measured training speeds.",
        "",
    ]
    return "\n".join(lines)


def to_json(grades: Sequence[ClaimGrade]) -> dict[str, Any]:
    """``{"counts": {...}, "claims": [...]}`` for programs."""
    return {
        "counts": counts(grades),
        "claims": [
            {
                "status": g.status,
                "study": g.study,
                "id": g.claim.id,
                "paper": g.claim.paper,
                "claim": g.claim.claim,
                "cite": g.claim.cite,
                "kind": g.claim.kind,
                "dataset": g.dataset or g.claim.dataset,
                "paper_dataset": g.claim.dataset,
                "measure": g.claim.measure,
                "a": str(g.claim.a),
                "b": str(g.claim.b),
                "delta": g.claim.delta,
                "at_least": g.claim.at_least,
                "statement": g.claim.statement,
                "encoder": g.encoder,
                "n": g.n,
                "seeds": g.seeds,
                "mean_a": g.mean_a,
                "mean_b": g.mean_b,
                "effect": g.effect,
                "ci_low": g.ci_low,
                "ci_high": g.ci_high,
                "p": g.p,
                "p_corrected": g.p_corrected,
                "p_against": g.p_against,
                "test": g.test,
                "reason": g.reason,
                "published": list(g.claim.published),
            }
            for g in grades
        ],
    }
