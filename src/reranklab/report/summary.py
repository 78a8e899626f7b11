"""The study's summary table: one row per (dataset, variant, max length), with significance.

Three files, one content:

- ``summary.csv``: every number, full precision, for pandas / spreadsheets;
- ``summary.md``: the table a paper would print, ``0.412† (0.405 ± 0.021)`` = overall value
  over all test queries († = significantly different from the first stage), and the mean ±
  sample std of the per-fold values;
- with a seed axis (``seeds``), a re-ranker row holds the mean over seeds and
  ``0.412† ± 0.013`` (± the sample std over seeds); the CSV adds ``<measure>_seed_std`` and
  ``n_seeds``;
- ``summary.json``: ``{"title", "measures", "rows": [...]}`` for programs, plus one flat entry
  per row, ``"<dataset>/<variant>/L<max_length>": {"P@1": ..., "MAP": ...}`` (overall values),
  which is what ``dvc metrics show`` / ``dvc metrics diff`` display (they skip lists).

Significance, two marks:

- ``†``: for every re-ranker row and measure, a two-sided paired t-test
  (``scipy.stats.ttest_rel``) of its per-query values against those of the same dataset's
  first-stage row (``bm25`` or ``pool``), paired by query, uncorrected (``<measure>_p``);
- superscript letters, the way the papers mark them: every pair of rows of a dataset compared
  by :mod:`reranklab.grading.significance` (the study's test and correction,
  ``report.significance``); a value carries the letters of the rows (the ``row`` column) it is
  significantly *higher* than. Every comparison, with both tests, the effect size and a
  bootstrap confidence interval, is in ``significance.csv`` / ``significance.md``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from reranklab.errors import FormatError
from reranklab.evaluation.measures import NAMES
from reranklab.grading.significance import (
    Comparison,
    Significance,
    beaten,
    compare_rows,
    t_test,
)
from reranklab.io import atomic_write_text, read_json, write_json
from reranklab.report.summary_text import (
    _csv,
    _first_stage_notes,
    _label,
    _markdown,
    _notes,
    _significance_csv,
    _significance_md,
    _without_planted_md,
)

FIRST_STAGE_VARIANTS = ("bm25", "pool")
# Settings of a cell copied into its summary.json row (reranklab.grading.regress grades by them).
CELL_SETTINGS = ("study", "paper", "claims", "scored", "encoder", "epochs")


def is_first_stage(cell: dict[str, Any]) -> bool:
    """A first-stage row: variant ``bm25``/``pool`` or no max length."""
    return cell["variant"] in FIRST_STAGE_VARIANTS or cell.get("max_length") is None


def row_key(dataset: str, variant: str, max_length: int | None) -> str:
    """``wikiqa/pointwise/L256``, or ``wikiqa/bm25`` for a first-stage row (:attr:`Cell.key`)."""
    from reranklab.settings.cell import Cell

    return Cell(dataset, variant, None if max_length is None else int(max_length)).key


def paired_p_value(values: Sequence[float], baseline: Sequence[float]) -> float | None:
    """Two-sided paired t-test p-value of ``values`` against ``baseline`` (same query order):
    :func:`reranklab.grading.significance.t_test` of the differences.

    Identical samples give 1.0 (no difference at all); fewer than two pairs, or a t statistic
    scipy cannot compute, give ``None``.

    Example:
        >>> round(paired_p_value([0.5, 1.0, 0.2, 0.7], [0.25, 0.5, 0.2, 0.2]), 4)
        0.0796
    """
    if len(values) != len(baseline):
        raise ValueError(f"paired samples differ in length: {len(values)} vs {len(baseline)}")
    return t_test(np.asarray(values, dtype=float) - np.asarray(baseline, dtype=float))


def _load_row(
    cell: dict[str, Any], measures: Sequence[str]
) -> tuple[dict[str, Any], dict[str, dict[str, float]]]:
    metrics = read_json(cell["metrics_path"])
    if not isinstance(metrics, dict) or "overall" not in metrics or "per_query" not in metrics:
        raise FormatError(
            cell["metrics_path"],
            None,
            "not a cell metrics file of aggregate_folds: needs 'overall' and 'per_query'",
        )
    max_length = None if cell.get("max_length") is None else int(cell["max_length"])
    row: dict[str, Any] = {
        "dataset": cell["dataset"],
        "variant": cell["variant"],
        "max_length": max_length,
        "key": row_key(cell["dataset"], cell["variant"], max_length),
        "first_stage": is_first_stage(cell),
    }
    overall = metrics["overall"]
    fold_mean = metrics.get("fold_mean", {})
    fold_std = metrics.get("fold_std", {})
    for name in measures:
        row[name] = overall.get(name)
        row[f"{name}_mean"] = fold_mean.get(name)
        row[f"{name}_std"] = fold_std.get(name)
        row[f"{name}_p"] = None
    row["n_queries"] = metrics.get("n_queries")
    row["n_excluded"] = metrics.get("n_excluded")
    row["n_folds"] = metrics.get("n_folds", len(metrics.get("folds", [])))
    # A cell of a study with a seed axis: aggregate_seeds' mean and std over seeds.
    row["n_seeds"] = int(metrics.get("n_seeds") or 1)
    for name in measures:
        row[f"{name}_seed_std"] = (metrics.get("seed_std") or {}).get(name)
    row["relevance_threshold"] = metrics.get("relevance_threshold")
    row["scoring"] = (metrics.get("scoring") or {}).get("name")
    row["scoring_description"] = (metrics.get("scoring") or {}).get("description")
    row["dropped"] = metrics.get("dropped") or {}
    row["ties"] = metrics.get("ties") or {}
    row["metrics_path"] = str(cell["metrics_path"])
    # What `reranklab regress` matches a row by, when the rule passes it (study, paper, encoder,
    # epochs).
    row.update({key: cell[key] for key in CELL_SETTINGS if key in cell})
    if cell.get("base"):  # an alias's row: its registered variant
        row["base"] = cell["base"]
    return row, metrics.get("per_query", {})


def _measures(cells: list[dict[str, Any]]) -> list[str]:
    """The measures of the cells' metrics files: the usual five first, then any others in order."""
    found: list[str] = []
    for cell in cells:
        metrics = read_json(cell["metrics_path"])
        names = (
            metrics.get("measures") or list(metrics.get("overall") or {})
            if isinstance(metrics, dict)
            else []
        )
        found += [name for name in names if name not in found]
    return [n for n in NAMES if n in found] + [n for n in found if n not in NAMES]


