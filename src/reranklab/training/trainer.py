"""Fine-tune one re-ranker variant on one fold's sampled examples.

The job in three parts: :func:`~reranklab.training.plan.build_plan` sets it up (the registry
gives the model (``build``), the loss (``loss``), how pairs become model inputs
(``featurize``) and the kind of examples; :mod:`reranklab.features.batch` gives the matching
collator; AdamW without decay on biases/LayerNorm, linear warm-up then linear decay, seeded from
the study seed, with dynamic padding and length grouping), :func:`~reranklab.training.loop.run_loop`
runs its steps and the callbacks of :mod:`reranklab.training.callbacks` do the rest (log lines,
loss curve, checkpoints, MLflow). With ``training.validation`` on, every epoch ends with a dev
evaluation that picks the epoch whose weights are saved and may stop training early
(:mod:`reranklab.training.validation`).
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch

from reranklab.errors import ReranklabError
from reranklab.features.batch import collator_for
from reranklab.io.atomic import atomic_directory
from reranklab.io.json_io import write_json
from reranklab.models.registry import cell_spec
from reranklab.training import distributed
from reranklab.training.callbacks import (
    LOSS_CURVE_POINTS,
    Checkpoints,
    LoopCallback,
    LossCurve,
    ProgressLog,
    Report,
    Throughput,
    TrainingCallback,
    Validation,
)
from reranklab.training.loop import run_loop
from reranklab.training.plan import (
    TrainingPlan,
    build_plan,
    linear_schedule,
    make_optimizer,
    parameter_groups,
    read_examples,
    seed_everything,
    warmup_steps_for,
)
from reranklab.training.state import Checkpointer, NoCheckpointer, TrainState
from reranklab.training.steps import accumulation_steps
from reranklab.training.validation import DevSet

# What callers have always imported from here (the plan and the callbacks now hold them).
__all__ = [
    "LOSS_CURVE_POINTS",
    "STATS_FILE",
    "Checkpointer",
    "TrainState",
    "TrainingCallback",
    "epoch_losses",
    "linear_schedule",
    "make_optimizer",
    "parameter_groups",
    "passages_to_read",
    "read_examples",
    "save_atomically",
    "seed_everything",
    "train_model",
    "warmup_steps_for",
]

log = logging.getLogger(__name__)

STATS_FILE = "train_stats.json"


def passages_to_read(cell: Mapping[str, Any], examples_path: Path) -> set[str] | None:
    """The passage ids a training job needs: those its examples name.

    ``None`` (the whole collection) for variants that read it all (``reads_collection``).

    Example:
        >>> passages_to_read({"variant": "bertlets"}, Path("results/samples/sample/fold0/triplets.parquet"))  # doctest: +SKIP
        {'P0001', 'P0017', ...}
    """
    spec = cell_spec(cell)
    if spec.reads_collection:
        return None
    columns = read_examples(examples_path, collator_for(spec.example_kind).pid_columns)
    return {pid for values in columns.values() for pid in values}


def save_atomically(model: Any, stats: Mapping[str, Any], out_dir: Path) -> None:
    """Save into a temporary directory beside ``out_dir`` and rename it into place.

    Raises:
        ReranklabError: the model cannot be written (disk full, ...): naming ``out_dir`` and
            the system's reason; nothing is left at ``out_dir`` and the job's checkpoints stay.
    """
    from safetensors import SafetensorError

    try:
        with atomic_directory(out_dir) as tmp:
            model.save(tmp)
            write_json(tmp / STATS_FILE, dict(stats))
    except (OSError, SafetensorError) as exc:
        # safetensors reports an OS error as text ("... No space left on device (os error 28)").
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise ReranklabError(
            f"cannot write the trained model to {out_dir}: {reason}; its checkpoints, if any, are"
            " kept: free space and run the job again to resume from the last one"
        ) from exc


def epoch_losses(losses: list[float], steps_per_epoch: int, epochs: int) -> list[float]:
    """The mean loss of every epoch that ran a step.

    Example:
        >>> epoch_losses([1.0, 3.0, 0.5, 0.5, 0.25], 2, 3)
        [2.0, 0.5, 0.25]
    """
    return [
        float(np.mean(losses[e * steps_per_epoch : (e + 1) * steps_per_epoch]))
        for e in range(epochs)
        if losses[e * steps_per_epoch : (e + 1) * steps_per_epoch]
    ]


def _callbacks(
    plan: TrainingPlan,
    checkpointer: Checkpointer,
    progress: bool,
    dev: DevSet | None,
    callback: TrainingCallback | None,
) -> tuple[list[LoopCallback], Throughput, LossCurve, Validation | None]:
    """A job's loop callbacks, in the order their hooks run: the dev scoring of an epoch comes
    before its report (which carries its measures) and both before its checkpoint (which holds
    them)."""
    validation = Validation(dev) if plan.selector is not None and dev is not None else None
    speed = Throughput(untimed=(lambda: validation.seconds) if validation is not None else None)
    curve = LossCurve(plan)
    callbacks: list[LoopCallback] = [speed, ProgressLog(plan, progress), curve]
    if validation is not None:
        callbacks.append(validation)
    if callback is not None:
        callbacks.append(Report(callback))
    callbacks.append(Checkpoints(checkpointer))
    return callbacks, speed, curve, validation


def _stats(
    plan: TrainingPlan,
    resumed_from: int,
    speed: Throughput,
    curve: LossCurve,
    started: float,
) -> dict[str, Any]:
    """``train_stats.json`` of the trained plan (without its ``validation`` block)."""
    state, settings, features = plan.state, plan.settings, plan.features
    losses = epoch_losses(state.losses, plan.steps_per_epoch, plan.epochs)
    seconds = speed.seconds
    stats = {
        "variant": plan.spec.name,
        **({"alias": plan.alias} if plan.alias else {}),
        "example_kind": plan.spec.example_kind,
        "encoder": settings.encoder,
        "max_length": plan.max_length,
        "seed": plan.seed,
        "examples": len(plan.collate),
        "train_queries": plan.train_queries,
        "distinct_pairs": len(features),
        **features.summary(),
        "epochs": plan.epochs,
        "fine_tuned": plan.fine_tunes,
        "batch_size": settings.batch_size,
        "steps": state.global_step,
        "resumed_from_step": resumed_from,
        "warmup_steps": plan.warmup_steps,
        "final_loss": losses[-1] if losses else None,
        "mean_loss": float(np.mean(state.losses)) if state.losses else None,
        "epoch_losses": losses,
        "loss_curve": curve.points,
        "epoch_speed": speed.epoch_speed,
        "pairs_trained": speed.pairs,
        "pairs_per_s": speed.pairs / seconds if seconds > 0 else None,
        "tokens_trained": speed.tokens,
        "tokens_padded": speed.padded_tokens,
        "tokens_per_s": speed.tokens / seconds if seconds > 0 else None,
        "precision": plan.precision.name,
        "micro_batch_size": settings.micro_batch_size or settings.batch_size,
        "accumulation_steps": accumulation_steps(settings.batch_size, settings.micro_batch_size),
        "gradient_checkpointing": settings.gradient_checkpointing,
        "dataloader_workers": settings.dataloader_workers,
        **(plan.cache.summary() if plan.cache is not None else {}),
        **_encoder_pass(features),
        "train_seconds": seconds,
        "tokenize_seconds": plan.tokenize_seconds,
        "seconds": time.perf_counter() - started,
        "device": str(plan.device),
        "world_size": distributed.world_size(),
        "threads": torch.get_num_threads(),
        "torch": torch.__version__,
    }
    return stats


def train_model(
    cell: Mapping[str, Any],
    examples_path: Path,
    queries: Mapping[str, str],
    corpus: Mapping[str, str],
    out_dir: Path,
    threads: int = 0,
    checkpointer: Checkpointer | None = None,
    progress: bool = True,
    frozen_features: Path | None = None,
    dev: DevSet | None = None,
    callback: TrainingCallback | None = None,
) -> dict[str, Any]:
    """Fine-tune the cell's variant on the examples and save it to ``out_dir``.

    Args:
        cell: the resolved cell (:func:`reranklab.config.resolve_cell`): ``variant`` (and an
            alias's ``base``), ``max_length``, ``seed`` and the ``training`` block are used.
        examples_path: Parquet of sampled examples: ``qid, pid, label`` (point-wise) or
            ``qid, pos_pid, neg_pid`` (triplets), as the variant's ``example_kind`` needs.
        queries: ``{qid: text}``.
        corpus: ``{pid: text}``.
        out_dir: the model directory to write (replaced atomically; holds ``train_stats.json``).
        threads: torch CPU threads when ``training.threads`` is 0 (0 = torch's default).
        checkpointer: checkpoint/resume hook (default: none).
        progress: show tqdm bars.
        frozen_features: the fold's frozen-feature cache of ``reranklab encode``, for variants
            that read one (``VariantSpec.needs_cache``); ``None`` = they encode what they need.
        dev: the fold's dev set, scored after every epoch when ``training.validation`` is on
            (``corpus`` must then hold its candidates). Without one such a cell trains every
            epoch and keeps the last (with a warning); the ``train`` step always passes it.
        callback: told of every step, epoch and the end (:class:`TrainingCallback`; the
            ``train`` step's logs the job to its fold's MLflow run).

    Returns:
        The training statistics written to ``out_dir/train_stats.json`` (with ``validation``:
        the per-epoch dev measures, the chosen epoch and why training stopped).

    Raises:
        ConfigError: validation is on and its measure is not one of the dev scoring's, the
            dev set is empty or the scoring counts none of its queries.

    Example:
        >>> cell = resolve_cell(params, "wikiqa", "bertlets", 256)  # doctest: +SKIP
        >>> stats = train_model(cell, Path("work/examples/fold0.parquet"), queries, corpus,
        ...                     Path("work/models/fold0"), threads=8)  # doctest: +SKIP
        >>> stats["steps"], round(stats["pairs_per_s"])  # doctest: +SKIP
        (2504, 180)
    """
    started = time.perf_counter()
    out_dir = Path(out_dir)
    checkpointer = checkpointer or NoCheckpointer()
    plan = build_plan(cell, examples_path, queries, corpus, threads, progress, frozen_features, dev)
    # A resumed job continues from its checkpoint's step, with the same batch order.
    checkpointer.restore(plan.state)
    resumed_from = plan.state.global_step
    callbacks, speed, curve, validation = _callbacks(plan, checkpointer, progress, dev, callback)
    state = run_loop(plan, callbacks)
    stats = _stats(plan, resumed_from, speed, curve, started)
    if validation is not None and validation.selection is not None:
        stats["validation"] = validation.selection
    with contextlib.suppress(ImportError):
        import transformers

        stats["transformers"] = transformers.__version__
    if callback is not None:
        callback.on_train_end(stats)
    if distributed.is_main_process():
        save_atomically(plan.model, stats, out_dir)
        if callback is not None:
            callback.on_saved(out_dir)
    checkpointer.finished(state, out_dir)
    log.info(
        "saved %s to %s (final loss %.4f, %.1f pairs/s)",
        plan.spec.name,
        out_dir,
        stats["final_loss"] or float("nan"),
        stats["pairs_per_s"] or 0.0,
    )
    return stats


def _encoder_pass(features: Any) -> dict[str, float]:
    """A lite model's first epoch is its frozen encoder's pass over the training pairs (the
    encode rule's, timed there, or this job's) and its first cached epoch (BERT-DMN's Table 3):
    ``encoder_pass_seconds`` where the features know that time."""
    seconds = getattr(features, "encoder_seconds", None)
    return {} if seconds is None else {"encoder_pass_seconds": float(seconds)}
