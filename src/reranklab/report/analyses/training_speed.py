"""BERT-DMN's Table 3: training batches/s per epoch, each full model against its lite variant.

``training_speed.csv`` has one line per (cell, fold, epoch) with the steps, seconds and
batches/s of that epoch (dev scoring left out), and, for a lite variant whose full model is in
the grid at the same max length, the speed-up over it (mean batches/s over their epochs).
"""

from __future__ import annotations

from pathlib import Path
from statistics import fmean

import pandas as pd

from reranklab.report.analyses.figures import save_table
from reranklab.report.analyses.study import StudyData

# The lite variant -> its full model: the first of these the grid has at the same max length
# (bert_lite: BERT-DMN's fine-tuned BERT, else the point-wise BERT).
LITE_OF = {"dmn_lite": ("dmn",), "bert_lite": ("bert", "pointwise")}


def epoch_rows(stats: dict) -> list[dict]:
    """A fold's epochs from its ``train_stats.json`` (``epoch_speed``; older files: one line)."""
    if stats.get("epoch_speed"):
        return list(stats["epoch_speed"])
    steps, seconds = stats.get("steps"), stats.get("train_seconds")
    if not steps or not seconds:
        return []
    return [{"epoch": None, "steps": steps, "seconds": seconds, "batches_per_s": steps / seconds}]


def training_speed(study: StudyData, dataset: str, out_dir: Path) -> list[Path]:
    records = []
    for row in study.rows(dataset):
        for stats in study.train_stats(row):
            for epoch in epoch_rows(stats):
                records.append(
                    {
                        "dataset": dataset,
                        "variant": row.variant,
                        "max_length": row.max_length,
                        "fold": stats["fold"],
                        **epoch,
                        "device": stats.get("device"),
                        "batch_size": stats.get("batch_size"),
                    }
                )
    columns = [
        "dataset",
        "variant",
        "max_length",
        "fold",
        "epoch",
        "steps",
        "seconds",
        "batches_per_s",
        "device",
        "batch_size",
        "speedup_over_full",
    ]
    table = pd.DataFrame(records, columns=columns[:-1])
    mean_speed = {
        key: fmean(group["batches_per_s"].dropna())
        if group["batches_per_s"].notna().any()
        else None
        for key, group in table.groupby(["variant", "max_length"], dropna=False)
    }
    table["speedup_over_full"] = [
        (mean_speed.get((variant, length)) or 0) / full
        if (
            full := next(
                (
                    speed
                    for name in LITE_OF.get(variant, ())
                    if (speed := mean_speed.get((name, length)))
                ),
                None,
            )
        )
        else None
        for variant, length in zip(table["variant"], table["max_length"], strict=True)
    ]
    return save_table(
        table[columns], out_dir / "training_speed.csv", f"{dataset}: batches/s per epoch"
    )