def _order(rows: list[dict[str, Any]]) -> list[int]:
    datasets: list[str] = []
    for row in rows:
        if row["dataset"] not in datasets:
            datasets.append(row["dataset"])
    # Stable: within a dataset the first-stage rows lead, the rest keep the caller's order.
    return sorted(
        range(len(rows)),
        key=lambda i: (datasets.index(rows[i]["dataset"]), not rows[i]["first_stage"]),
    )


def _add_significance(
    rows: list[dict[str, Any]], per_query: list[dict], measures: Sequence[str]
) -> None:
    baselines: dict[str, int] = {}
    for i, row in enumerate(rows):
        if row["first_stage"]:
            baselines.setdefault(row["dataset"], i)
    for i, row in enumerate(rows):
        base = baselines.get(row["dataset"])
        row["baseline"] = None if base is None or row["first_stage"] else rows[base]["key"]
        if row["baseline"] is None:
            continue
        common = sorted(set(per_query[i]) & set(per_query[base]))
        for name in measures:
            values, first = _paired(per_query[i], per_query[base], common, name)
            row[f"{name}_p"] = paired_p_value(values, first)


def _paired(
    values: Mapping[str, Mapping[str, float]],
    first: Mapping[str, Mapping[str, float]],
    queries: Sequence[str],
    name: str,
) -> tuple[list[float], list[float]]:
    """The two rows' values of ``name`` on ``queries``, where both have one (same order)."""
    pairs = [(values[q].get(name), first[q].get(name)) for q in queries]
    pairs = [(a, b) for a, b in pairs if a is not None and b is not None]
    return [a for a, _ in pairs], [b for _, b in pairs]


