"""Grade finished studies against the reproduction matrix (``reranklab regress``).

The matrix is data, in YAML files under ``studies/`` (Pyserini's two-click reproductions and
Anserini's regressions work the same way):

- ``studies/published.yaml`` (``kind: published``): every number the five seed papers print,
  each with its ``id`` (``<paper>/<table>/<row>/<column>``), the table, row and column as
  printed, the exact condition of the number and ``cite: papers/<file>:<line>``, the line of
  the paper's text that holds it (``printed``);
- ``studies/external.yaml`` (``kind: published``): numbers of other works that a study is
  graded against (``source:`` instead of ``cite:``, ``verified: false``);
- ``studies/expected.yaml`` (``kind: expected``): this project's own measured numbers, with the
  commit and command that measured them.

Each file gives a default absolute ``tolerance`` (published numbers get a wider one than this
project's own) and a list of ``entries``. An entry names a condition (``study``, ``dataset``,
``variant``, optionally ``max_length``, ``model`` and ``where``: any other summary-row field
that must be equal, e.g. ``{epochs: 3}``), a ``measure`` and its ``value``; a per-entry
``tolerance`` wins over the file's. Nothing condition-specific lives in this code.

Grading reads the ``rows`` of one or more ``results/summary.json`` (each row carries the study,
the paper it replicates when the study names one, dataset, variant, max length and, for
re-rankers, the encoder and epochs) and gives each entry one status:

- ``OK``: exactly one row matches and ``|measured − value| ≤ tolerance``;
- ``FAIL``: the difference is larger, or several rows match (the entry is ambiguous);
- ``NOT COMPARABLE``: the row exists but was measured with another encoder than the paper's (a
  replication of the paper with MiniLM, say): its value is shown, never graded;
- ``NOT RUN``: no given summary holds the condition (a study that needs a GPU, another encoder,
  a measure the summary does not report);
- ``QUOTED``: the paper prints another work's number (``quoted_from``): never the paper's own;
- ``NOT REPRODUCIBLE``: reranklab has no variant, data or measure for it (``not_reproducible``
  says why; a row of no reranklab variant, a query count, a throughput of the authors' GPU).

Loading (:func:`load_matrix`, :func:`load_summaries`), grading (:func:`grade`) and rendering
(:func:`format_text`, :func:`format_markdown`, :func:`to_json`) are separate, like ranx's
``Report``. The papers' stated findings are graded by :mod:`reranklab.report.claims`.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from reranklab.errors import ConfigError, FormatError
from reranklab.evaluation.measures import BY_NAME, NAMES
from reranklab.io import read_json

OK, FAIL, NOT_RUN = "OK", "FAIL", "NOT RUN"
NOT_COMPARABLE, QUOTED, NOT_REPRODUCIBLE = "NOT COMPARABLE", "QUOTED", "NOT REPRODUCIBLE"
STATUSES = (OK, FAIL, NOT_COMPARABLE, NOT_RUN, QUOTED, NOT_REPRODUCIBLE)
DEFAULT_MATRIX = ("studies/published.yaml", "studies/external.yaml", "studies/expected.yaml")
DEFAULT_SUMMARY = "results/summary.json"
KINDS = ("published", "expected")
# Fallback tolerances when a file gives none: a paper's number is reproduced within a couple
# of points at best (other hardware, library versions, unreported settings); this project's own
# numbers move only with float non-determinism across machines.
DEFAULT_TOLERANCE = {"published": 0.02, "expected": 0.005}
# The display names a matrix may use: what the evaluation reports, plus R@1000 (TREC-DL
# papers publish it; an entry in a measure the summary lacks is NOT RUN, not an error).
MEASURES: tuple[str, ...] = tuple(dict.fromkeys((*NAMES, *BY_NAME, "R@1000")))
# What else a paper's tables print: kept in the matrix so that it shows the whole paper, never
# graded against a summary row (a throughput is graded as a ratio by the claims).
OTHER_MEASURES = (
    "batches/s",
    "queries",
    "relative improvement %",
    "relative decrease %",
    "share of queries %",
    "MRR@10 points",
)
# Two floats that print the same to many digits are equal: an edge of the tolerance is inside.
EPSILON = 1e-9

_COMMON_REQUIRED = ("dataset", "variant", "measure", "value")
_COMMON_OPTIONAL = ("study", "max_length", "model", "where", "tolerance", "note")
REQUIRED_KEYS = {
    "published": ("paper", "table", "model", *_COMMON_REQUIRED),
    "expected": ("study", "source", *_COMMON_REQUIRED),
}
# A published entry cites a line of the paper (``cite``) or, for another work's number, gives
# its ``source`` (with ``verified: false`` where no text was at hand to check it).
PUBLISHED_INFO = (
    "id",
    "row",
    "column",
    "split",
    "printed",
    "scale",
    "cite",
    "source",
    "verified",
    "condition",
    "quoted_from",
    "not_reproducible",
)
OPTIONAL_KEYS = {
    "published": (*_COMMON_OPTIONAL, *PUBLISHED_INFO),
    "expected": _COMMON_OPTIONAL,
}
NULLABLE_KEYS = ("model", "variant")
FILE_KEYS = ("kind", "tolerance", "description", "entries")


@dataclass(frozen=True)
class Entry:
    """One number of the matrix: a condition, a measure, the value it should have.

    Args:
        kind: ``published`` or ``expected``.
        origin: ``<file> entry <i>``, for messages.
        study: the study (``study:`` of its config, the summary's title) that runs the condition.
        dataset, variant: the summary row's dataset and variant (``bm25``/``pool`` for a first
            stage; ``None``: a row of the paper that no reranklab variant runs).
        measure: display name (``MAP``, ``MRR@10``, ...).
        value: the published or measured value.
        tolerance: largest absolute difference still graded OK.
        max_length: the row's max length; ``None`` = any.
        model: the encoder of a re-ranker row (ignored for first-stage rows), ``word-vectors``
            for a model on a static word-vector file (GloVe: the papers' QA-LSTM and K-NRM;
            :meth:`reranklab.models.registry.VariantSpec.representations`); ``None`` = any.
        where: further row fields that must be equal (``{"epochs": 3}``).
        info: the rest (paper, table, citation, source, note), for the report.
    """

    kind: str
    origin: str
    study: str
    dataset: str
    variant: str | None
    measure: str
    value: float
    tolerance: float
    max_length: int | None = None
    model: str | None = None
    where: Mapping[str, Any] = field(default_factory=dict)
    info: Mapping[str, Any] = field(default_factory=dict)

    @property
    def paper(self) -> str | None:
        """The paper of a published entry (its study replicates it), else ``None``."""
        return self.info.get("paper") if self.kind == "published" else None

    @property
    def condition(self) -> str:
        """``study: dataset/variant/L256 [model]`` for lines and tables."""
        text = f"{self.dataset}/{self.variant or '–'}" + (
            "" if self.max_length is None else f"/L{self.max_length}"
        )
        extra = [self.model] if self.model else []
        extra += [f"{k}={v}" for k, v in sorted(self.where.items())]
        return f"{self.study}: {text}" + (f" [{', '.join(extra)}]" if extra else "")

    @property
    def reference(self) -> str:
        """Where the value comes from: the paper's line, another work, or the measuring command."""
        if self.kind == "published":
            return str(self.info.get("cite") or self.info.get("source") or self.info.get("paper"))
        return str(self.info.get("source", ""))

    @property
    def graded_against_rows(self) -> bool:
        """Whether a summary row can grade it: the paper's own number of a reranklab variant."""
        return self._not_graded() is None

    def _not_graded(self) -> tuple[str, str] | None:
        if self.info.get("quoted_from"):
            return QUOTED, f"quoted from {self.info['quoted_from']}"
        if self.info.get("not_reproducible"):
            return NOT_REPRODUCIBLE, str(self.info["not_reproducible"])
        if self.variant is None:
            return NOT_REPRODUCIBLE, "no reranklab variant runs this row"
        if self.measure not in MEASURES:
            return NOT_REPRODUCIBLE, f"{self.measure} is not a measure of the summary"
        return None


