"""Evaluation: pytrec_eval measures per query, and their aggregation over folds."""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from reranklab.evaluation.aggregate import aggregate_folds
    from reranklab.evaluation.evaluate import evaluate_run, relevant_qids
    from reranklab.evaluation.measures import ALL, BY_NAME, NAMES, Measure, resolve_measures

# Loaded when first asked for: `reranklab.config` reads `evaluation.protocol`, and every job
# imports the config, while only the scoring steps need pytrec_eval and scipy (~0.5 s a process).
_HOME = {
    "ALL": "measures",
    "BY_NAME": "measures",
    "NAMES": "measures",
    "Measure": "measures",
    "resolve_measures": "measures",
    "aggregate_folds": "aggregate",
    "evaluate_run": "evaluate",
    "relevant_qids": "evaluate",
}
__all__ = [
    "ALL",
    "BY_NAME",
    "NAMES",
    "Measure",
    "aggregate_folds",
    "evaluate_run",
    "relevant_qids",
    "resolve_measures",
]


def __getattr__(name: str) -> Any:
    if name not in _HOME:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(f"{__name__}.{_HOME[name]}"), name)