def _read_first_stage(dataset: str, path: str | os.PathLike[str]) -> dict[str, Any]:
    record = read_json(path)
    if not isinstance(record, dict) or not all(k in record for k in ("recall", "planted")):
        raise FormatError(
            path, None, f"not a first-stage record of {dataset}: needs 'recall' and 'planted'"
        )
    return record


def _mean(values: Sequence[float]) -> float | None:
    return float(np.mean(values)) if len(values) else None


def _add_first_stage(
    rows: list[dict[str, Any]],
    per_query: list[dict],
    measures: Sequence[str],
    records: Mapping[str, str | os.PathLike[str]],
) -> dict[str, dict[str, Any]]:
    """The first stage's recall at its depth and its planted answers, per dataset.

    Where answers were planted (``inject_relevant``), every row of the dataset also gets each
    measure over the questions whose candidates already held an answer
    (``<measure>_without_planted``, its paired t-test against the first stage in
    ``<measure>_without_planted_p``): on the others a re-ranker can only find the planted
    answer, which the first stage ranks last.
    """
    found: dict[str, dict[str, Any]] = {}
    for dataset, path in records.items():
        base = next(
            (i for i, r in enumerate(rows) if r["dataset"] == dataset and r["first_stage"]), None
        )
        if base is None:
            continue
        record = _read_first_stage(dataset, path)
        qids = set(per_query[base])
        recall = [record["recall"].get(q, 0.0) for q in sorted(qids)]
        planted = sorted(set(record["planted"]) & qids)
        info = {
            "first_stage": record.get("first_stage"),
            "depth": record.get("depth"),
            "planted_answers": bool(record.get("planted_answers")),
            "n_queries": len(qids),
            "recall_at_depth": _mean(recall),
            "n_planted": len(planted),
            "planted": planted,
        }
        found[dataset] = info
        rows[base].update(
            recall_at_depth=info["recall_at_depth"], depth=info["depth"], n_planted=len(planted)
        )
        if not planted:
            continue
        for i, row in enumerate(rows):
            if row["dataset"] != dataset:
                continue
            kept = sorted((set(per_query[i]) & set(per_query[base])) - set(planted))
            row["n_without_planted"] = len(kept)
            for name in measures:
                values, first = _paired(per_query[i], per_query[base], kept, name)
                row[f"{name}_without_planted"] = _mean(values)
                row[f"{name}_without_planted_p"] = (
                    paired_p_value(values, first) if i != base else None
                )
    return found


def _add_grid_significance(
    rows: list[dict[str, Any]],
    per_query: list[dict],
    measures: Sequence[str],
    settings: Significance,
) -> list[Comparison]:
    """Label each dataset's rows (a, b, …) and list, per measure, the rows each one beats."""
    seen: dict[str, int] = {}
    for row in rows:
        row["row"] = _label(seen.get(row["dataset"], 0))
        seen[row["dataset"]] = seen.get(row["dataset"], 0) + 1
    comparisons = compare_rows(rows, per_query, measures, settings)
    label_of = {row["key"]: row["row"] for row in rows}
    for row in rows:
        for name in measures:
            row[f"{name}_beats"] = sorted(
                (label_of[key] for key in beaten(comparisons, row["key"], name)),
                key=lambda label: (len(label), label),
            )
    return comparisons


