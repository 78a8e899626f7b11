"""MLflow for the seed axis: a parent run per cell, a child run per seed, a grandchild per fold.

Each (cell, seed) is tracked like a cell of a single-seed study
(:func:`~reranklab.tracking.mlflow_tracking.track_cell`: a run named
``<dataset>/<variant>/L<len>/seed<s>`` with a nested run per fold). :func:`track_seeds` then
creates the cell's run (``<dataset>/<variant>/L<len>``, with the settings, the seed list, the
mean and ``_seed_std`` of every measure over seeds) and nests the seed runs under it by
setting their ``mlflow.parentRunId``. Re-tracking a cell replaces its earlier cell run; a
re-tracked seed replaces only that seed's runs and is re-nested when the cell run is
tracked again (Snakemake re-runs it, since the seed's ``mlflow.json`` changed).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from reranklab.errors import FormatError
from reranklab.io import read_json
from reranklab.tracking.mlflow_tracking import (
    _log,
    _retry,
    _runs_of_cell,
    abandon_runs,
    ensure_experiment,
    metric_name,
    open_store,
    param_values,
    store_lock,
    write_record,
)
from reranklab.tracking.source import source_tags
from reranklab.tracking.tags import PARENT_TAG, TAG_PREFIX, run_tags
from reranklab.tracking.ui import runs_link


def seeds_cell_key(cell: dict[str, Any]) -> str:
    """``wikiqa/pointwise/L256``: the cell run's name and tag (its seeds' keys add ``/seed<s>``)."""
    from reranklab.settings.cell import Cell

    return Cell(cell["dataset"], cell["variant"], int(cell["max_length"])).key


def _seed_metrics(metrics: dict[str, Any]) -> list[tuple[str, float, int]]:
    out: list[tuple[str, float, int]] = []
    for group, suffix in (
        ("overall", ""),
        ("seed_std", "_seed_std"),
        ("fold_mean", "_fold_mean"),
        ("fold_std", "_fold_std"),
    ):
        out += [
            (metric_name(k) + suffix, float(v), 0)
            for k, v in (metrics.get(group) or {}).items()
            if v is not None
        ]
    counts = ("n_queries", "n_excluded", "n_folds", "n_seeds")
    return out + [(k, float(metrics[k]), 0) for k in counts if metrics.get(k) is not None]


def track_seeds(
    cell: dict[str, Any],
    seed_tracks: list[Path],
    seeds_metrics_path: Path,
    tracking_uri: str,
    experiment: str,
    out: Path,
) -> dict[str, Any]:
    """Log the cell run of a multi-seed cell and nest its seed runs under it.

    Args:
        cell: the resolved cell, with ``seeds`` (logged as params).
        seed_tracks: each seed's ``mlflow.json`` (from ``track_cell``), holding its run id.
        seeds_metrics_path: the cell's :func:`~reranklab.evaluation.seeds.aggregate_seeds` JSON.
        tracking_uri: e.g. ``sqlite:///results/mlflow.db``.
        experiment: experiment name (created if missing).
        out: where the ids go (JSON).

    Returns:
        ``{"tracking_uri", "experiment", "experiment_id", "cell", "parent_run_id",
        "seed_run_ids": {"seed<s>": id}, "replaced_run_ids": [...]}``.

    Example:
        >>> track_seeds(cell, [Path("seed1/mlflow.json"), Path("seed2/mlflow.json")],
        ...             Path("metrics.json"), "sqlite:///results/mlflow.db", "study",
        ...             Path("mlflow.json"))  # doctest: +SKIP
    """
    key = seeds_cell_key(cell)
    metrics = read_json(seeds_metrics_path)
    if not isinstance(metrics, dict) or "seeds" not in metrics or "overall" not in metrics:
        raise FormatError(seeds_metrics_path, None, "not a seeds metrics file of aggregate_seeds")
    seed_runs: dict[str, str] = {}
    for path, seed in zip(seed_tracks, metrics["seeds"], strict=True):
        tracked = read_json(path)
        if not isinstance(tracked, dict) or "parent_run_id" not in tracked:
            raise FormatError(path, None, "not an mlflow.json of track_cell (no parent_run_id)")
        seed_runs[f"seed{seed}"] = tracked["parent_run_id"]

    with store_lock(tracking_uri):
        client = open_store(tracking_uri)
        experiment_id = ensure_experiment(client, experiment, tracking_uri)
        earlier = _runs_of_cell(client, experiment_id, key)
        tags = {
            **source_tags("track-seeds"),
            **run_tags(cell, key, "cell"),
            f"{TAG_PREFIX}seeds": ",".join(str(s) for s in metrics["seeds"]),
        }
        tags.pop(f"{TAG_PREFIX}seed", None)  # the cell run stands for all its seeds
        parent = _retry(client.create_run, experiment_id, run_name=key, tags=tags)
        parent_id = parent.info.run_id
        try:
            _log(
                client,
                parent_id,
                param_values(cell),
                _seed_metrics(metrics),
                [Path(seeds_metrics_path)],
            )
            for run_id in seed_runs.values():
                _retry(client.set_tag, run_id, PARENT_TAG, parent_id)
            _retry(client.set_terminated, parent_id, "FINISHED")
        except BaseException:
            abandon_runs(client, [parent_id])
            raise
        for run_id in earlier:
            _retry(client.delete_run, run_id)

    return write_record(
        out,
        tracking_uri,
        experiment,
        experiment_id,
        key,
        parent_id,
        earlier,
        seed_run_ids=seed_runs,
        ui=runs_link(tracking_uri, experiment_id),
    )
