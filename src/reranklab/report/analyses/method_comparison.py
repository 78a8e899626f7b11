"""Mass et al.'s method comparison: each cell's MAP and MRR as bars, the first stage as a line."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from reranklab.report.analyses.figures import new_figure, save_figure, save_table
from reranklab.report.analyses.study import StudyData

MEASURES = ("MAP", "MRR")


def method_comparison(study: StudyData, dataset: str, out_dir: Path) -> list[Path]:
    """``methods.png`` (grouped bars per cell, dashed first-stage lines) and ``methods.csv``."""
    rows = study.rows(dataset)
    measures = [m for m in MEASURES if m in study.measures] or study.measures[:2]
    table = pd.DataFrame(
        [
            {"cell": row.label, "first_stage": row.first_stage}
            | {m: row.overall.get(m) for m in measures}
            for row in rows
        ]
    )
    cells = [row for row in rows if not row.first_stage]
    base = next((row for row in rows if row.first_stage), None)
    figure, axes = new_figure(max(6.0, 1.1 * len(cells) + 3), 4.0)
    width = 0.8 / max(1, len(measures))
    for i, measure in enumerate(measures):
        positions = [j + (i - (len(measures) - 1) / 2) * width for j in range(len(cells))]
        bars = axes.bar(
            positions, [row.overall.get(measure, 0.0) for row in cells], width, label=measure
        )
        axes.bar_label(bars, fmt="%.3f", fontsize=7)
        if base is not None and measure in base.overall:
            axes.axhline(
                base.overall[measure],
                linestyle="--",
                color=bars.patches[0].get_facecolor() if bars.patches else None,
                label=f"{base.label} {measure}",
            )
    axes.set_xticks(range(len(cells)), [row.label for row in cells], rotation=30, ha="right")
    axes.set_ylim(0, 1)
    axes.set_ylabel("value over all test queries")
    axes.set_title(f"{dataset}: methods compared")
    axes.legend(fontsize=8, loc="upper left")
    return [
        save_figure(figure, out_dir / "methods.png"),
        *save_table(table, out_dir / "methods.csv", f"{dataset}: MAP and MRR per cell"),
    ]