def summarize(
    cells: list[dict[str, Any]],
    out_csv: str | os.PathLike[str],
    out_md: str | os.PathLike[str],
    out_json: str | os.PathLike[str],
    title: str,
    significance: Mapping[str, Any] | None = None,
    out_significance_csv: str | os.PathLike[str] | None = None,
    out_significance_md: str | os.PathLike[str] | None = None,
    first_stages: Mapping[str, str | os.PathLike[str]] | None = None,
) -> list[dict[str, Any]]:
    """Write the summary table of a study as CSV, Markdown and JSON (each atomically).

    Args:
        cells: ``{"dataset", "variant", "max_length" (None for a first-stage row),
            "metrics_path"}`` per row; ``metrics_path`` is an :func:`aggregate_folds` output
            (with a seed axis, an :func:`~reranklab.evaluation.seeds.aggregate_seeds` output).
        out_csv: CSV path (columns: dataset, variant, max_length, the measures, then
            ``<measure>_mean``, ``<measure>_std``, ``<measure>_p``, n_queries, n_excluded, n_folds).
        out_md: Markdown path.
        out_json: JSON path.
        title: the study's title (heading of the Markdown, ``title`` of the JSON).
        significance: the ``report.significance`` settings (test, correction, alpha,
            resamples, seed, reference); ``None`` = their defaults.
        out_significance_csv, out_significance_md: where every pairwise comparison goes
            (:mod:`reranklab.grading.significance`); ``None`` = not written.
        first_stages: ``{dataset: first_stage.json}`` of the retrieve step: the first-stage
            row gets its recall at the depth and how many answers were planted, and where any
            were, every row its measures without them (``<measure>_without_planted``).

    Returns:
        The rows, in table order (per dataset: first-stage rows first, then the given order).

    Example:
        >>> summarize([{"dataset": "wikiqa", "variant": "bm25", "max_length": None,
        ...             "metrics_path": "results/wikiqa/bm25/metrics.json"}],
        ...           "summary.csv", "summary.md", "summary.json", "wikiqa-bert-base")  # doctest: +SKIP
    """
    if not cells:
        raise ValueError("no cells to summarise")
    measures = _measures(cells)
    loaded = [_load_row(cell, measures) for cell in cells]
    keys = [row["key"] for row, _ in loaded]
    duplicates = sorted({k for k in keys if keys.count(k) > 1})
    if duplicates:
        raise ValueError(f"cells listed twice: {', '.join(duplicates)}")
    order = _order([row for row, _ in loaded])
    rows = [loaded[i][0] for i in order]
    per_query = [loaded[i][1] for i in order]
    _add_significance(rows, per_query, measures)
    found = _add_first_stage(rows, per_query, measures, first_stages or {})
    settings = Significance.from_settings(significance)
    comparisons = _add_grid_significance(rows, per_query, measures, settings)
    if out_significance_csv is not None:
        atomic_write_text(out_significance_csv, _significance_csv(comparisons))
    if out_significance_md is not None:
        atomic_write_text(out_significance_md, _significance_md(comparisons, rows, settings))

    seeded = any(row["n_seeds"] >= 2 for row in rows)
    atomic_write_text(out_csv, _csv(rows, measures, seeded))
    notes = _notes(rows, settings) + _first_stage_notes(found)
    if seeded:
        notes.insert(
            1,
            (
                "Rows with several seeds: the mean over seeds ± the sample standard deviation (ddof=1) over "
                "seeds of the value over all test queries (every seed has the same folds; the per-fold "
                "spread is in summary.csv); the t-test pairs each query's mean over seeds with the first stage."
            ),
        )
    markdown = _markdown(rows, measures, title, notes, seeded)
    extra = _without_planted_md(rows, measures, found)
    atomic_write_text(out_md, markdown + ("\n".join(extra) if extra else ""))
    # Only "title" and the flat per-row entries are scalars or dicts: dvc metrics show/diff
    # display those and skip the lists (measures, notes, rows) meant for people and programs.
    document: dict[str, Any] = {"title": title, "measures": measures, "notes": notes, "rows": rows}
    if found:
        document["first_stages"] = found
    for row in rows:
        document[row["key"]] = {name: row[name] for name in measures if row[name] is not None}
    write_json(Path(out_json), document)
    return rows