@dataclass(frozen=True)
class Grade:
    """The grade of one entry: status, measured value, difference and why."""

    entry: Entry
    status: str
    measured: float | None = None
    diff: float | None = None
    row: str | None = None
    reason: str = ""


# -- loading ------------------------------------------------------------------------------------


def _fail(path: os.PathLike[str] | str, where: str, problem: str) -> FormatError:
    return FormatError(path, None, f"{where}: {problem}")


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _check_entry(path: Path, index: int, raw: Any, kind: str, default_tolerance: float) -> Entry:
    where = f"entry {index}"
    if not isinstance(raw, Mapping):
        raise _fail(path, where, "expected a mapping of keys")
    allowed = (*REQUIRED_KEYS[kind], *OPTIONAL_KEYS[kind])
    for key in raw:
        if key not in allowed:
            raise _fail(
                path,
                f"{where}, key {key}",
                f"unknown key (allowed in a {kind} entry: {', '.join(allowed)})",
            )
    for key in REQUIRED_KEYS[kind]:
        # `model: null` is an answer (any encoder: BM25); an absent key is not.
        nullable = key in NULLABLE_KEYS and (key == "model" or kind == "published")
        if key not in raw or (not nullable and raw[key] in (None, "")):
            raise _fail(
                path,
                f"{where}, key {key}",
                f"missing (a {kind} entry needs {', '.join(REQUIRED_KEYS[kind])})",
            )
    if kind == "published" and not (raw.get("cite") or raw.get("source")):
        raise _fail(
            path,
            f"{where}, key cite",
            "missing (a published entry cites the paper's line, papers/<file>:<line>, "
            "or names another work's source)",
        )
    for key in (
        "dataset",
        "variant",
        "study",
        "model",
        "paper",
        "cite",
        "source",
        "table",
        "id",
        "quoted_from",
        "not_reproducible",
    ):
        if key in raw and raw[key] is not None and not isinstance(raw[key], str):
            raise _fail(path, f"{where}, key {key}", f"expected a string, got {raw[key]!r}")
    known = MEASURES + (OTHER_MEASURES if kind == "published" else ())
    if raw["measure"] not in known:
        raise _fail(
            path,
            f"{where}, key measure",
            f"unknown measure {raw['measure']!r} (known: {', '.join(known)})",
        )
    in_unit_range = raw["measure"] not in MEASURES or (
        _number(raw["value"]) and 0.0 <= raw["value"] <= 1.0
    )
    if not _number(raw["value"]) or not in_unit_range:
        wanted = "a number in [0, 1]" if raw["measure"] in MEASURES else "a finite number"
        raise _fail(path, f"{where}, key value", f"expected {wanted}, got {raw['value']!r}")
    tolerance = raw.get("tolerance", default_tolerance)
    if not _number(tolerance) or tolerance < 0:
        raise _fail(path, f"{where}, key tolerance", f"expected a number >= 0, got {tolerance!r}")
    max_length = raw.get("max_length")
    if max_length is not None and (
        not isinstance(max_length, int) or isinstance(max_length, bool) or max_length < 1
    ):
        raise _fail(
            path,
            f"{where}, key max_length",
            f"expected a positive integer or null, got {max_length!r}",
        )
    conditions = raw.get("where") or {}
    if not isinstance(conditions, Mapping) or any(
        isinstance(v, (Mapping, list)) for v in conditions.values()
    ):
        raise _fail(
            path, f"{where}, key where", "expected a mapping of summary-row fields to plain values"
        )
    info = {
        k: raw[k]
        for k in ("paper", "table", "source", "note", *PUBLISHED_INFO)
        if raw.get(k) is not None
    }
    return Entry(
        kind=kind,
        origin=f"{path} entry {index}",
        # A paper's numbers are reproduced by the study of the same name unless the entry says otherwise.
        study=str(raw.get("study") or raw.get("paper")),
        dataset=raw["dataset"],
        variant=raw.get("variant"),
        measure=raw["measure"],
        value=float(raw["value"]),
        tolerance=float(tolerance),
        max_length=max_length,
        model=raw.get("model"),
        where=dict(conditions),
        info=info,
    )


