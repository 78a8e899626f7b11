"""The summary's text: its CSV, its Markdown table with the significance marks, its notes.

:mod:`reranklab.report.summary` computes the rows (values, per-fold spread, seeds, the paired
tests and the grid's comparisons); this module only writes them out: the columns, the ``†``
and the superscript letters, the notes under the table, and ``significance.csv``/``.md``.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping, Sequence
from typing import Any

from reranklab.evaluation.protocol import DROP_REASONS
from reranklab.grading.significance import Comparison, Significance

SIGNIFICANCE_LEVEL = 0.05
DAGGER = "†"


def _first_stage_notes(found: Mapping[str, Mapping[str, Any]]) -> list[str]:
    notes = []
    for dataset, info in found.items():
        depth = info["depth"]
        what = f"top {depth}" if depth else "whole pool"
        recall = info["recall_at_depth"]
        text = (
            f"First stage, {dataset}: {info['first_stage']}'s {what} candidates; recall@"
            f"{depth or 'pool'} {_fmt(recall)} over the {info['n_queries']} test queries (the "
            "ceiling of any re-ranker of them); "
        )
        if not info["planted_answers"]:
            text += "no answer planted."
        else:
            text += (
                f"a relevant passage planted at rank {depth} for {info['n_planted']} of them "
                "whose candidates held none (inject_relevant, Mass et al.'s protocol): the table "
                "below gives every row on the other "
                f"{info['n_queries'] - info['n_planted']}."
            )
        notes.append(text)
    return notes


def _without_planted_md(
    rows: Sequence[dict[str, Any]], measures: Sequence[str], found: Mapping[str, Any]
) -> list[str]:
    lines: list[str] = []
    for dataset, info in found.items():
        if not info["n_planted"]:
            continue
        kept = info["n_queries"] - info["n_planted"]
        lines += [
            f"## {dataset}: without planted answers",
            "",
            f"The {kept} test queries whose first-stage candidates already held a relevant "
            f"passage (the {info['n_planted']} given a planted one left out); {DAGGER} p < "
            f"{SIGNIFICANCE_LEVEL}, paired t-test against the first stage on them.",
            "",
            "| row | variant | max length | " + " | ".join(measures) + " |",
            "|---|---|---|" + "---:|" * len(measures),
        ]
        for row in rows:
            if row["dataset"] != dataset:
                continue
            values = []
            for name in measures:
                text = _fmt(row.get(f"{name}_without_planted"))
                p = row.get(f"{name}_without_planted_p")
                values.append(text + (DAGGER if p is not None and p < SIGNIFICANCE_LEVEL else ""))
            length = "–" if row["max_length"] is None else str(row["max_length"])
            lines.append(
                f"| {row.get('row', '')} | {row['variant']} | {length} | {' | '.join(values)} |"
            )
        lines.append("")
    return lines


# Superscript letters of the rows of a dataset (no superscript q exists in Unicode).


# Superscript letters of the rows of a dataset (no superscript q exists in Unicode).
LETTERS = "abcdefghijklmnoprstuvwxyz"


_SUPERSCRIPT = dict(zip(LETTERS, "ᵃᵇᶜᵈᵉᶠᵍʰⁱʲᵏˡᵐⁿᵒᵖʳˢᵗᵘᵛʷˣʸᶻ", strict=True))


def _label(index: int) -> str:
    """``a`` … ``z`` (no q), then ``a2`` …: the label of a dataset's ``index``-th row."""
    letter = LETTERS[index % len(LETTERS)]
    return letter if index < len(LETTERS) else f"{letter}{index // len(LETTERS) + 1}"


def _superscript(labels: Sequence[str]) -> str:
    if all(label in _SUPERSCRIPT for label in labels):
        return "".join(_SUPERSCRIPT[label] for label in labels)
    return "^" + ",".join(labels)


