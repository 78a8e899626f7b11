"""The tags that name what a run is: its study, dataset, cell, fold and seed.

A fold's run is made by the ``train`` job while it trains (:mod:`reranklab.tracking.live`) and
completed by the cell's ``track`` job (:func:`reranklab.tracking.mlflow_tracking.track_cell`),
two processes that share nothing but the store. They agree on the run through these tags:
``track`` looks the fold's run up by them (:func:`pick_fold_run`) instead of creating another.

Example:
    >>> cell = {"study": "s", "dataset": "wikiqa", "variant": "pointwise", "max_length": 256,
    ...         "seed": 42}
    >>> tags = fold_tags(cell, "wikiqa/pointwise/L256", 0, logged_by="train")
    >>> tags["reranklab.cell"], tags["reranklab.fold"], tags["reranklab.seed"]
    ('wikiqa/pointwise/L256', '0', '42')
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

TAG_PREFIX = "reranklab."
CELL_TAG = "reranklab.cell"
ROLE_TAG = "reranklab.role"
FOLD_TAG = "reranklab.fold"
SEED_TAG = "reranklab.seed"
STUDY_TAG = "reranklab.study"
DATASET_TAG = "reranklab.dataset"
LOGGED_BY_TAG = "reranklab.logged_by"  # "train": logged live by the training job; "track": after
ENCODER_TAG = "reranklab.encoder"
MODEL_DIR_TAG = "reranklab.model_dir"
PARENT_TAG = "mlflow.parentRunId"
# What makes two fold runs the same fold (the variant and length are in the cell key).
IDENTITY = (STUDY_TAG, DATASET_TAG, CELL_TAG, FOLD_TAG, SEED_TAG, ROLE_TAG)
STATS_KEY = "mlflow"  # train_stats.json: {"tracking_uri", "experiment_id", "run_id"} of the run


def run_tags(cell: Mapping[str, Any], key: str, role: str) -> dict[str, str]:
    """The tags of a cell's run (``role`` ``cell``) or of one of its fold runs (``fold``).

    A seed tag only for a seed of a study with a seed axis (``seeds``), as cells and their
    seeds are told apart by it; fold runs always carry theirs (:func:`fold_tags`).
    """
    max_length = cell.get("max_length")
    tags = {
        DATASET_TAG: str(cell["dataset"]),
        f"{TAG_PREFIX}variant": str(cell["variant"]),
        f"{TAG_PREFIX}max_length": "none" if max_length is None else str(int(max_length)),
        STUDY_TAG: str(cell.get("study") or ""),
        ROLE_TAG: role,
        CELL_TAG: key,
    }
    if cell.get("base"):  # an alias of a registered variant (reranklab.config.resolve_variant)
        tags[f"{TAG_PREFIX}base_variant"] = str(cell["base"])
    if cell.get("seeds"):
        tags[SEED_TAG] = str(cell["seed"])
    return tags


def fold_tags(
    cell: Mapping[str, Any], key: str, fold: int, logged_by: str = "track"
) -> dict[str, str]:
    """The tags of fold ``fold``'s run of cell ``key`` (no parent: ``track`` sets it).

    Args:
        cell: the resolved cell (``study``, ``dataset``, ``variant``, ``max_length``, ``seed``).
        key: the cell's key (:func:`reranklab.tracking.mlflow_tracking.cell_key`; with a seed
            axis it names the seed).
        fold: the fold index.
        logged_by: ``train`` for a run logged while training, ``track`` for one made after.
    """
    tags = {**run_tags(cell, key, "fold"), FOLD_TAG: str(int(fold)), LOGGED_BY_TAG: logged_by}
    if cell.get("seed") is not None:
        tags[SEED_TAG] = str(cell["seed"])
    encoder = (cell.get("training") or {}).get("encoder")
    if encoder:
        tags[ENCODER_TAG] = str(encoder)
    return tags


def _status_rank(run: Any) -> int:
    return 1 if run.info.status == "FINISHED" else 0


def pick_fold_run(
    runs: Iterable[Any],
    cell: Mapping[str, Any],
    key: str,
    fold: int,
    recorded_run_id: str | None = None,
) -> Any | None:
    """The run a training job logged for this fold, which ``track`` completes, or None.

    Among the active runs ``runs`` of the cell, those logged by training whose identity tags
    (study, dataset, cell, fold, seed, role) are this fold's: the one ``train_stats.json``
    records (``recorded_run_id``: the run of the very model that was evaluated), else the
    latest finished one. A training that failed or was killed left a run that is not finished:
    it is never picked (the model it would describe was never saved).

    Example:
        >>> from types import SimpleNamespace as NS
        >>> cell = {"study": "s", "dataset": "d", "variant": "v", "max_length": 8, "seed": 1}
        >>> def run(i, status, start):
        ...     tags = fold_tags(cell, "d/v/L8", 0, logged_by="train")
        ...     return NS(info=NS(run_id=i, status=status, start_time=start), data=NS(tags=tags))
        >>> runs = [run("a", "FINISHED", 1), run("b", "FINISHED", 3), run("c", "FAILED", 5)]
        >>> pick_fold_run(runs, cell, "d/v/L8", 0).info.run_id
        'b'
        >>> pick_fold_run(runs, cell, "d/v/L8", 0, recorded_run_id="a").info.run_id
        'a'
        >>> pick_fold_run(runs, cell, "d/v/L8", 1) is None
        True
    """
    want = fold_tags(cell, key, fold, logged_by="train")
    found = [
        run
        for run in runs
        if run.data.tags.get(LOGGED_BY_TAG) == "train"
        and all(run.data.tags.get(name) == want.get(name) for name in IDENTITY)
    ]
    for run in found:
        if recorded_run_id is not None and run.info.run_id == recorded_run_id:
            return run
    finished = [run for run in found if _status_rank(run)]
    return max(finished, key=lambda run: run.info.start_time or 0) if finished else None


def recorded_run_id(stats: Any, tracking_uri: str, experiment_id: str) -> str | None:
    """The run id a ``train_stats.json`` records, if it was logged to this store and experiment.

    Example:
        >>> stats = {"mlflow": {"tracking_uri": "sqlite:///m.db", "experiment_id": "1",
        ...                     "run_id": "abc"}}
        >>> recorded_run_id(stats, "sqlite:///m.db", "1"), recorded_run_id(stats, "x", "1")
        ('abc', None)
    """
    block = stats.get(STATS_KEY) if isinstance(stats, Mapping) else None
    if not isinstance(block, Mapping):
        return None
    if block.get("tracking_uri") != tracking_uri or str(block.get("experiment_id")) != str(
        experiment_id
    ):
        return None
    run_id = block.get("run_id")
    return str(run_id) if run_id else None
