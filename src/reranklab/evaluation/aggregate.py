"""Combine the folds of one cell: one run over all test queries, its metrics, and fold spread.

The *overall* numbers evaluate the concatenation of the folds' held-out runs, so every test
query weighs the same (as when a paper reports one number over the whole data set). The fold
mean and standard deviation summarise how much the folds disagree.
"""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

from reranklab.errors import FormatError
from reranklab.evaluation.evaluate import evaluate_run
from reranklab.evaluation.protocol import Scoring, default_scoring
from reranklab.io import Qrels, Run, read_json, read_run, write_json, write_run
from reranklab.io.trec import TIE_SEED


def _run_tag(path: Path) -> str | None:
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            parts = line.split()
            if len(parts) == 6:
                return parts[5]
    return None


_METRICS_KEYS = ("aggregate", "per_query", "excluded", "n_queries", "n_excluded")


def _fold_queries(metrics: Any, path: Path) -> set[str]:
    """The queries a fold was evaluated on (scored or excluded), after checking the file's shape."""
    if not isinstance(metrics, dict) or any(key not in metrics for key in _METRICS_KEYS):
        raise FormatError(
            path, None, f"not a metrics file of evaluate_run: needs keys {', '.join(_METRICS_KEYS)}"
        )
    return set(metrics["per_query"]) | set(metrics["excluded"])


def _claim_queries(owner: dict[str, int], queries: set[str], fold: int, run_path: Path) -> None:
    """Record ``fold`` as the owner of its test queries; a query owned twice is an error."""
    for qid in sorted(queries):
        if qid in owner:
            raise ValueError(
                f"query {qid!r} is in the test set of fold {owner[qid]} and of fold {fold} "
                f"({run_path}): the folds' test sets must be disjoint"
            )
        owner[qid] = fold


def _check_scoring(metrics: dict[str, Any], metrics_path: Path, scoring: Scoring | int) -> None:
    """A fold must have been evaluated under the scoring (or relevance level) aggregated with."""
    if isinstance(scoring, Scoring):
        used = metrics.get("scoring")
        if used is not None and used != scoring.as_dict():
            raise ValueError(
                f"{metrics_path}: evaluated under scoring {used.get('name')!r}, aggregating under "
                f"{scoring.name!r} with other settings: evaluate the folds again"
            )
    else:
        threshold = metrics.get("relevance_threshold", scoring)
        if threshold != scoring:
            raise ValueError(
                f"{metrics_path}: evaluated with relevance threshold {threshold}, aggregating with {scoring}"
            )


def _summary(result: dict[str, Any], folds: list[dict[str, Any]]) -> dict[str, Any]:
    """The cell's metrics JSON: the combined run's evaluation plus the folds' mean and spread."""
    fold_mean: dict[str, float | None] = {}
    fold_std: dict[str, float | None] = {}
    for name in result["measures"]:
        values = [f["metrics"][name] for f in folds if f["metrics"].get(name) is not None]
        fold_mean[name], fold_std[name] = _spread(values)
    return {
        "overall": result["aggregate"],
        "fold_mean": fold_mean,
        "fold_std": fold_std,
        "std_ddof": 1 if len(folds) >= 2 else 0,
        "folds": folds,
        "n_folds": len(folds),
        "n_queries": result["n_queries"],
        "n_excluded": result["n_excluded"],
        "excluded": result["excluded"],
        "dropped": result["dropped"],
        "ties": result["ties"],
        "relevance_threshold": result["relevance_threshold"],
        "measures": result["measures"],
        "scoring": result["scoring"],
        "tie_seed": result["tie_seed"],
        "per_query": result["per_query"],
        "random": result.get("random", {}),
    }


def _spread(values: list[float]) -> tuple[float | None, float | None]:
    if not values:
        return None, None
    mean = statistics.fmean(values)
    # Sample std (ddof=1) across folds; a single fold has no spread, reported as 0.
    std = statistics.stdev(values) if len(values) >= 2 else 0.0
    return mean, std