def _columns(measures: Sequence[str], seeded: bool = False) -> list[str]:
    return (
        ["dataset", "row", "variant", "max_length"]
        + list(measures)
        + [f"{name}_{stat}" for name in measures for stat in ("mean", "std", "p")]
        + ([f"{name}_seed_std" for name in measures] + ["n_seeds"] if seeded else [])
        + ["n_queries", "n_excluded", "n_folds"]
    )


def _first_stage_columns(rows: list[dict[str, Any]], measures: Sequence[str]) -> list[str]:
    """The first stage's recall and planted answers, and the rows without them, where known."""
    columns = []
    if any(row.get("recall_at_depth") is not None for row in rows):
        columns += ["depth", "recall_at_depth", "n_planted"]
    if any("n_without_planted" in row for row in rows):
        columns += [f"{name}_without_planted{p}" for name in measures for p in ("", "_p")]
        columns.append("n_without_planted")
    return columns


def _csv(rows: list[dict[str, Any]], measures: Sequence[str], seeded: bool = False) -> str:
    buffer = io.StringIO()
    fields = _columns(measures, seeded) + _first_stage_columns(rows, measures)
    writer = csv.DictWriter(buffer, fieldnames=fields, extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: ("" if v is None else v) for k, v in row.items()})
    return buffer.getvalue()


def _significance_csv(comparisons: Sequence[Comparison]) -> str:
    buffer = io.StringIO()
    fields = list(Comparison.__dataclass_fields__)
    writer = csv.DictWriter(buffer, fieldnames=fields, lineterminator="\n")
    writer.writeheader()
    for c in comparisons:
        writer.writerow({k: ("" if v is None else v) for k, v in c.as_dict().items()})
    return buffer.getvalue()


def _p(value: float | None) -> str:
    return "–" if value is None else ("< 0.0001" if value < 1e-4 else f"{value:.4f}")


def _significance_md(
    comparisons: Sequence[Comparison], rows: Sequence[dict[str, Any]], settings: Significance
) -> str:
    """Every pair of rows per dataset and measure; the reference cell's pairs first when set."""
    label = {row["key"]: row["row"] for row in rows}
    lines = [
        "# Significance across the grid",
        "",
        f"Every pair of rows of a dataset, per measure, paired by query: {settings.describe()} "
        f"(alpha {settings.alpha}; {settings.resamples} permutations and bootstrap resamples, "
        f"seed {settings.seed}). Δ = mean of A − B; d = Cohen's d for paired samples; "
        "95 % CI = percentile bootstrap of Δ; * = significant after correction.",
        "",
    ]
    header = "| A | B | n | Δ | 95 % CI | d | p (t) | p (perm) | p corrected | |"
    align = "|---|---|---:|---:|---|---:|---:|---:|---:|---|"
    groups: dict[tuple[str, str], list[Comparison]] = {}
    for c in comparisons:
        groups.setdefault((c.dataset, c.measure), []).append(c)
    for (dataset, measure), family in groups.items():
        if settings.reference:
            family = sorted(family, key=lambda c: settings.reference not in (c.a, c.b))
        lines += [f"## {dataset}: {measure}", "", header, align]
        for c in family:
            ci = "–" if c.ci_low is None else f"[{c.ci_low:+.3f}, {c.ci_high:+.3f}]"
            d = "–" if c.effect_size is None else f"{c.effect_size:+.2f}"
            lines.append(
                f"| ({label.get(c.a, '?')}) {c.a} | ({label.get(c.b, '?')}) {c.b} | {c.n} | "
                f"{c.diff:+.4f} | {ci} | {d} | {_p(c.t_p)} | {_p(c.perm_p)} | "
                f"{_p(c.p_corrected)} | {'*' if c.significant else ''} |"
            )
        lines.append("")
    return "\n".join(lines)