def load_matrix(path: str | os.PathLike[str]) -> list[Entry]:
    """Read and validate one matrix file (``kind``, ``tolerance``, ``entries``).

    Args:
        path: a YAML file such as ``studies/published.yaml``.

    Returns:
        Its entries, in file order.

    Raises:
        FormatError: naming the file, the entry index and the key at fault (unknown or missing
            key, unknown measure, a value outside [0, 1], a condition listed twice, ...).

    Example:
        >>> [e.measure for e in load_matrix("studies/published.yaml")][:2]  # doctest: +SKIP
        ['MAP', 'MRR']
    """
    path = Path(path)
    try:
        document = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise FormatError(path, None, "matrix file does not exist") from None
    except yaml.YAMLError as exc:
        raise FormatError(path, None, f"invalid YAML: {exc}") from None
    if not isinstance(document, Mapping):
        raise FormatError(path, None, f"expected a mapping with keys {', '.join(FILE_KEYS)}")
    for key in document:
        if key not in FILE_KEYS:
            raise _fail(
                path, f"key {key}", f"unknown top-level key (allowed: {', '.join(FILE_KEYS)})"
            )
    kind = document.get("kind")
    if kind not in KINDS:
        raise _fail(path, "key kind", f"expected one of {', '.join(KINDS)}, got {kind!r}")
    tolerance = document.get("tolerance", DEFAULT_TOLERANCE[kind])
    if not _number(tolerance) or tolerance < 0:
        raise _fail(path, "key tolerance", f"expected a number >= 0, got {tolerance!r}")
    raw_entries = document.get("entries") or []
    if not isinstance(raw_entries, list):
        raise _fail(path, "key entries", "expected a list of entries")
    entries: list[Entry] = []
    seen: dict[tuple, int] = {}
    for index, raw in enumerate(raw_entries):
        entry = _check_entry(path, index, raw, kind, float(tolerance))
        if entry.info.get("id"):
            # A paper may print one condition twice (Table 2 and Table 3, a table and its text):
            # its entries differ by id, and the id is what must be unique.
            key: tuple = ("id", entry.info["id"])
            if key in seen:
                raise _fail(path, f"entry {index}, key id", f"same id as entry {seen[key]}")
            seen[key] = index
            entries.append(entry)
            continue
        key = (
            entry.study,
            entry.dataset,
            entry.variant,
            entry.max_length,
            entry.model,
            tuple(sorted(entry.where.items())),
            entry.measure,
        )
        if key in seen:
            raise _fail(
                path,
                f"entry {index}",
                f"same condition and measure as entry {seen[key]} ({entry.condition}, {entry.measure})",
            )
        seen[key] = index
        entries.append(entry)
    return entries


