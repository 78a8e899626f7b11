"""The report folders of a study's datasets, keyed by dataset (``results/report/<dataset>``)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path


def report_dirs_of(folders: Sequence[str | os.PathLike[str]]) -> dict[str, Path]:
    """``results/report/<dataset>`` folders keyed by their dataset (the part after report/;
    an ir_datasets name such as ``irds:antique/test`` spans two folders).

    Example:
        >>> report_dirs_of(["results/report/wikiqa", "results/report/irds:antique/test"])
        {'wikiqa': PosixPath('results/report/wikiqa'), 'irds:antique/test': PosixPath('results/report/irds:antique/test')}
    """
    out = {}
    for folder in map(Path, folders):
        parts = folder.parts
        dataset = "/".join(parts[parts.index("report") + 1 :]) if "report" in parts else folder.name
        out[dataset] = folder
    return out
