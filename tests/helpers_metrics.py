"""What the summary tests share: a cell metrics file of one measure, MAP, from per-query values."""

from __future__ import annotations

import json
from pathlib import Path


def metrics_file(path: Path, per_query: dict[str, dict[str, float]]) -> str:
    """Write an ``aggregate_folds``-shaped metrics file of one fold to ``path``; its path."""
    values = list(per_query.values())
    overall = {"MAP": sum(v["MAP"] for v in values) / len(values)}
    path.write_text(
        json.dumps(
            {
                "measures": ["MAP"],
                "overall": overall,
                "fold_mean": overall,
                "fold_std": {"MAP": 0.0},
                "per_query": per_query,
                "n_queries": len(values),
                "n_excluded": 0,
                "n_folds": 1,
            }
        )
    )
    return str(path)
