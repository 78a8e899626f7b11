"""Learning curves of every trained cell: the training loss per step and, with dev
validation, the dev measure per epoch (one line per cell and fold)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from reranklab.report.analyses.figures import new_figure, save_figure, save_table
from reranklab.report.analyses.study import StudyData


def learning_curves(study: StudyData, dataset: str, out_dir: Path) -> list[Path]:
    """``learning_curves.png`` (loss, and the dev measure beside it where the study validated on
    dev) and ``learning_curves.csv`` (long form)."""
    records = []
    for row in study.rows(dataset):
        for stats in study.train_stats(row):
            for step, loss in stats.get("loss_curve") or []:
                records.append(
                    {
                        "cell": row.label,
                        "fold": stats["fold"],
                        "kind": "loss",
                        "step": step,
                        "epoch": None,
                        "value": loss,
                    }
                )
            selection = stats.get("validation") or {}
            for entry in selection.get("history") or []:
                measure = selection.get("measure")
                if isinstance(entry, dict) and measure in entry:
                    records.append(
                        {
                            "cell": row.label,
                            "fold": stats["fold"],
                            "kind": f"dev {measure}",
                            "step": entry.get("step"),
                            "epoch": entry.get("epoch"),
                            "value": entry[measure],
                        }
                    )
    table = pd.DataFrame(records, columns=["cell", "fold", "kind", "step", "epoch", "value"])
    dev = table[table["kind"] != "loss"]
    # The dev panel only where the study validated on dev (training.validation): an empty panel
    # says nothing a reader needs.
    figure, panels = new_figure(10.0 if len(dev) else 5.5, 3.8, panels=2 if len(dev) else 1)
    loss_axes, dev_axes = panels if len(dev) else (panels, None)
    for (cell, fold), group in table[table["kind"] == "loss"].groupby(["cell", "fold"]):
        loss_axes.plot(group["step"], group["value"], label=f"{cell} {fold}")
    loss_axes.set_xlabel("step")
    loss_axes.set_ylabel("training loss (mean of the window)")
    loss_axes.set_title(f"{dataset}: training loss")
    if dev_axes is not None:
        for (cell, fold, kind), group in dev.groupby(["cell", "fold", "kind"]):
            dev_axes.plot(group["epoch"], group["value"], marker="o", label=f"{cell} {fold} {kind}")
        dev_axes.set_xlabel("epoch")
        dev_axes.set_title(f"{dataset}: dev measure per epoch")
    for axes in (loss_axes, dev_axes):
        if axes is not None and axes.get_legend_handles_labels()[0]:
            axes.legend(fontsize=7)
    return [
        save_figure(figure, out_dir / "learning_curves.png"),
        *save_table(table, out_dir / "learning_curves.csv", f"{dataset}: learning curves"),
    ]
