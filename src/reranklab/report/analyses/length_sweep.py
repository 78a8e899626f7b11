"""Mass et al.'s max-length sweep: MAP and MRR against the max length, one line per variant."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from reranklab.report.analyses.figures import new_figure, save_figure, save_table
from reranklab.report.analyses.study import StudyData

MEASURES = ("MAP", "MRR")


def sweep_table(study: StudyData, dataset: str) -> pd.DataFrame:
    """One row per (variant, max length) cell: ``dataset, variant, max_length, MAP, MRR``."""
    measures = [m for m in MEASURES if m in study.measures]
    records = [
        {"dataset": dataset, "variant": row.variant, "max_length": row.max_length}
        | {m: row.overall.get(m) for m in measures}
        for row in study.rows(dataset)
        if not row.first_stage
    ]
    columns = ["dataset", "variant", "max_length", *measures]
    return pd.DataFrame(records, columns=columns).sort_values(["variant", "max_length"])


def length_sweep(study: StudyData, dataset: str, out_dir: Path) -> list[Path]:
    """``length_sweep.png`` (a panel per measure) and ``length_sweep.csv``."""
    table = sweep_table(study, dataset)
    measures = [m for m in MEASURES if m in table.columns]
    figure, panels = new_figure(4.0 * len(measures), 3.6, panels=len(measures))
    panels = panels if isinstance(panels, list) else [panels]
    base = next((row for row in study.rows(dataset) if row.first_stage), None)
    for axes, measure in zip(panels, measures, strict=True):
        for variant, group in table.groupby("variant", sort=True):
            axes.plot(group["max_length"], group[measure], marker="o", label=variant)
        if base is not None and measure in base.overall:
            axes.axhline(base.overall[measure], linestyle="--", color="grey", label=base.label)
        lengths = sorted(table["max_length"].dropna().unique())
        axes.set_xticks(lengths, [str(int(n)) for n in lengths])
        axes.set_xlabel("max length (word pieces)")
        axes.set_ylabel(measure)
        axes.set_title(f"{dataset}: {measure} by max length")
        axes.legend(fontsize=7)
    return [
        save_figure(figure, out_dir / "length_sweep.png"),
        *save_table(table, out_dir / "length_sweep.csv", f"{dataset}: MAP and MRR by max length"),
    ]
