"""Fine-tune one re-ranker variant on one fold's sampled examples.

The loop is variant-agnostic: the registry gives the model (``build``), the loss (``loss``),
how pairs become model inputs (``featurize``) and the kind of examples;
:mod:`reranklab.features.batch` gives the matching collator. It is
plain PyTorch (AdamW without decay on biases/LayerNorm, linear warm-up then linear decay,
gradient clipping), seeded from the study seed, with dynamic padding and length grouping.
With ``training.validation`` on, every epoch ends with a dev evaluation that picks the epoch
whose weights are saved and may stop training early (:mod:`reranklab.training.validation`).
"""

from __future__ import annotations

import contextlib
import logging
import math
import random
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import torch
from torch import nn
from tqdm.auto import tqdm

from reranklab.errors import ConfigError, FormatError, ReranklabError
from reranklab.features.batch import (
    ExampleCollator,
    LengthGroupedSampler,
    collator_for,
)
from reranklab.features.cache import feature_cache_scope
from reranklab.features.packing import packed_if_supported
from reranklab.io.atomic import atomic_directory
from reranklab.io.json_io import write_json
from reranklab.models.encoder import select_device, set_threads
from reranklab.models.registry import alias_of_cell, cell_spec
from reranklab.progress import Status
from reranklab.settings.training import training_view
from reranklab.training import distributed
from reranklab.training.compile import compile_encoders
from reranklab.training.determinism import configure_determinism, training_threads
from reranklab.training.precision import resolve_precision
from reranklab.training.state import Checkpointer, NoCheckpointer, TrainState
from reranklab.training.steps import (
    PendingLosses,
    StepCollator,
    StepRunner,
    accumulation_steps,
    enable_gradient_checkpointing,
    step_loader,
)
from reranklab.training.validation import (
    DevScorer,
    DevSet,
    ModelSelector,
    validate_epoch,
    validation_settings,
)

log = logging.getLogger(__name__)

STATS_FILE = "train_stats.json"
LOSS_CURVE_POINTS = 100  # at most this many (step, mean loss) points in train_stats.json


class TrainingCallback(Protocol):
    """What :func:`train_model` reports while it trains (e.g. to MLflow:
    :class:`reranklab.tracking.live.LiveRun`).

    Every value handed over is a Python number the loop already holds on the CPU: the step
    losses come in bursts, each time the loop reads its pending losses from the device in one
    transfer (:class:`~reranklab.training.steps.PendingLosses`: at log lines, loss-curve
    points, checkpoints and epoch ends), in step order; the learning rate is the scheduler's.
    A callback adds no device synchronisation. A hook should only record and return; slow
    work (writing to a store) belongs in its own thread.
    """

    def on_train_begin(self, info: Mapping[str, Any]) -> None:
        """The loop is set up: ``total_steps``, ``steps_per_epoch``, ``warmup_steps``,
        ``resumed_from_step`` and ``restored_losses`` (the losses of a resumed job's steps)."""

    def on_step(self, step: int, epoch: int, loss: float, learning_rate: float) -> None:
        """Optimiser step ``step`` (1-based, global) of epoch ``epoch`` (1-based) is done."""

    def on_epoch_end(self, epoch: int, step: int, dev: Mapping[str, Any] | None) -> None:
        """Epoch ``epoch`` is done; ``dev``: its dev measures when the job validates."""

    def on_train_end(self, stats: dict[str, Any]) -> None:
        """Training is done; ``stats`` are about to be saved (a callback may add to them)."""

    def on_saved(self, out_dir: Path) -> None:
        """The model and its statistics are saved in ``out_dir``."""


def seed_everything(seed: int) -> None:
    """Seed Python, NumPy and torch (all devices) with ``seed``."""
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def parameter_groups(model: nn.Module, weight_decay: float) -> list[dict[str, Any]]:
    """AdamW groups: decay on weights, none on biases and normalisation parameters (as BERT).

    Example:
        >>> groups = parameter_groups(nn.Sequential(nn.Linear(2, 2), nn.LayerNorm(2)), 0.01)
        >>> [len(g["params"]) for g in groups], [g["weight_decay"] for g in groups]
        ([1, 3], [0.01, 0.0])
    """
    no_decay: set[int] = set()
    for module in model.modules():
        is_norm = (
            isinstance(module, nn.LayerNorm | nn.GroupNorm)
            or "norm" in type(module).__name__.lower()
        )
        for name, parameter in module.named_parameters(recurse=False):
            if is_norm or name == "bias" or name.endswith(".bias"):
                no_decay.add(id(parameter))
    decay, plain, seen = [], [], set()
    for parameter in model.parameters():
        if not parameter.requires_grad or id(parameter) in seen:
            continue
        seen.add(id(parameter))
        (plain if id(parameter) in no_decay else decay).append(parameter)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": plain, "weight_decay": 0.0}]