def load_summaries(paths: Iterable[str | os.PathLike[str]]) -> list[dict[str, Any]]:
    """The rows of finished studies' ``summary.json`` files, each with its ``study``.

    A row without a ``study`` field (a summary written before rows carried it) takes the
    summary's ``title``, which is the study name.

    Raises:
        FormatError: a file that is missing or not a summary (``title`` and ``rows``).
    """
    rows: list[dict[str, Any]] = []
    for path in paths:
        try:
            document = read_json(path)
        except FileNotFoundError:
            raise FormatError(
                path, None, "summary file does not exist (run the study first)"
            ) from None
        if (
            not isinstance(document, Mapping)
            or not isinstance(document.get("rows"), list)
            or "title" not in document
        ):
            raise FormatError(path, None, "not a reranklab summary.json: needs 'title' and 'rows'")
        for index, row in enumerate(document["rows"]):
            if not isinstance(row, Mapping) or not {"dataset", "variant"} <= set(row):
                raise FormatError(path, None, f"rows[{index}]: needs 'dataset' and 'variant'")
            rows.append(
                {**row, "study": row.get("study") or document["title"], "summary": str(path)}
            )
    return rows


# -- grading ------------------------------------------------------------------------------------


def _row_name(row: Mapping[str, Any]) -> str:
    length = row.get("max_length")
    return f"{row['dataset']}/{row['variant']}" + ("" if length is None else f"/L{length}")


