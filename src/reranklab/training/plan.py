"""What a training job will run, built before its first step: the :class:`TrainingPlan`.

:func:`build_plan` reads the cell and the examples and sets up everything the loop
(:mod:`reranklab.training.loop`) only has to run: the seeded model, the tokenised pairs and their
length-grouped batches, the loss, AdamW (no decay on biases/LayerNorm), the linear warm-up then
decay schedule, the precision and the micro batches of gradient accumulation. With
``training.validation`` on, it also holds the dev scoring and the model selection. Building a plan
runs no optimiser step, so ``reranklab bench`` times the very loop a ``train`` job runs.
"""

from __future__ import annotations

import logging
import math
import random
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import torch
from torch import nn

from reranklab.errors import ConfigError, FormatError
from reranklab.features.batch import (
    ExampleCollator,
    LengthGroupedSampler,
    collator_for,
)
from reranklab.features.cache import CacheScope, feature_cache_scope
from reranklab.features.packing import packed_if_supported
from reranklab.models.encoder import select_device, set_threads
from reranklab.models.registry import VariantSpec, alias_of_cell, cell_spec
from reranklab.settings.training import SharedTraining, training_view
from reranklab.training import distributed
from reranklab.training.compile import compile_encoders
from reranklab.training.determinism import configure_determinism, training_threads
from reranklab.training.precision import Precision, resolve_precision
from reranklab.training.state import TrainState
from reranklab.training.steps import StepCollator, enable_gradient_checkpointing
from reranklab.training.validation import (
    DevScorer,
    DevSet,
    ModelSelector,
    ValidationSettings,
    validation_settings,
)

# A training job's lines keep the logger name they have always had (log filters select it).
log = logging.getLogger("reranklab.training.trainer")


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


def _examples(
    spec: VariantSpec, path: Path, queries: Mapping[str, str], corpus: Mapping[str, str]
) -> tuple[type[ExampleCollator], dict[str, list[Any]]]:
    """The collator of the variant's kind of examples and the examples, their ids checked."""
    collator_cls = collator_for(spec.example_kind)
    columns = read_examples(path, collator_cls.columns)
    _check_ids(columns, collator_cls.pid_columns, queries, corpus, path)
    return collator_cls, columns


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


@dataclass
class TrainingPlan:
    """A training job set up and ready to run: what :func:`build_plan` returns.

    Attributes:
        spec: the variant (an alias's cell: its base).
        settings: the shared ``training`` settings, typed; ``training``: the whole block (the
            variant's hooks read their own settings from it).
        alias: the study's name of the configuration, when the cell is an alias.
        seed, max_length: the cell's.
        device: where the model trains.
        fine_tunes: False for a variant that ranks as built (it runs no step).
        epochs: epochs to run (0 when it does not fine-tune).
        model: the seeded model, on ``device``.
        features: the tokenised pairs (``summary()``, ``len()``).
        collate: the examples' collator (in a DDP worker: this rank's share of every batch).
        sampler: the length-grouped batches of every epoch (a function of seed and epoch).
        step_collate: a batch's rows to one step's micro batches (gradient accumulation).
        precision: the autocast precision; ``state.scaler`` is its fp16 loss scaler.
        state: the model, loss, optimiser, schedule and step counters (what a checkpoint holds).
        warmup_steps: steps of linear warm-up.
        scorer, selector: the dev scoring and the model selection of a job that validates.
        counted_dev: the dev queries the dev scoring counts.
        cache: the feature-cache scope the pairs were tokenised in (its hit/miss counts).
        tokenize_seconds: seconds spent tokenising (and setting up the dev scoring).
        train_queries: the distinct training questions among the examples (a query the sampling
            dropped, having no positive or no negative, is not one).
    """

    spec: VariantSpec
    settings: SharedTraining
    training: dict[str, Any]
    alias: str | None
    seed: int
    max_length: int
    device: torch.device
    fine_tunes: bool
    epochs: int
    model: Any
    features: Any
    collate: ExampleCollator
    sampler: LengthGroupedSampler
    step_collate: StepCollator
    precision: Precision
    state: TrainState
    warmup_steps: int
    scorer: DevScorer | None = None
    counted_dev: list[str] = field(default_factory=list)
    cache: CacheScope | None = None
    tokenize_seconds: float = 0.0
    train_queries: int = 0

    @property
    def steps_per_epoch(self) -> int:
        return self.state.steps_per_epoch

    @property
    def total_steps(self) -> int:
        return self.state.total_steps

    @property
    def selector(self) -> ModelSelector | None:
        return self.state.selection