def make_optimizer(
    model: nn.Module, learning_rate: float, weight_decay: float
) -> torch.optim.AdamW:
    """AdamW (eps 1e-8, as BERT) over :func:`parameter_groups`, fused where torch supports it.

    The fused kernel does the same update ~5x faster than the per-tensor loop on CPU, where
    the optimiser step of a 22M-parameter MiniLM otherwise costs a fifth of a training step.
    """
    groups = parameter_groups(model, weight_decay)
    try:
        return torch.optim.AdamW(groups, lr=learning_rate, eps=1e-8, fused=True)
    except (RuntimeError, TypeError, ValueError):
        return torch.optim.AdamW(groups, lr=learning_rate, eps=1e-8)


def linear_schedule(
    optimizer: torch.optim.Optimizer, warmup_steps: int, total_steps: int
) -> torch.optim.lr_scheduler.LambdaLR:
    """Linear warm-up from 0 to the peak over ``warmup_steps``, then linear decay to 0.

    transformers' ``get_linear_schedule_with_warmup`` (what HF Trainer and sentence-transformers
    use), so runs compare with theirs; a ``LambdaLR`` whose state resumes exactly.
    """
    from transformers import get_linear_schedule_with_warmup

    return get_linear_schedule_with_warmup(
        optimizer, num_warmup_steps=warmup_steps, num_training_steps=total_steps
    )


def warmup_steps_for(training: Mapping[str, Any], total_steps: int) -> int:
    """Warm-up steps: ``training.warmup_steps`` when set (absolute, as monoBERT's 10k), else
    ``ceil(warmup_ratio * total_steps)``.

    The same rule as transformers' ``TrainingArguments.get_warmup_steps``, which only exists on
    a ``TrainingArguments`` object; hence these lines rather than building one.

    Example:
        >>> warmup_steps_for({"warmup_ratio": 0.1, "warmup_steps": None}, 95)
        10
        >>> warmup_steps_for({"warmup_ratio": 0.1, "warmup_steps": 10000}, 95)
        10000
    """
    steps = training.get("warmup_steps")
    if steps is not None:
        if int(steps) >= total_steps:
            log.warning(
                "training.warmup_steps %d >= the %d training steps: the learning rate only reaches %.3g of its peak",
                int(steps),
                total_steps,
                total_steps / max(1, int(steps)),
            )
        return int(steps)
    return math.ceil(float(training["warmup_ratio"]) * total_steps)


def read_examples(path: Path, columns: tuple[str, ...]) -> dict[str, list[Any]]:
    """The examples Parquet as ``{column: values}`` (ids as strings)."""
    try:
        table = pq.read_table(path)
    except (OSError, pa.ArrowInvalid) as exc:
        raise FormatError(path, None, f"cannot read the examples Parquet file ({exc})") from None
    missing = [name for name in columns if name not in table.column_names]
    if missing:
        raise FormatError(
            path,
            None,
            f"missing column(s) {', '.join(missing)} (expected {', '.join(columns)}; has {', '.join(table.column_names)})",
        )
    if table.num_rows == 0:
        raise FormatError(path, None, "no training examples")
    out: dict[str, list[Any]] = {}
    for name in columns:
        values = table.column(name).to_pylist()
        if None in values:
            raise FormatError(path, None, f"row {values.index(None)}: column {name} is empty")
        out[name] = values if name == "label" else [str(v) for v in values]
    return out


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


def _check_ids(
    columns: Mapping[str, list[Any]],
    pid_columns: tuple[str, ...],
    queries: Mapping[str, str],
    corpus: Mapping[str, str],
    path: Path,
) -> None:
    for row, qid in enumerate(columns["qid"]):
        if qid not in queries:
            raise FormatError(path, None, f"row {row}: query {qid!r} is not in the queries")
    for name in pid_columns:
        for row, pid in enumerate(columns[name]):
            if pid not in corpus:
                raise FormatError(path, None, f"row {row}: {name} {pid!r} is not in the corpus")


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


