"""The distribution of per-query AP of every row (box plots): how much of a mean is a few
queries, and where two cells with the same MAP differ."""

from __future__ import annotations

from pathlib import Path

from reranklab.report.analyses.figures import new_figure, save_figure
from reranklab.report.analyses.study import StudyData


def ap_distribution(
    study: StudyData, dataset: str, out_dir: Path, measure: str = "MAP"
) -> list[Path]:
    """``ap_distribution.png``: one box per row (the mean as a marker)."""
    rows = study.rows(dataset)
    values = [
        [v[measure] for v in study.per_query(row).values() if v.get(measure) is not None]
        for row in rows
    ]
    figure, axes = new_figure(max(6.0, 0.9 * len(rows) + 2), 4.0)
    axes.boxplot(values, showmeans=True)
    axes.set_xticks(range(1, len(rows) + 1), [row.label for row in rows], rotation=30, ha="right")
    axes.set_ylim(-0.02, 1.02)
    axes.set_ylabel(f"per-query {'AP' if measure == 'MAP' else measure}")
    axes.set_title(f"{dataset}: per-query {'AP' if measure == 'MAP' else measure} per row")
    return [save_figure(figure, out_dir / "ap_distribution.png")]