def _validation(
    training: Mapping[str, Any], fine_tunes: bool, dev: DevSet | None
) -> tuple[ValidationSettings | None, list[str]]:
    """The job's validation settings (``None``: it keeps its last epoch) and the counted dev queries."""
    validation = validation_settings(training) if fine_tunes else None
    if validation is not None and dev is None:
        log.warning(
            "training.validation is on (measure %s) but no dev set was given: training every epoch, keeping the last",
            validation.measure,
        )
        return None, []
    if validation is None or dev is None:
        return None, []
    # Before any work: a wrong measure or an empty dev stops here.
    return validation, dev.check(validation)


def _job(
    cell: Mapping[str, Any], threads: int
) -> tuple[dict[str, Any], SharedTraining, VariantSpec, torch.device]:
    """The cell's ``training`` block (whole and typed), its variant and device; torch set up."""
    training = dict(cell["training"])  # the variant's hooks read their own settings from it
    settings = training_view(training)  # the shared ones, typed
    spec = cell_spec(cell)  # an alias's cell: its base
    if spec.loss is None:
        raise ConfigError(f"variant {spec.name!r} registers no loss and cannot be trained")
    # training.threads wins; 0 there means "the rule's threads" (the argument), except in
    # deterministic mode, which pins its own count (the rule's depends on --cores).
    set_threads(training_threads(training, threads))
    configure_determinism(settings.deterministic)
    return training, settings, spec, select_device(settings.device)


def _seeded_model(
    cell: Mapping[str, Any],
    spec: VariantSpec,
    settings: SharedTraining,
    training: Mapping[str, Any],
    device: torch.device,
) -> tuple[Any, str | None]:
    """The variant's model built right after seeding with the cell's seed, on ``device``; its alias."""
    seed_everything(int(cell["seed"]))
    model = spec.build(settings.encoder, training, int(cell["max_length"]))
    alias = alias_of_cell(cell)
    if alias:  # reranker.json and the model card name the study's configuration
        model.alias = alias
    # On its device before featurizing: a featurizer may run (frozen) parts of the model.
    model.to(device)
    return model, alias


def _featurize(
    model: Any,
    spec: VariantSpec,
    settings: SharedTraining,
    device: torch.device,
    keys: list[Any],
    queries: Mapping[str, str],
    corpus: Mapping[str, str],
    dataset: str | None,
    progress: bool,
    frozen_features: Path | None,
    dev: DevSet | None,
) -> tuple[Any, DevScorer | None, CacheScope, float]:
    """The tokenised training pairs and, with ``dev``, the dev scoring (its pairs tokenised too).

    Both inside one feature-cache scope: the tokenised pairs are shared through
    ``training.feature_cache`` by every job of the dataset.

    Returns:
        The pairs' features, the dev scoring, the cache scope and the seconds all this took.
    """
    started = time.perf_counter()
    with feature_cache_scope(settings.feature_cache, dataset) as cache:
        index = spec.featurizer()(
            model,
            keys,
            queries,
            corpus,
            progress=progress,
            **spec.featurize_options(frozen_features),
        )
        scorer = None
        if dev is not None:
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
    return index, scorer, cache, time.perf_counter() - started


def _batches(
    model: Any,
    spec: VariantSpec,
    settings: SharedTraining,
    device: torch.device,
    seed: int,
    collator_cls: type[ExampleCollator],
    columns: Mapping[str, list[Any]],
    index: Any,
    source: Path,
) -> tuple[ExampleCollator, LengthGroupedSampler]:
    """The examples' collator (packed rows where the model reads them) and its batch sampler."""
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
        source=source,
    )
    sampler = LengthGroupedSampler(
        collate.lengths(), settings.batch_size, seed, group=settings.length_grouping
    )
    # In a DDP worker: rank 0's weights, gradients averaged over ranks, each rank a share of every batch.
    return distributed.prepare(model, collate), sampler