def _effective_threads(training: Mapping[str, Any], threads: int) -> int:
    # training.threads wins; 0 there means "the rule's threads" (the argument), except in
    # deterministic mode, which pins its own count (the rule's depends on --cores).
    return training_threads(training, threads)


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
    examples_path, out_dir = Path(examples_path), Path(out_dir)
    training = dict(cell["training"])  # the variant's hooks read their own settings from it
    settings = training_view(training)  # the shared ones, typed
    spec = cell_spec(cell)  # an alias's cell: its base
    if spec.loss is None:
        raise ConfigError(f"variant {spec.name!r} registers no loss and cannot be trained")
    checkpointer = checkpointer or NoCheckpointer()
    threads = _effective_threads(training, threads)
    set_threads(threads)
    configure_determinism(settings.deterministic)
    device = select_device(settings.device)
    seed = int(cell["seed"])
    max_length = int(cell["max_length"])
    batch_size = settings.batch_size
    # A variant that ranks as it is built (a zero-shot bi-encoder) runs no step: it is saved as built.
    fine_tunes = spec.trains(training)
    epochs = settings.epochs if fine_tunes else 0

    validation = validation_settings(training) if fine_tunes else None
    counted_dev: list[str] = []
    if validation is not None and dev is None:
        log.warning(
            "training.validation is on (measure %s) but no dev set was given: training every epoch, keeping the last",
            validation.measure,
        )
        validation = None
    if validation is not None and dev is not None:
        counted_dev = dev.check(
            validation
        )  # before any work: a wrong measure or an empty dev stops here

    collator_cls = collator_for(spec.example_kind)
    columns = read_examples(examples_path, collator_cls.columns)
    _check_ids(columns, collator_cls.pid_columns, queries, corpus, examples_path)

    seed_everything(seed)
    model = spec.build(settings.encoder, training, max_length)
    alias = alias_of_cell(cell)
    if alias:  # reranker.json and the model card name the study's configuration
        model.alias = alias
    # On its device before featurizing: a featurizer may run (frozen) parts of the model.
    model.to(device)
    tokenize_started = time.perf_counter()
    # Tokenised pairs are shared through training.feature_cache by every job of the dataset.
    with feature_cache_scope(settings.feature_cache, cell.get("dataset")) as cache_scope:
        index = spec.featurizer()(
            model,
            collator_cls.pair_keys(columns),
            queries,
            corpus,
            progress=progress,
            **spec.featurize_options(frozen_features),
        )
        scorer = None
        if validation is not None and dev is not None:
            scorer = DevScorer(
                model,
                spec,
                dev,
                queries,
                corpus,
                batch_size=settings.eval_batch_size,
                precision=resolve_precision(settings.precision, device),
                frozen_features=frozen_features,
                packing=settings.packing,
                progress=progress,
            )
    tokenize_seconds = time.perf_counter() - tokenize_started
    train_features = packed_if_supported(model, index, settings.packing)
    if settings.packing:
        packed = train_features is not index
        log.info(
            "training.packing: %s",
            "packed batches" if packed else f"{spec.name} reads padded batches only (not packed)",
        )
    collate: ExampleCollator = collator_cls.from_columns(
        columns,
        train_features,
        pad_to_multiple_of=8 if device.type == "cuda" else None,
        source=examples_path,
    )
    sampler = LengthGroupedSampler(
        collate.lengths(), batch_size, seed, group=settings.length_grouping
    )
    # In a DDP worker: rank 0's weights, gradients averaged over ranks, each rank a share of every batch.
    collate = distributed.prepare(model, collate)

    if settings.gradient_checkpointing:
        enable_gradient_checkpointing(model)
    if settings.compile:
        compile_encoders(model)
    precision = resolve_precision(settings.precision, device)
    micro_batch_size = settings.micro_batch_size
    loss_fn = spec.loss(model, training)
    optimizer = make_optimizer(model, settings.learning_rate, settings.weight_decay)
    steps_per_epoch = len(sampler)
    total_steps = steps_per_epoch * epochs
    warmup_steps = warmup_steps_for(training, total_steps)
    scheduler = linear_schedule(optimizer, warmup_steps, total_steps)
    selector = ModelSelector(validation) if scorer is not None and validation is not None else None
    state = TrainState(
        model,
        loss_fn,
        optimizer,
        scheduler,
        total_steps,
        steps_per_epoch=steps_per_epoch,
        scaler=precision.grad_scaler(),
        selection=selector,
    )
    checkpointer.restore(state)
    resumed_from = state.global_step
    if callback is not None:
        callback.on_train_begin(
            {
                "total_steps": total_steps,
                "steps_per_epoch": steps_per_epoch,
                "warmup_steps": warmup_steps,
                "resumed_from_step": resumed_from,
                "restored_losses": list(state.losses),
            }
        )

    log.info(
        "training %s on %s: %d examples (%d distinct pairs, %s, max_length %d), %d epochs x %d steps (%d warm-up), device %s, %d threads",
        spec.name,
        settings.encoder,
        len(collate),
        len(index),
        index.summary(),
        max_length,
        epochs,
        steps_per_epoch,
        warmup_steps,
        device,
        torch.get_num_threads(),
    )
    max_grad_norm = settings.max_grad_norm
    log_every = max(1, total_steps // 20)
    curve_every = max(1, math.ceil(total_steps / LOSS_CURVE_POINTS))
    loss_curve: list[list[float]] = []
    for done in range(1, resumed_from + 1):  # a resumed run: the curve of the restored steps
        if done % curve_every == 0 or done == total_steps:
            window = state.losses[max(0, done - curve_every) : done]
            loss_curve.append([done, sum(window) / len(window)])
    pairs_trained = tokens_trained = tokens_padded = 0
    run_step = StepRunner(
        model, loss_fn, optimizer, precision, max_grad_norm, device, scaler=state.scaler
    )

    def record_loss(step: int, epoch: int, value: float, lr: float) -> None:
        state.losses.append(value)
        if callback is not None:
            callback.on_step(step + 1, epoch, value, lr)

    pending = PendingLosses(record_loss)
    # The checkpointer's own interval (a checkpoint holds the losses so far).
    checkpoint_every = int(getattr(checkpointer, "every", 0) or 0)
    step_collate = StepCollator(collate, micro_batch_size)
    workers = settings.dataloader_workers
    model.train()
    validation_seconds = 0.0  # dev scoring, left out of the training throughput
    train_started = time.perf_counter()
    bar = tqdm(
        total=total_steps,
        initial=state.global_step,
        desc=f"train {spec.name}",
        unit="step",
        disable=not progress,
        mininterval=1.0,
    )
    status = Status(
        f"train {spec.name}",
        total_steps,
        rate_unit="pairs",
        initial=state.global_step,
        enabled=progress and total_steps > 0,  # a zero-shot model runs no step: nothing to say
    )
    # Steps and seconds of each epoch run by this process (dev scoring left out): BERT-DMN's
    # Table 3 compares batches/s per epoch of the full and lite models.
    epoch_speed: list[dict[str, float]] = []
    for epoch in range(state.epoch, epochs):
        if (
            selector is not None and selector.stopped_early
        ):  # also when resumed after the stopping epoch
            break
        state.epoch = epoch
        epoch_started, epoch_first_step = time.perf_counter(), state.global_step
        validation_before = validation_seconds
        batches = sampler.batches(epoch)
        # Collated (in dataloader_workers processes when > 0) into micro batches of one step each.
        steps = step_loader(
            batches[state.step_in_epoch :], step_collate, workers, pin_memory=device.type == "cuda"
        )
        with torch.random.fork_rng(
            devices=[]
        ):  # the loader's seed draw must not move the dropout RNG: exact resume
            steps = iter(steps)
        for step_in_epoch, step in enumerate(steps, start=state.step_in_epoch):
            rows = batches[step_in_epoch]
            # Forward/backward of each micro batch, clip, optimiser step; the loss stays on the
            # device until a flush below reads the pending ones together.
            loss = run_step(step)
            scheduler.step()
            pending.add(state.global_step, epoch + 1, loss, scheduler.get_last_lr()[0])
            tokens_trained += step.tokens
            tokens_padded += step.padded_tokens
            state.step_in_epoch = step_in_epoch + 1
            state.global_step += 1
            pairs_trained += len(rows) * collate.pairs_per_example
            bar.update(1)
            status.update(1, items=len(rows) * collate.pairs_per_example)
            if (
                state.global_step % curve_every == 0
                or state.global_step % log_every == 0
                or state.global_step == total_steps
                or state.step_in_epoch == steps_per_epoch
                or (checkpoint_every > 0 and state.global_step % checkpoint_every == 0)
            ):
                pending.flush()  # the one host sync of these steps
            if state.global_step % curve_every == 0 or state.global_step == total_steps:
                window = state.losses[-curve_every:]
                loss_curve.append([state.global_step, sum(window) / len(window)])
            if state.global_step % log_every == 0 or state.global_step == total_steps:
                window = state.losses[-log_every:]
                mean = sum(window) / len(window)
                bar.set_postfix(loss=f"{mean:.4f}")
                log.info(
                    "step %d/%d epoch %d loss %.4f lr %.3g",
                    state.global_step,
                    total_steps,
                    epoch + 1,
                    mean,
                    scheduler.get_last_lr()[0],
                )
            if (
                selector is not None
                and scorer is not None
                and state.step_in_epoch == steps_per_epoch
            ):
                # Before the epoch-end checkpoint, so that it holds this epoch's result.
                validation_started = time.perf_counter()
                validate_epoch(scorer, selector, model, epoch + 1, state.global_step)
                validation_seconds += time.perf_counter() - validation_started
            if callback is not None and state.step_in_epoch == steps_per_epoch:
                dev_measures = selector.history[-1] if selector and selector.history else None
                callback.on_epoch_end(epoch + 1, state.global_step, dev_measures)
            checkpointer.step_done(state)
        pending.flush()
        state.step_in_epoch = 0
        epoch_seconds = (
            time.perf_counter() - epoch_started - (validation_seconds - validation_before)
        )
        epoch_steps = state.global_step - epoch_first_step
        if epoch_steps:
            epoch_speed.append(
                {
                    "epoch": epoch + 1,
                    "steps": epoch_steps,
                    "seconds": epoch_seconds,
                    "batches_per_s": epoch_steps / epoch_seconds if epoch_seconds > 0 else None,
                }
            )
    bar.close()
    status.close()
    train_seconds = time.perf_counter() - train_started - validation_seconds
    model.eval()
    epochs_trained = state.global_step // steps_per_epoch if steps_per_epoch else 0
    selection = None
    if selector is not None and dev is not None:
        chosen = selector.finish(model, epochs_trained)
        selection = {
            **selector.summary(chosen, epochs, dev, len(counted_dev)),
            "seconds": validation_seconds,
        }
        log.info(
            "model selection: saving epoch %d of %d (%s); %s",
            chosen,
            epochs_trained,
            selection["chosen_because"],
            selection["stop_reason"],
        )

    epoch_losses = [
        float(np.mean(state.losses[e * steps_per_epoch : (e + 1) * steps_per_epoch]))
        for e in range(epochs)
        if state.losses[e * steps_per_epoch : (e + 1) * steps_per_epoch]
    ]
    stats = {
        "variant": spec.name,
        **({"alias": alias} if alias else {}),
        "example_kind": spec.example_kind,
        "encoder": settings.encoder,
        "max_length": max_length,
        "seed": seed,
        "examples": len(collate),
        "distinct_pairs": len(index),
        **index.summary(),
        "epochs": epochs,
        "fine_tuned": fine_tunes,
        "batch_size": batch_size,
        "steps": state.global_step,
        "resumed_from_step": resumed_from,
        "warmup_steps": warmup_steps,
        "final_loss": epoch_losses[-1] if epoch_losses else None,
        "mean_loss": float(np.mean(state.losses)) if state.losses else None,
        "epoch_losses": epoch_losses,
        "loss_curve": loss_curve,
        "epoch_speed": epoch_speed,
        "pairs_trained": pairs_trained,
        "pairs_per_s": pairs_trained / train_seconds if train_seconds > 0 else None,
        "tokens_trained": tokens_trained,
        "tokens_padded": tokens_padded,
        "tokens_per_s": tokens_trained / train_seconds if train_seconds > 0 else None,
        "precision": precision.name,
        "micro_batch_size": micro_batch_size or batch_size,
        "accumulation_steps": accumulation_steps(batch_size, micro_batch_size),
        "gradient_checkpointing": settings.gradient_checkpointing,
        "dataloader_workers": workers,
        **cache_scope.summary(),
        "train_seconds": train_seconds,
        "tokenize_seconds": tokenize_seconds,
        "seconds": time.perf_counter() - started,
        "device": str(device),
        "world_size": distributed.world_size(),
        "threads": torch.get_num_threads(),
        "torch": torch.__version__,
    }
    if selection is not None:
        stats["validation"] = selection
    with contextlib.suppress(ImportError):
        import transformers

        stats["transformers"] = transformers.__version__
    if callback is not None:
        callback.on_train_end(stats)
    if distributed.is_main_process():
        save_atomically(model, stats, out_dir)
        if callback is not None:
            callback.on_saved(out_dir)
    checkpointer.finished(state, out_dir)
    log.info(
        "saved %s to %s (final loss %.4f, %.1f pairs/s)",
        spec.name,
        out_dir,
        stats["final_loss"] or float("nan"),
        stats["pairs_per_s"] or 0.0,
    )
    return stats
