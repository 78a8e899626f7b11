"""The study's DVC plots: each dataset's sweep and per-query tables concatenated, its figures
gathered in one folder (``dvc plots show`` renders the CSVs with .dvc/plots templates and the
PNGs as images; ``dvc plots diff`` puts two commits side by side)."""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from pathlib import Path

import pandas as pd

from reranklab.io import atomic_path, atomic_write_text

TABLES = ("length_sweep.csv", "query_delta.csv")
# The columns of a table no dataset wrote (a study without a sweep), for DVC's plot templates.
HEADERS = {"length_sweep.csv": ["dataset", "variant", "max_length", "MAP", "MRR"]}
FIGURES = ("methods.png", "length_sweep.png", "query_delta.png", "ap_distribution.png")


def collect_plots(report_dirs: Mapping[str, Path], out_dir: Path) -> list[Path]:
    """Write ``out_dir/{length_sweep,query_delta}.csv`` (every dataset's rows) and copy each
    dataset's figures to ``out_dir/figures/<dataset>-<figure>.png``.

    Example:
        >>> collect_plots({"wikiqa": Path("results/report/wikiqa")}, Path("results/plots"))  # doctest: +SKIP
    """
    written = []
    (out_dir / "figures").mkdir(parents=True, exist_ok=True)
    for name in TABLES:
        # A study with one max length has no sweep: the DVC plot gets the header alone.
        frames = [
            pd.read_csv(folder / name)
            for folder in report_dirs.values()
            if (folder / name).is_file()
        ]
        table = (
            pd.concat(frames, ignore_index=True)
            if frames
            else pd.DataFrame(columns=HEADERS.get(name, []))
        )
        atomic_write_text(out_dir / name, table.to_csv(index=False, lineterminator="\n"))
        written.append(out_dir / name)
    for dataset, folder in report_dirs.items():
        for figure in FIGURES:
            if not (folder / figure).is_file():
                continue  # an analysis with nothing to show for this grid (one max length)
            target = out_dir / "figures" / f"{dataset.replace('/', '_')}-{figure}"
            with atomic_path(target) as temporary:
                shutil.copyfile(folder / figure, temporary)
            written.append(target)
    return written