def _train_state(
    model: Any,
    spec: VariantSpec,
    settings: SharedTraining,
    training: Mapping[str, Any],
    device: torch.device,
    steps: tuple[int, int],
    validation: ValidationSettings | None,
) -> tuple[TrainState, Precision, int]:
    """The loss, AdamW and the linear schedule over ``steps`` (per epoch, epochs).

    Returns:
        The state at step 0 (with a model selector when ``validation`` is given), the precision
        and the warm-up steps.
    """
    # The memory levers first: compiling wraps the encoders the optimiser then steps.
    if settings.gradient_checkpointing:
        enable_gradient_checkpointing(model)
    if settings.compile:
        compile_encoders(model)
    precision = resolve_precision(settings.precision, device)
    assert spec.loss is not None  # build_plan refuses a variant without one
    loss_fn = spec.loss(model, training)
    optimizer = make_optimizer(model, settings.learning_rate, settings.weight_decay)
    steps_per_epoch, epochs = steps
    total_steps = steps_per_epoch * epochs
    warmup_steps = warmup_steps_for(training, total_steps)
    scheduler = linear_schedule(optimizer, warmup_steps, total_steps)
    state = TrainState(
        model,
        loss_fn,
        optimizer,
        scheduler,
        total_steps,
        steps_per_epoch=steps_per_epoch,
        scaler=precision.grad_scaler(),
        selection=ModelSelector(validation) if validation is not None else None,
    )
    return state, precision, warmup_steps


def build_plan(
    cell: Mapping[str, Any],
    examples_path: Path,
    queries: Mapping[str, str],
    corpus: Mapping[str, str],
    threads: int = 0,
    progress: bool = True,
    frozen_features: Path | None = None,
    dev: DevSet | None = None,
) -> TrainingPlan:
    """Set up the cell's training job on the examples: everything but the steps.

    The order of the work is the seeded job's: the model is built right after seeding, then
    the pairs are tokenised (a featurizer may run frozen parts of the model), then the loss and
    the optimiser are made; changing it changes the random draws, hence the trained weights.

    Args:
        cell, examples_path, queries, corpus, threads, frozen_features, dev: as
            :func:`~reranklab.training.trainer.train_model`'s.
        progress: show tqdm bars while tokenising.

    Returns:
        The plan; its ``state`` is at step 0 (a checkpointer may restore a later one).

    Raises:
        ConfigError: the variant has no loss; validation is on and its measure is not one of
            the dev scoring's, the dev set is empty or the scoring counts none of its queries.
        FormatError: the examples cannot be read or name unknown queries or passages.

    Example:
        >>> plan = build_plan(cell, Path("work/examples/fold0.parquet"), queries, corpus)  # doctest: +SKIP
        >>> plan.total_steps, plan.warmup_steps  # doctest: +SKIP
        (2504, 251)
    """
    examples_path = Path(examples_path)
    training, settings, spec, device = _job(cell, threads)
    seed, max_length = int(cell["seed"]), int(cell["max_length"])
    # A variant that ranks as it is built (a zero-shot bi-encoder) runs no step: it is saved as built.
    fine_tunes = spec.trains(training)
    epochs = settings.epochs if fine_tunes else 0
    validation, counted_dev = _validation(training, fine_tunes, dev)
    collator_cls, columns = _examples(spec, examples_path, queries, corpus)
    model, alias = _seeded_model(cell, spec, settings, training, device)
    index, scorer, cache, tokenize_seconds = _featurize(
        model,
        spec,
        settings,
        device,
        collator_cls.pair_keys(columns),
        queries,
        corpus,
        cell.get("dataset"),
        progress,
        frozen_features,
        dev if validation is not None else None,
    )
    collate, sampler = _batches(
        model, spec, settings, device, seed, collator_cls, columns, index, examples_path
    )
    state, precision, warmup_steps = _train_state(
        model,
        spec,
        settings,
        training,
        device,
        (len(sampler), epochs),
        validation if scorer is not None else None,
    )
    return TrainingPlan(
        spec=spec,
        settings=settings,
        training=training,
        alias=alias,
        seed=seed,
        max_length=max_length,
        device=device,
        fine_tunes=fine_tunes,
        epochs=epochs,
        model=model,
        features=index,
        collate=collate,
        sampler=sampler,
        step_collate=StepCollator(collate, settings.micro_batch_size),
        precision=precision,
        state=state,
        warmup_steps=warmup_steps,
        scorer=scorer,
        counted_dev=counted_dev,
        cache=cache,
        tokenize_seconds=tokenize_seconds,
        train_queries=len(set(columns["qid"])),
    )
