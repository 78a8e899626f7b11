"""``studies/claims.yaml`` read and checked: the claims, their cells and the paper's own effect.

The schema (``kind: claims``, ``alpha``, ``correction``, ``claims: [...]``) is described in
:mod:`reranklab.grading.claims`; this module only loads it. ``paper_effect: {a, b}`` names two
entries of ``published.yaml`` (the file beside the claims file, else the packaged one): the
paper's A − B is looked up from their values, so it is never typed twice.

Example:
    >>> c = Claim.from_mapping({"id": "p/x", "paper": "p", "source": "table",
    ...     "claim": "Read off Table 1: A above B", "cite": ["papers/p.txt:4", "papers/p.txt:5"],
    ...     "kind": "better", "dataset": "d", "measure": "MAP", "a": "a", "b": "bm25",
    ...     "paper_effect": {"value": 0.03, "cite": "papers/p.txt:4"}}, "claim 0")
    >>> c.cite, c.seeds, c.paper_effect.value
    ('papers/p.txt:4; papers/p.txt:5', 3, 0.03)
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

import yaml

from reranklab.errors import FormatError, yaml_error
from reranklab.grading.matrix_file import MEASURES, Entry, load_matrix

KINDS = ("better", "no_worse", "equal", "ratio")
SOURCES = ("stated", "table")
DEFAULT_SEEDS = 3  # the seeds a claim asks for unless it says otherwise
TABLE_PREFIX = "Read off "
Kind = Literal["better", "no_worse", "equal", "ratio"]

_REQUIRED = ("id", "paper", "claim", "source", "cite", "kind", "dataset", "a", "b")
_OPTIONAL = (
    "study",
    "measure",
    "delta",
    "at_least",
    "published",
    "note",
    "seeds",
    "also_on",
    "stand_in",
    "encoders",
    "scored",
    "paper_effect",
    "not_run",
)
_CELL_KEYS = ("variant", "max_length", "model", "epoch")
EPOCHS = ("first",)  # a ratio claim's side timed on its first epoch (default: the later ones)
SCORED = ("test", "dev")  # the questions a claim is about (protocol.<dataset>.scored)


@dataclass(frozen=True)
class CellRef:
    """One side of a claim: a variant (or ``bm25``/``pool``), optionally its length and encoder."""

    variant: str
    max_length: int | None = None
    model: str | None = None
    # "first": a ratio claim times this side's first epoch, a lite model's encoder pass
    # included (BERT-DMN's Table 3); by default the later epochs
    epoch: str | None = None

    def matches(self, row: Mapping[str, Any]) -> bool:
        if row.get("variant") != self.variant:
            return False
        if self.max_length is not None and row.get("max_length") != self.max_length:
            return False
        return self.model is None or row.get("first_stage") or row.get("encoder") == self.model

    def __str__(self) -> str:
        text = self.variant + ("" if self.max_length is None else f"-L{self.max_length}")
        text += f" [{self.model}]" if self.model else ""
        return text + (f" ({self.epoch} epoch)" if self.epoch else "")


@dataclass(frozen=True)
class PaperEffect:
    """The paper's own A − B: two published ids (``a``, ``b``) or a number with its cite.

    ``value`` is ``None`` until the ids are looked up (:func:`load_claims` does).
    """

    value: float | None = None
    a: str | None = None
    b: str | None = None
    cite: str = ""

    def __str__(self) -> str:
        value = "?" if self.value is None else f"{self.value:+.3f}"
        where = f"{self.a} − {self.b}" if self.a else self.cite
        return f"{value} ({where})"


@dataclass(frozen=True)
class Claim:
    """One finding of a paper, as a comparison of two cells (see reranklab.grading.claims)."""

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
    seeds: int = DEFAULT_SEEDS
    published: tuple[str, ...] = ()
    note: str = ""
    also_on: tuple[str, ...] = ()
    source: str = "stated"
    cites: tuple[str, ...] = ()
    stand_in: str = ""
    # the encoders the paper compared (A's, B's) where the claim is about them (BERT-large
    # against BERT-base): a grade on other encoders rests on a stand-in pair
    encoders: tuple[str, str] | None = None
    # the questions the paper's statement is about: test, or dev ("no improvement in the dev
    # set"); graded only on rows scored on them (protocol.<dataset>.scored)
    scored: str = "test"
    paper_effect: PaperEffect | None = None
    not_run: str = ""
    paper_max_length: int | None = None  # the paper's input length (claims file, papers:)

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
            if raw.get(key) in (None, "", []):
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
        source = raw["source"]
        if source not in SOURCES:
            raise ValueError(
                f"{origin}, key source: expected one of {', '.join(SOURCES)}, got {source!r}"
            )
        text = " ".join(str(raw["claim"]).split())
        if source == "table" and not text.startswith(TABLE_PREFIX):
            raise ValueError(
                f"{origin}, key claim: a claim read off a table must start with {TABLE_PREFIX!r}"
            )
        cites = _cites(raw["cite"], f"{origin}, key cite")
        seeds = raw.get("seeds", DEFAULT_SEEDS)
        if not isinstance(seeds, int) or isinstance(seeds, bool) or seeds < 1:
            raise ValueError(f"{origin}, key seeds: expected a whole number >= 1, got {seeds!r}")
        return cls(
            id=str(raw["id"]),
            paper=str(raw["paper"]),
            study=str(raw.get("study") or raw["paper"]),
            claim=text,
            cite="; ".join(cites),
            kind=kind,
            dataset=str(raw["dataset"]),
            a=_cell(raw["a"], f"{origin}, key a"),
            b=_cell(raw["b"], f"{origin}, key b"),
            measure=measure,
            delta=float(delta),
            at_least=float(raw.get("at_least", 1.0)),
            seeds=seeds,
            published=tuple(raw.get("published") or ()),
            note=" ".join(str(raw.get("note") or "").split()),
            also_on=tuple(raw.get("also_on") or ()),
            source=source,
            cites=cites,
            stand_in=" ".join(str(raw.get("stand_in") or "").split()),
            encoders=_encoders(raw.get("encoders"), f"{origin}, key encoders"),
            scored=_scored(raw.get("scored", "test"), f"{origin}, key scored"),
            paper_effect=_paper_effect(
                raw.get("paper_effect"), kind, f"{origin}, key paper_effect"
            ),
            not_run=" ".join(str(raw.get("not_run") or "").split()),
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


def _scored(raw: Any, origin: str) -> str:
    if raw not in SCORED:
        raise ValueError(f"{origin}: expected one of {', '.join(SCORED)}, got {raw!r}")
    return str(raw)


def _encoders(raw: Any, origin: str) -> tuple[str, str] | None:
    if raw is None:
        return None
    if not (
        isinstance(raw, Mapping)
        and set(raw) == {"a", "b"}
        and all(isinstance(v, str) and v for v in raw.values())
    ):
        raise ValueError(f"{origin}: expected {{a: <encoder>, b: <encoder>}}, got {raw!r}")
    return str(raw["a"]), str(raw["b"])


def _cites(raw: Any, origin: str) -> tuple[str, ...]:
    items = [raw] if isinstance(raw, str) else raw
    if not isinstance(items, list) or not all(isinstance(c, str) and c.strip() for c in items):
        raise ValueError(f"{origin}: expected papers/<file>:<line> or a list of them")
    return tuple(c.strip() for c in items)


def _cell(raw: Any, origin: str) -> CellRef:
    if isinstance(raw, str):
        return CellRef(raw)
    if not isinstance(raw, Mapping) or not raw.get("variant"):
        raise ValueError(
            f"{origin}: expected a variant name or {{variant, max_length, model, epoch}}"
        )
    unknown = [k for k in raw if k not in _CELL_KEYS]
    if unknown:
        raise ValueError(f"{origin}: unknown key {unknown[0]} (allowed: {', '.join(_CELL_KEYS)})")
    epoch = raw.get("epoch")
    if epoch is not None and epoch not in EPOCHS:
        raise ValueError(f"{origin}, key epoch: expected one of {', '.join(EPOCHS)}, got {epoch!r}")
    return CellRef(str(raw["variant"]), raw.get("max_length"), raw.get("model"), epoch)


def _paper_effect(raw: Any, kind: str, origin: str) -> PaperEffect | None:
    if raw is None:
        return None
    if kind == "ratio":
        raise ValueError(f"{origin}: only a better, no_worse or equal claim has one")
    if not isinstance(raw, Mapping):
        raise ValueError(
            f"{origin}: expected {{a: <published id>, b: <published id>}} or "
            "{value: <A − B>, cite: papers/<file>:<line>}"
        )
    keys = set(raw)
    if keys == {"a", "b"} and all(isinstance(raw[k], str) and raw[k] for k in ("a", "b")):
        return PaperEffect(a=raw["a"], b=raw["b"])
    number = keys == {"value", "cite"} and isinstance(raw["value"], (int, float))
    if number and not isinstance(raw["value"], bool) and isinstance(raw["cite"], str):
        return PaperEffect(value=float(raw["value"]), cite=raw["cite"])
    raise ValueError(
        f"{origin}: expected {{a: <published id>, b: <published id>}} or "
        f"{{value: <A − B>, cite: papers/<file>:<line>}}, got keys {sorted(keys)}"
    )


@dataclass(frozen=True)
class ClaimsFile:
    """``studies/claims.yaml``: the level, the correction and the claims."""

    alpha: float
    correction: Literal["holm", "bonferroni", "none"]
    claims: list[Claim] = field(default_factory=list)


def _published_path(claims_path: Path) -> Path | None:
    beside = claims_path.parent / "published.yaml"
    if beside.is_file():
        return beside
    from reranklab.grading.matrix_file import default_path

    return default_path("published.yaml")


def _look_up(claim: Claim, index: int, entries: dict[str, Entry], where: Path) -> Claim:
    """``paper_effect: {a, b}`` -> the value a − b of the two published entries."""
    effect = claim.paper_effect
    if effect is None or effect.a is None or effect.b is None:
        return claim
    values = []
    for side, entry_id in (("a", effect.a), ("b", effect.b)):
        entry = entries.get(entry_id)
        if entry is None:
            raise ValueError(
                f"claim {index}, key paper_effect.{side}: no entry {entry_id} in {where}"
            )
        if entry.measure != claim.measure or entry.dataset != claim.dataset:
            raise ValueError(
                f"claim {index}, key paper_effect.{side}: {entry_id} is {entry.dataset} "
                f"{entry.measure}, the claim compares {claim.dataset} {claim.measure}"
            )
        values.append(entry.value)
    cite = "; ".join(
        str(entries[i].info.get("cite") or "") for i in (effect.a, effect.b) if entries.get(i)
    )
    return replace(claim, paper_effect=replace(effect, value=values[0] - values[1], cite=cite))


def _with_paper_lengths(path: Path, papers: Any, claims: list[Claim]) -> list[Claim]:
    """Each claim with its paper's input length (``papers: {<id>: {max_length, cite}}``)."""
    if not isinstance(papers, Mapping):
        raise FormatError(path, None, "key papers: expected {<paper>: {max_length, cite}}")
    lengths = {}
    for paper, facts in papers.items():
        length = facts.get("max_length") if isinstance(facts, Mapping) else None
        if length is not None and (not isinstance(length, int) or length <= 0):
            raise FormatError(path, None, f"papers.{paper}.max_length: expected a positive int")
        if length is not None and not str(facts.get("cite") or "").startswith("papers/"):
            raise FormatError(path, None, f"papers.{paper}.cite: expected papers/<file>:<line>")
        lengths[str(paper)] = length
    return [replace(c, paper_max_length=lengths.get(c.paper)) for c in claims]


