"""The reproduction matrix's files: reading and checking them (``studies/*.yaml``).

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

:func:`load_matrix` reads one file into :class:`Entry` objects and refuses a malformed one with
the file and the entry's index; :mod:`reranklab.grading.regress` grades them.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from reranklab.errors import FormatError, yaml_error
from reranklab.evaluation.measures import BY_NAME, NAMES

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
        raise yaml_error(path, exc) from None
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
