"""Evaluation: pytrec_eval measures per query, and their aggregation over folds."""

from __future__ import annotations

from typing import TYPE_CHECKING

from reranklab.lazy import lazy_exports

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

__getattr__ = lazy_exports(__name__, _HOME)