def aggregate_folds(
    fold_runs: list[Path],
    fold_metrics: list[Path],
    qrels: Qrels,
    scoring: Scoring | int,
    out_run: Path,
    out_metrics: Path,
    tie_seed: int = TIE_SEED,
) -> dict[str, Any]:
    """Concatenate the folds' held-out runs, evaluate them, and summarise the folds.

    Args:
        fold_runs: held-out run of each fold, in fold order (fold ``k`` is ``fold_runs[k]``).
        fold_metrics: each fold's :func:`evaluate_run` result as JSON, in the same order.
        qrels: the dataset's qrels.
        scoring: the dataset's scoring protocol (it must be the one the folds were evaluated
            with), or a relevance level for the default scoring on the folds' measures.
        out_run: where the combined run goes (TREC format, tag of the first fold's run).
        out_metrics: where the combined metrics go (JSON, see Returns).

    Returns:
        ``{"overall": {name: value}, "fold_mean": {...}, "fold_std": {...}, "std_ddof": 1 or 0,
        "folds": [{"fold", "n_queries", "n_excluded", "metrics"}], "n_folds", "n_queries",
        "n_excluded", "excluded", "dropped", "ties", "relevance_threshold", "measures",
        "scoring", "tie_seed", "per_query", "random"}`` (``random``: each query's expected
        values under a random ordering of its candidates). The overall metrics are over all
        counted test queries of all folds, including those a fold's run has no candidates for
        (they count 0 unless the scoring says ``missing: skip``).

    Raises:
        ValueError: if the lists differ in length, are empty, two folds share a query, or a
            fold was evaluated under another scoring protocol.
        FormatError: if a metrics file is not what :func:`evaluate_run` writes.

    Example:
        >>> import tempfile
        >>> work = Path(tempfile.mkdtemp())
        >>> qrels = {"q1": {"a": 1}, "q2": {"b": 1}}
        >>> folds = [{"q1": {"a": 2.0, "x": 1.0}}, {"q2": {"y": 2.0, "b": 1.0}}]
        >>> for k, run in enumerate(folds):
        ...     write_run(work / f"f{k}.run", run)
        ...     write_json(work / f"f{k}.json", evaluate_run(run, qrels, measures=["MAP"]))
        >>> cell = aggregate_folds([work / "f0.run", work / "f1.run"], [work / "f0.json", work / "f1.json"],
        ...     qrels, 1, work / "cell.run", work / "cell.json")
        >>> cell["fold_mean"]["MAP"], cell["n_queries"], sorted(read_run(work / "cell.run"))
        (0.75, 2, ['q1', 'q2'])
    """
    if len(fold_runs) != len(fold_metrics):
        raise ValueError(f"{len(fold_runs)} fold runs but {len(fold_metrics)} fold metrics files")
    if not fold_runs:
        raise ValueError("no folds to aggregate")

    combined: Run = {}
    test_qids: set[str] = set()
    owner: dict[str, int] = {}
    folds: list[dict[str, Any]] = []
    measures: list[str] | None = None
    for fold, (run_path, metrics_path) in enumerate(zip(fold_runs, fold_metrics, strict=True)):
        run = read_run(run_path)
        metrics = read_json(metrics_path)
        queries = _fold_queries(metrics, Path(metrics_path)) | set(run)
        _claim_queries(owner, queries, fold, run_path)
        _check_scoring(metrics, metrics_path, scoring)
        measures = measures or metrics.get("measures") or list(metrics["aggregate"])
        combined.update(run)
        test_qids |= queries
        folds.append(
            {
                "fold": fold,
                "n_queries": metrics["n_queries"],
                "n_excluded": metrics["n_excluded"],
                "metrics": metrics["aggregate"],
            }
        )

    if not isinstance(scoring, Scoring):
        scoring = default_scoring(int(scoring), measures or ())
    result = evaluate_run(combined, qrels, qids=test_qids, scoring=scoring, tie_seed=tie_seed)
    summary = _summary(result, folds)
    write_run(out_run, combined, tag=_run_tag(Path(fold_runs[0])) or "reranklab")
    write_json(out_metrics, summary)
    return summary
