"""Mass et al.'s chunking table: chunked BERTlets against BERTlets, per max length."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from reranklab.report.analyses.figures import save_table
from reranklab.report.analyses.outputs import PAIRS
from reranklab.report.analyses.study import StudyData

MEASURES = ("P@1", "MAP", "MRR")


def chunking(study: StudyData, dataset: str, out_dir: Path) -> list[Path]:
    """``chunking.csv``: per base variant and max length, both values and the difference.

    Empty (its header only) when the grid has no chunked cell beside its unchunked one.
    """
    rows = {(row.variant, row.max_length): row for row in study.rows(dataset)}
    measures = [m for m in MEASURES if m in study.measures]
    records = []
    for base, chunked in PAIRS:
        for (variant, length), row in sorted(rows.items(), key=lambda item: str(item[0])):
            other = rows.get((chunked, length))
            if variant != base or other is None:
                continue
            record = {"dataset": dataset, "base": base, "chunked": chunked, "max_length": length}
            for m in measures:
                record[f"{m}_base"] = row.overall.get(m)
                record[f"{m}_chunked"] = other.overall.get(m)
                both = (row.overall.get(m), other.overall.get(m))
                record[f"{m}_diff"] = None if None in both else both[1] - both[0]
            records.append(record)
    columns = ["dataset", "base", "chunked", "max_length"] + [
        f"{m}_{part}" for m in measures for part in ("base", "chunked", "diff")
    ]
    table = pd.DataFrame(records, columns=columns)
    return save_table(table, out_dir / "chunking.csv", f"{dataset}: chunked against BERTlets")