def _fmt(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def _md_cell(row: dict[str, Any], name: str) -> str:
    text = _fmt(row[name])
    p = row[f"{name}_p"]
    if p is not None and p < SIGNIFICANCE_LEVEL:
        text += DAGGER
    if row.get(f"{name}_beats"):
        text += _superscript(row[f"{name}_beats"])
    if row.get("n_seeds", 1) >= 2:
        return f"{text} ± {_fmt(row[f'{name}_seed_std'])}"
    if (row["n_folds"] or 0) >= 2 and row[f"{name}_mean"] is not None:
        text += f" ({_fmt(row[f'{name}_mean'])} ± {_fmt(row[f'{name}_std'])})"
    return text


def _notes(rows: list[dict[str, Any]], settings: Significance | None = None) -> list[str]:
    """What the numbers mean: the spread, the marks, and the excluded queries per dataset."""
    baselines = sorted({r["baseline"] for r in rows if r.get("baseline")})
    settings = settings or Significance()
    notes = [
        "Each value is computed over all test queries of the dataset (the folds' held-out rankings "
        "concatenated); in parentheses, the mean ± sample standard deviation (ddof=1) of the "
        "per-fold values.",
        f"{DAGGER} p < {SIGNIFICANCE_LEVEL}: two-sided paired t-test over per-query values "
        "(scipy.stats.ttest_rel) against the same dataset's first-stage ranking "
        f"({', '.join(baselines) or 'none in this table'}); no correction for multiple comparisons.",
        "Superscript letters: the value is significantly higher than that of the rows so "
        f"labelled (column `row`) under the {settings.describe()}, every pair of a dataset's "
        "rows compared; significance.md lists each pair with both tests, the effect size and a "
        "bootstrap 95 % confidence interval.",
    ]
    seen: set[str] = set()
    for row in rows:
        # The first row of a dataset is its first-stage row when there is one; all rows of a
        # dataset share the same test queries.
        if row["dataset"] in seen:
            continue
        seen.add(row["dataset"])
        total = (row["n_queries"] or 0) + (row["n_excluded"] or 0)
        if row.get("scoring"):
            reasons = (
                ", ".join(f"{n} {DROP_REASONS.get(r, r)}" for r, n in row["dropped"].items())
                or "none"
            )
            notes.append(
                f"Scoring, {row['dataset']}: `{row['scoring']}` ({row['scoring_description']}); "
                f"{row['n_queries']} of {total} test queries counted; dropped: {reasons}."
            )
            continue
        threshold = row["relevance_threshold"]
        grade = f"grade ≥ {threshold}" if threshold is not None else "a relevant grade"
        notes.append(
            f"Excluded queries, {row['dataset']}: {row['n_excluded']} of {total} test queries have no "
            f"passage of {grade} and are left out of every average (as in the papers)."
        )
    tied = [
        f"{r['key']} ({r['ties']['passages']} passages in {r['ties']['queries']} queries)"
        for r in rows
        if (r.get("ties") or {}).get("passages")
    ]
    if tied:
        notes.append(
            "Score ties, broken by a seeded hash of (query, passage), never by id or file order: "
            + "; ".join(tied)
            + "."
        )
    return notes


def _markdown(
    rows: list[dict[str, Any]],
    measures: Sequence[str],
    title: str,
    notes: list[str],
    seeded: bool = False,
) -> str:
    header = [
        "dataset",
        "row",
        "variant",
        "max length",
        *measures,
        "queries",
        "excluded",
        "folds",
    ] + (["seeds"] if seeded else [])
    align = ["---"] * 4 + ["---:"] * (len(header) - 4)
    lines = [f"# {title}", "", "| " + " | ".join(header) + " |", "|" + "|".join(align) + "|"]
    for row in rows:
        cells = [
            row["dataset"],
            row.get("row", ""),
            row["variant"],
            "–" if row["max_length"] is None else str(row["max_length"]),
        ]
        cells += [_md_cell(row, name) for name in measures]
        cells += [
            "–" if row[k] is None else str(row[k]) for k in ("n_queries", "n_excluded", "n_folds")
        ]
        if seeded:
            cells.append(str(row["n_seeds"]) if row["n_seeds"] >= 2 else "–")
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    for note in notes:
        lines += [note, ""]
    return "\n".join(lines)
