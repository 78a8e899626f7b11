"""Grade finished studies against the reproduction matrix (``reranklab regress``).

The matrix is data: ``studies/published.yaml``, ``external.yaml`` and ``expected.yaml``, each a
list of entries naming a condition, a measure, its value and a tolerance (the format is
described, read and checked in :mod:`reranklab.grading.matrix_file`).

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

Loading (:mod:`reranklab.grading.matrix_file`, :func:`load_summaries`), grading (:func:`grade`)
and rendering (:mod:`reranklab.report.regress_table`) are separate, like ranx's ``Report``. The papers' stated findings are graded by :mod:`reranklab.grading.claims`.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from reranklab.errors import ConfigError, FormatError
from reranklab.grading.matrix_file import (
    EPSILON,
    FAIL,
    NOT_COMPARABLE,
    NOT_RUN,
    OK,
    STATUSES,
    Entry,
)
from reranklab.io import read_json


@dataclass(frozen=True)
class Grade:
    """The grade of one entry: status, measured value, difference and why."""

    entry: Entry
    status: str
    measured: float | None = None
    diff: float | None = None
    row: str | None = None
    reason: str = ""


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