def load_claims(
    path: str | os.PathLike[str], published: str | os.PathLike[str] | None = None
) -> ClaimsFile:
    """Read and validate a claims file, the paper effects looked up in ``published``.

    Args:
        path: the claims file.
        published: the published matrix the ``paper_effect`` ids name (default: the
            ``published.yaml`` beside the claims file, else the packaged one).

    Raises:
        FormatError: naming the file, the claim's index and the key at fault.
    """
    path = Path(path)
    try:
        document = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise FormatError(path, None, "claims file does not exist") from None
    except yaml.YAMLError as exc:
        raise yaml_error(path, exc) from None
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
    if any(c.paper_effect and c.paper_effect.a for c in claims):
        matrix = Path(published) if published is not None else _published_path(path)
        if matrix is None:
            raise FormatError(path, None, "paper_effect names published ids: no published.yaml")
        entries = {str(e.info.get("id")): e for e in load_matrix(matrix) if e.info.get("id")}
        try:
            claims = [_look_up(c, i, entries, matrix) for i, c in enumerate(claims)]
        except ValueError as exc:
            raise FormatError(path, None, str(exc)) from None
    claims = _with_paper_lengths(path, document.get("papers") or {}, claims)
    correction = document.get("correction", "holm")
    if correction not in ("holm", "bonferroni", "none"):
        raise FormatError(path, None, "key correction: expected holm, bonferroni or none")
    return ClaimsFile(float(document.get("alpha", 0.05)), correction, claims)