def _of_study(entry: Entry, row: Mapping[str, Any]) -> bool:
    # A study that replicates the paper under another name (MiniLM on CPU, say) names the paper.
    return row.get("study") == entry.study or (
        entry.paper is not None and row.get("paper") == entry.paper
    )


def _matches(entry: Entry, row: Mapping[str, Any], encoder: bool = True) -> bool:
    if (row["dataset"], row["variant"]) != (entry.dataset, entry.variant):
        return False
    # `encoder=False`: the condition as another study ran it (another encoder and length).
    if encoder and entry.max_length is not None and row.get("max_length") != entry.max_length:
        return False
    # The model names the encoder of a re-ranker; a first-stage row has none.
    if (
        encoder
        and entry.model is not None
        and not row.get("first_stage")
        and row.get("encoder") != entry.model
    ):
        return False
    return all(row.get(key) == value for key, value in entry.where.items())


def _not_comparable(entry: Entry, rows: Sequence[Mapping[str, Any]]) -> Grade | None:
    """The one row of the condition that another encoder ran: shown, never graded."""
    other = [row for row in rows if _matches(entry, row, encoder=False)]
    if len(other) != 1 or other[0].get(entry.measure) is None:
        return None
    row = other[0]
    if entry.model is None or row.get("encoder") == entry.model:
        return None  # the paper's encoder at another length: a condition not run
    measured = float(row[entry.measure])
    length = row.get("max_length")
    at = "" if length is None or length == entry.max_length else f" at {length} word pieces"
    return Grade(
        entry,
        NOT_COMPARABLE,
        measured=measured,
        diff=measured - entry.value,
        row=_row_name(row),
        reason=f"measured with {row.get('encoder')}{at}, the paper with {entry.model}",
    )


def grade_entry(entry: Entry, rows: Sequence[Mapping[str, Any]]) -> Grade:
    """Grade one entry against the rows of the given summaries (see the module docstring).

    Example:
        >>> e = Entry("expected", "x entry 0", "qs", "sample", "bm25", "MAP", 0.49, 0.01)
        >>> grade_entry(e, [{"study": "qs", "dataset": "sample", "variant": "bm25", "MAP": 0.495}]).status
        'OK'
    """
    not_graded = entry._not_graded()
    if not_graded is not None:
        return Grade(entry, not_graded[0], reason=not_graded[1])
    in_study = [row for row in rows if _of_study(entry, row)]
    if not in_study:
        return Grade(entry, NOT_RUN, reason=f"study {entry.study} is not in the given summaries")
    matched = [row for row in in_study if _matches(entry, row)]
    if not matched:
        other = _not_comparable(entry, in_study)
        if other is not None:
            return other
        near = sorted(
            {
                f"{_row_name(r)} ({r.get('encoder') or 'no encoder'})"
                for r in in_study
                if (r["dataset"], r["variant"]) == (entry.dataset, entry.variant)
            }
        )
        reason = f"no row of study {entry.study} matches" + (
            f"; it ran {', '.join(near)}" if near else ""
        )
        return Grade(entry, NOT_RUN, reason=reason)
    if len(matched) > 1:
        names = ", ".join(_row_name(r) for r in matched)
        return Grade(
            entry,
            FAIL,
            reason=f"ambiguous: {len(matched)} rows match ({names}); pin max_length, model or where",
        )
    row = matched[0]
    measured = row.get(entry.measure)
    if measured is None:
        return Grade(
            entry,
            NOT_RUN,
            row=_row_name(row),
            reason=f"the summary has no {entry.measure} for this row",
        )
    diff = float(measured) - entry.value
    status = OK if abs(diff) <= entry.tolerance + EPSILON else FAIL
    return Grade(entry, status, measured=float(measured), diff=diff, row=_row_name(row))


