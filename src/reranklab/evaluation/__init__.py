"""Evaluation: pytrec_eval measures per query, and their aggregation over folds."""

from reranklab.evaluation.aggregate import aggregate_folds
from reranklab.evaluation.evaluate import evaluate_run, relevant_qids
from reranklab.evaluation.measures import ALL, BY_NAME, NAMES, Measure, resolve_measures

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
