"""Where a study stands: which cells are trained, re-ranked, evaluated and tracked.

``reranklab status [--configfile F ...]`` reads the study's configuration the way Snakemake
does (``params.yaml``, then the override files) and lists its rows: each dataset's first stage
and every cell of its grid (each seed of a seed axis). This module then looks at the result
files only: a step is done when its output exists, and ``k/n`` says how many of a row's ``n``
folds have it. A job whose output is missing but whose log has a status line (see
:mod:`reranklab.progress`) shows that line, so a running study says what it is doing.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from reranklab.io import read_json
from reranklab.settings.cell import Cell

STEPS = ("trained", "re-ranked", "evaluated", "tracked")
PROGRESS_LOGGER = "reranklab.progress: "


@dataclass
class Row:
    """One row of the status table.

    Args:
        cell: the row's cell (a first stage has no max length).
        folds: the number of folds.
        done: ``{step: folds done}`` (``tracked``: 1 when the cell is tracked, of 1).
        note: the latest status line of a job of this row that has not finished, if any.
    """

    cell: Cell
    folds: int
    done: dict[str, int | None] = field(default_factory=dict)
    note: str = ""

    @property
    def complete(self) -> bool:
        return all(
            value is None or value == (1 if step == "tracked" else self.folds)
            for step, value in self.done.items()
        )


def _exists(root: Path, path: str) -> bool:
    return (root / path).exists()


def _last_status(log: Path, now: float) -> str:
    # The last line a progress.Status wrote to the job's log, with how old the log is.
    try:
        text = log.read_text(encoding="utf-8", errors="replace")
        age = now - log.stat().st_mtime
    except OSError:
        return ""
    lines = [line for line in text.splitlines() if PROGRESS_LOGGER in line]
    if not lines:
        return ""
    return f"{lines[-1].split(PROGRESS_LOGGER, 1)[1]} (log written {round(age)} s ago)"


def cell_rows(
    cells: Sequence[tuple[Cell, int]], root: str | Path = ".", now: float | None = None
) -> list[Row]:
    """The status of ``cells`` (each with its number of folds) from the files under ``root``.

    Args:
        cells: the study's rows, first stages included, as ``(cell, folds)``
            (``reranklab status`` lists them from the configuration).
        root: the folder holding ``results/`` (the workflow's working directory).
        now: the time for the logs' ages (default: now).

    Example:
        >>> rows = cell_rows([(Cell("sample", "bm25"), 5), (Cell("sample", "pointwise", 64), 5)], "/nowhere")
        >>> [(r.cell.name, r.folds, r.done["trained"], r.done["re-ranked"]) for r in rows]
        [('bm25', 5, None, 0), ('pointwise-L64', 5, 0, 0)]
    """
    root = Path(root)
    now = time.time() if now is None else now
    return [_row(root, cell, folds, now) for cell, folds in cells]


def _row(root: Path, cell: Cell, folds: int, now: float) -> Row:
    row = Row(cell, folds)
    models = None if cell.is_first_stage else 0
    runs = evaluated = 0
    note = ""
    for k in range(folds):
        fold = f"fold{k}"
        trained = cell.is_first_stage or _exists(root, cell.path("models", fold, "reranker.json"))
        reranked = _exists(root, cell.path("runs", f"{fold}.run"))
        if models is not None:
            models += trained
        runs += reranked
        evaluated += _exists(root, cell.path("metrics", f"{fold}.json"))
        if not note and not cell.is_first_stage:
            # The first unfinished job of the fold that has left a status line in its log.
            for step, done in (("train", trained), ("rerank", reranked)):
                if not done:
                    note = _last_status(root / cell.path(f"logs/{step}", f"{fold}.log"), now)
                    break
    row.done = {
        "trained": models,
        "re-ranked": runs,
        "evaluated": evaluated,
        "tracked": int(_exists(root, cell.path("cells", "mlflow.json"))),
    }
    row.note = note
    return row


def format_table(rows: Sequence[Row], summary_note: str | None = None) -> str:
    """The rows as an aligned text table, one line per row, its status note under it, then (with
    ``summary_note``, see :func:`summary_note`) how many rows are complete and what the study's
    summary file is.

    Example:
        >>> row = Row(Cell("sample", "pointwise", 64), 2, {"trained": 2, "re-ranked": 1, "evaluated": 1, "tracked": 0})
        >>> print(format_table([row]))
        dataset  cell           trained  re-ranked  evaluated  tracked
        sample   pointwise-L64  2/2      1/2        1/2        no
    """

    def show(row: Row, step: str) -> str:
        value = row.done.get(step)
        if value is None:
            return "-"
        if step == "tracked":
            return "yes" if value else "no"
        return f"{value}/{row.folds}"

    table = [["dataset", "cell", *STEPS]]
    notes: dict[int, str] = {}
    for row in rows:
        name = row.cell.name + (" (first stage)" if row.cell.is_first_stage else "")
        table.append([row.cell.dataset, name, *(show(row, step) for step in STEPS)])
        if row.note:
            notes[len(table) - 1] = row.note
    widths = [max(len(line[i]) for line in table) for i in range(len(table[0]))]
    out = []
    for i, line in enumerate(table):
        out.append("  ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)).rstrip())
        if i in notes:
            out.append(f"  now: {notes[i]}")
    if summary_note is not None:
        done = sum(row.complete for row in rows)
        out.append(f"{done}/{len(rows)} rows complete; {summary_note}")
    return "\n".join(out)


def summary_note(study: str, root: str | Path = ".") -> str:
    """What ``results/summary.md`` under ``root`` is: missing, this study's, or another's.

    ``results/`` is shared by every study run in the folder: the summary there may be the quick
    start's while ``params.yaml``'s study is asked about, so say whose it is (its
    ``summary.json`` names the study), never that it belongs to the study shown.

    Example:
        >>> summary_note("quickstart", "/nowhere")
        'results/summary.md not written yet'
    """
    results = Path(root) / "results"
    if not (results / "summary.md").is_file():
        return "results/summary.md not written yet"
    try:
        title = read_json(results / "summary.json").get("title")
    except (OSError, ValueError, AttributeError):
        title = None
    if title is None:
        return "results/summary.md exists (no results/summary.json says which study wrote it)"
    if title == study:
        return "results/summary.md is this study's"
    return (
        f"results/summary.md is study {title!r}'s, not this one's "
        "(that study's --configfile shows its rows)"
    )


def study_status(study: str, cells: Sequence[tuple[Cell, int]], root: str | Path = ".") -> str:
    """The status table of study ``study``'s ``cells`` under ``root`` (see :func:`cell_rows`)."""
    rows = cell_rows(cells, root)
    return f"study {study!r}\n{format_table(rows, summary_note(study, root))}"