def grade(
    entries: Sequence[Entry], rows: Sequence[Mapping[str, Any]], study: str | None = None
) -> list[Grade]:
    """Grade every entry (or those of ``study``) against the rows, in matrix order.

    Raises:
        ConfigError: ``study`` is given but no entry belongs to it.
    """
    if study is not None:
        selected = [e for e in entries if e.study == study]
        if not selected:
            known = ", ".join(sorted({e.study for e in entries})) or "none"
            raise ConfigError(
                f"--study {study}: no entry of the matrix belongs to it (studies: {known})"
            )
        entries = selected
    return [grade_entry(entry, rows) for entry in entries]


def studies_run(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """The studies the given summary rows come from, sorted."""
    return sorted({str(row["study"]) for row in rows if row.get("study")})


def of_studies_run(entries: Sequence[Entry], rows: Sequence[Mapping[str, Any]]) -> list[Entry]:
    """The entries of the studies the rows come from (a replication under another name counts).

    A plain ``reranklab regress`` grades these: the quick start's summary is graded on the
    quick start's entries, not printed against every paper's 250 numbers as NOT RUN.

    Example:
        >>> e = Entry("expected", "x entry 0", "qs", "sample", "bm25", "MAP", 0.49, 0.01)
        >>> f = Entry("expected", "x entry 1", "other", "sample", "bm25", "MAP", 0.49, 0.01)
        >>> [x.study for x in of_studies_run([e, f], [{"study": "qs", "dataset": "sample", "variant": "bm25"}])]
        ['qs']
    """
    return [entry for entry in entries if any(_of_study(entry, row) for row in rows)]


def counts(grades: Sequence[Grade]) -> dict[str, int]:
    """``{"OK": n, "FAIL": n, "NOT RUN": n}``, and the other statuses where any entry has one."""
    tally = {status: sum(g.status == status for g in grades) for status in STATUSES}
    return {s: n for s, n in tally.items() if n or s in (OK, FAIL, NOT_RUN)}


# -- rendering ----------------------------------------------------------------------------------


def _num(value: float | None, signed: bool = False) -> str:
    if value is None:
        return "–"
    return f"{value:+.4f}" if signed else f"{value:.4f}"


def _value(entry: Entry) -> str:
    # A count, a throughput or a percentage reads best as the paper printed it.
    if entry.measure not in MEASURES:
        return str(entry.info.get("printed", entry.value))
    return _num(entry.value)


def default_path(name: str) -> Path | None:
    """``studies/<name>`` of the working folder, else the copy shipped in the package.

    Example:
        >>> default_path("published.yaml").name
        'published.yaml'
    """
    local = Path("studies") / name
    if local.is_file():
        return local
    from reranklab.resources import STUDY

    packaged = STUDY / "studies" / name
    return packaged if packaged.is_file() else None


def default_matrix() -> list[Path]:
    """The matrix files :data:`DEFAULT_MATRIX` names that exist (here, else in the package)."""
    found = (default_path(Path(name).name) for name in DEFAULT_MATRIX)
    return [path for path in found if path is not None]


def _tally(grades: Sequence[Grade]) -> str:
    return ", ".join(f"{n} {status}" for status, n in counts(grades).items())


def format_text(grades: Sequence[Grade]) -> str:
    """One line per entry: status, condition, measure, value, measured, difference, why."""
    lines = []
    for g in grades:
        e = g.entry
        text = f"{g.status:<7}  {e.kind:<9}  {e.condition}  {e.measure} {_value(e)}"
        if g.measured is not None:
            text += f"  measured {g.measured:.4f}  diff {g.diff:+.4f}  (tolerance {e.tolerance:g})"
        if g.reason:
            text += f"  ({g.reason})"
        lines.append(text)
    lines.append(f"{len(grades)} entries: {_tally(grades)}")
    return "\n".join(lines) + "\n"


def format_markdown(grades: Sequence[Grade], title: str = "Reproduction matrix") -> str:
    """The Markdown table of ``results/regression.md``."""
    header = [
        "status",
        "kind",
        "study",
        "dataset",
        "variant",
        "max length",
        "model",
        "measure",
        "value",
        "measured",
        "diff",
        "tolerance",
        "reference",
        "note",
    ]
    lines = [
        f"# {title}",
        "",
        f"{len(grades)} entries: {_tally(grades)}.",
        "",
        "| " + " | ".join(header) + " |",
        "|" + "|".join(["---"] * 8 + ["---:"] * 4 + ["---"] * 2) + "|",
    ]
    for g in grades:
        e = g.entry
        note = "; ".join(x for x in (g.reason, str(e.info.get("note", ""))) if x)
        cells = [
            f"**{g.status}**" if g.status == FAIL else g.status,
            e.kind,
            e.study,
            e.dataset,
            e.variant or "–",  # None: a not-reproducible entry with no reranklab variant
            "–" if e.max_length is None else str(e.max_length),
            e.model or "–",
            e.measure,
            _value(e),
            _num(g.measured),
            _num(g.diff, signed=True),
            f"{e.tolerance:g}",
            e.reference,
            note,
        ]
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    lines += [
        "",
        "OK: within the tolerance; FAIL: outside it, or the entry matches several rows; "
        "NOT COMPARABLE: measured with another encoder than the paper's (shown, not graded); "
        "NOT RUN: no given summary holds the condition (e.g. a study that needs a GPU); "
        "QUOTED: another work's number that the paper prints; NOT REPRODUCIBLE: reranklab has "
        "no variant, data or measure for it (the note says which).",
        "",
    ]
    return "\n".join(lines)


def to_json(grades: Sequence[Grade]) -> dict[str, Any]:
    """``{"counts": {...}, "entries": [...]}`` for programs."""
    return {
        "counts": counts(grades),
        "entries": [
            {
                "status": g.status,
                "kind": g.entry.kind,
                "origin": g.entry.origin,
                "study": g.entry.study,
                "dataset": g.entry.dataset,
                "variant": g.entry.variant,
                "max_length": g.entry.max_length,
                "model": g.entry.model,
                "where": dict(g.entry.where),
                "measure": g.entry.measure,
                "value": g.entry.value,
                "tolerance": g.entry.tolerance,
                "measured": g.measured,
                "diff": g.diff,
                "row": g.row,
                "reason": g.reason,
                **dict(g.entry.info),
            }
            for g in grades
        ],
    }


def format_readme(grades: Sequence[Grade]) -> str:
    """The README's matrix section: a tally per paper and study, then every entry folded.

    Written between ``<!-- regress:matrix:start -->`` and ``<!-- regress:matrix:end -->`` by
    ``reranklab regress --readme README.md``.
    """
    groups: dict[tuple[str, str], list[Grade]] = {}
    for g in grades:
        groups.setdefault((str(g.entry.paper or "–"), g.entry.study), []).append(g)
    statuses = [s for s in STATUSES if any(g.status == s for g in grades)] or [OK, FAIL, NOT_RUN]
    lines = [
        "| paper | study | entries | " + " | ".join(statuses) + " |",
        "|---|---|---:|" + "---:|" * len(statuses),
    ]
    for (paper, study), members in groups.items():
        tally = [str(sum(g.status == s for g in members)) for s in statuses]
        lines.append(f"| {paper} | {study} | {len(members)} | " + " | ".join(tally) + " |")
    lines += [
        "",
        f"<details><summary>Every entry ({len(grades)})</summary>",
        "",
        "| status | id or study | cite / source | dataset | variant | measure | value | measured | why |",
        "|---|---|---|---|---|---|---:|---:|---|",
    ]
    for g in grades:
        e = g.entry
        name = str(e.info.get("id") or e.study)
        variant = (e.variant or "–") + ("" if e.max_length is None else f"-L{e.max_length}")
        cells = [
            g.status,
            name,
            e.reference,
            e.dataset,
            variant,
            e.measure,
            _value(e),
            _num(g.measured),
            g.reason,
        ]
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    lines += ["", "</details>", ""]
    return "\n".join(lines)
