"""Aggregate a cell over the seeds of the seed axis (mean ± sample std over seeds).

Every seed of a cell is evaluated on the same test queries (the folds come from the study
``seed``), so the per-seed files of :func:`~reranklab.evaluation.aggregate.aggregate_folds`
can be combined query by query:

- ``overall``: the mean over seeds of each seed's overall value (= the mean over queries of the
  per-query seed means);
- ``seed_std``: the sample standard deviation (ddof=1) over seeds of the overall values;
- ``per_query``: each query's mean over seeds, so the summary's paired t-test compares the
  seed-averaged re-ranker with the first stage query by query;
- ``fold_mean`` / ``fold_std``: the mean over seeds of each seed's fold mean / fold std;
- ``per_seed``: each seed's overall values;
- ``per_seed_query``: each seed's per-query values, so that a test can take the seeds' own
  spread into account and a subset of the queries can be scored seed by seed;
- ``random``: each query's expected values under a random ordering of its candidates, the mean
  over seeds (the seeds re-rank the same candidates, so they agree), where every seed has them.
"""

from __future__ import annotations

import os
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from reranklab.errors import FormatError
from reranklab.io import read_json, write_json

COUNTS = ("n_queries", "n_excluded", "n_folds", "relevance_threshold")


def _mean(values: list[float]) -> float | None:
    return statistics.fmean(values) if values else None


def _read(path: Path) -> dict[str, Any]:
    metrics = read_json(path)
    if not isinstance(metrics, dict) or not all(key in metrics for key in ("overall", "per_query")):
        raise FormatError(
            path,
            None,
            "not a cell metrics file of aggregate_folds: needs 'overall' and 'per_query'",
        )
    return metrics


def aggregate_seeds(
    metrics_paths: Sequence[str | os.PathLike[str]],
    seeds: Sequence[int],
    out: str | os.PathLike[str] | None = None,
) -> dict[str, Any]:
    """Combine one cell's per-seed metrics files into the cell's metrics (written to ``out``).

    Args:
        metrics_paths: one :func:`aggregate_folds` JSON per seed.
        seeds: the seeds, in the same order.
        out: where to write the result (JSON, atomically); None = do not write.

    Returns:
        ``{"seeds", "n_seeds", "overall", "seed_std", "per_seed", "per_query", "per_seed_query", "random",
        "fold_mean", "fold_std", "n_queries", "n_excluded", "n_folds", "relevance_threshold"}``.

    Raises:
        FormatError: a file is not a cell metrics file, or the seeds were evaluated on
            different queries.

    Example:
        >>> import tempfile
        >>> from reranklab.evaluation.aggregate import aggregate_folds
        >>> from reranklab.evaluation.evaluate import evaluate_run
        >>> from reranklab.io import write_json, write_run
        >>> work, qrels = Path(tempfile.mkdtemp()), {"q1": {"a": 1}}
        >>> for seed, run in [(1, {"q1": {"a": 2.0, "x": 1.0}}), (2, {"q1": {"a": 1.0, "x": 2.0}})]:
        ...     write_run(work / f"s{seed}.run", run)
        ...     write_json(work / f"s{seed}.json", evaluate_run(run, qrels, measures=["MAP"]))
        ...     _ = aggregate_folds([work / f"s{seed}.run"], [work / f"s{seed}.json"], qrels, 1,
        ...         work / f"cell{seed}.run", work / f"seed{seed}.json")
        >>> cell = aggregate_seeds([work / "seed1.json", work / "seed2.json"], [1, 2])
        >>> cell["overall"]["MAP"], cell["n_seeds"]
        (0.75, 2)
    """
    paths = [Path(p) for p in metrics_paths]
    if not paths or len(paths) != len(seeds):
        raise ValueError(f"aggregate_seeds: {len(paths)} metrics files for {len(seeds)} seeds")
    loaded = [_read(path) for path in paths]
    queries = set(loaded[0]["per_query"])
    for path, metrics in zip(paths[1:], loaded[1:], strict=True):
        if set(metrics["per_query"]) != queries:
            raise FormatError(
                path,
                None,
                f"evaluated on other queries than {paths[0]} (the seeds must share the folds)",
            )
    names = [
        name
        for name in loaded[0]["overall"]
        if all(m["overall"].get(name) is not None for m in loaded)
    ]

    overall, seed_std, fold_mean, fold_std = {}, {}, {}, {}
    for name in names:
        values = [float(m["overall"][name]) for m in loaded]
        overall[name] = statistics.fmean(values)
        seed_std[name] = statistics.stdev(values) if len(values) >= 2 else None
        fold_mean[name] = _mean(
            [
                float(m["fold_mean"][name])
                for m in loaded
                if (m.get("fold_mean") or {}).get(name) is not None
            ]
        )
        fold_std[name] = _mean(
            [
                float(m["fold_std"][name])
                for m in loaded
                if (m.get("fold_std") or {}).get(name) is not None
            ]
        )
    per_query: dict[str, dict[str, float]] = {}
    for qid in sorted(queries):
        per_query[qid] = {}
        for name in loaded[0]["per_query"][qid]:
            values = [m["per_query"][qid].get(name) for m in loaded]
            if all(v is not None for v in values):
                per_query[qid][name] = statistics.fmean(float(v) for v in values)
    random_order: dict[str, dict[str, float]] = {}
    if all(m.get("random") for m in loaded):
        for qid in sorted(queries):
            per_seed = [m["random"].get(qid) or {} for m in loaded]
            random_order[qid] = {
                name: statistics.fmean(float(r[name]) for r in per_seed)
                for name in per_seed[0]
                if all(name in r for r in per_seed)
            }
    result: dict[str, Any] = {
        "seeds": [int(s) for s in seeds],
        "n_seeds": len(seeds),
        "overall": overall,
        "seed_std": seed_std,
        "per_seed": {
            str(seed): {name: m["overall"][name] for name in names}
            for seed, m in zip(seeds, loaded, strict=True)
        },
        "per_query": per_query,
        "per_seed_query": {
            str(seed): m["per_query"] for seed, m in zip(seeds, loaded, strict=True)
        },
        "random": random_order,
        "fold_mean": fold_mean,
        "fold_std": fold_std,
        **{key: loaded[0].get(key) for key in COUNTS},
        "metrics_files": [str(p) for p in paths],
    }
    if out is not None:
        write_json(Path(out), result)
    return result
