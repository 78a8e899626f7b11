"""Figures and tables written atomically, the same way by every analysis."""

from __future__ import annotations

import io
import os
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # files only: no display, the same output on every machine
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from reranklab.io import atomic_write_bytes, atomic_write_text  # noqa: E402
from reranklab.report.html import table_page  # noqa: E402

# Metadata off: PNGs without the matplotlib version or a date, identical on every run.
PNG_METADATA = {"Software": None}


def new_figure(width: float = 7.0, height: float = 4.0, panels: int = 1) -> tuple[Any, Any]:
    """A figure and its axes (a list of ``panels`` side by side when more than one), at a size
    that reads well in the HTML report."""
    figure, axes = plt.subplots(1, panels, figsize=(width, height), dpi=100, squeeze=False)
    return figure, (axes[0][0] if panels == 1 else list(axes[0]))


def save_figure(figure: Any, path: str | os.PathLike[str]) -> Path:
    """Write ``figure`` as a PNG at ``path`` (atomically) and close it."""
    buffer = io.BytesIO()
    figure.tight_layout()
    figure.savefig(buffer, format="png", metadata=PNG_METADATA)
    plt.close(figure)
    atomic_write_bytes(path, buffer.getvalue())
    return Path(path)


def save_table(table: pd.DataFrame, path: str | os.PathLike[str], title: str) -> list[Path]:
    """Write ``table`` as CSV at ``path`` (full precision, no index) and as an HTML page beside
    it (``.html``: what the report shows), both atomically."""
    path = Path(path)
    atomic_write_text(path, table.to_csv(index=False, lineterminator="\n"))
    atomic_write_text(path.with_suffix(".html"), table_page(table, title))
    return [path, path.with_suffix(".html")]
