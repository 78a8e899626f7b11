"""The two engines ``reranklab bench`` compares: reranklab's training and re-ranking, and the naive loop.

Each function runs one engine once on the same pairs and returns a :class:`Measurement`; the
model is built from the same seed for both (:func:`build_model`).
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from reranklab.bench.inputs import RerankTask, TrainTask
from reranklab.bench.settings import BenchSettings

if TYPE_CHECKING:  # numpy and torch load lazily: `reranklab --help` must stay fast
    import numpy as np


@dataclass
class Measurement:
    """One timed run of one engine."""

    pairs: int
    seconds: float
    tokens: int
    padded_tokens: int
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def pairs_per_s(self) -> float:
        return self.pairs / self.seconds if self.seconds > 0 else float("nan")


def bench_cell(settings: BenchSettings) -> dict[str, Any]:
    """The resolved cell the engine trains (schema < variant paper settings < these options)."""
    from reranklab.config import resolve_training

    overrides: dict[str, Any] = {
        "encoder": settings.encoder,
        "device": settings.device,
        "epochs": 1,
        "precision": settings.precision,
        "micro_batch_size": settings.micro_batch_size,
        "dataloader_workers": settings.dataloader_workers,
        "gradient_checkpointing": settings.gradient_checkpointing,
        "packing": settings.packing,
        "compile": settings.compile,
        "threads": settings.threads,
        "feature_cache": None,  # the one-off tokenisation is measured, not read from a cache
    }
    if settings.batch_size:
        overrides["batch_size"] = settings.batch_size
    if settings.eval_batch_size:
        overrides["eval_batch_size"] = settings.eval_batch_size
    training = resolve_training({"training": overrides}, settings.variant)
    return {
        "study": "bench",
        "seed": settings.seed,
        "dataset": settings.dataset,
        "variant": settings.variant,
        "max_length": int(settings.max_length),
        "protocol": {},
        "retrieval": {},
        "training": training,
    }


def _synchronize(device: Any) -> None:
    import torch

    if device.type == "cuda":
        torch.cuda.synchronize(device)


def build_model(cell: Mapping[str, Any], device: Any) -> Any:
    """The variant's fresh model, built after seeding with the cell's seed (as the trainer does)."""
    from reranklab.models.registry import get_variant
    from reranklab.training.plan import seed_everything

    seed_everything(int(cell["seed"]))
    model = get_variant(cell["variant"]).build(
        cell["training"]["encoder"], cell["training"], int(cell["max_length"])
    )
    return model.to(device)


def warm_up_scoring(model: Any, task: RerankTask) -> None:
    """One untimed scoring pass of an ``eval_batch_size`` batch padded to max length."""
    import torch

    from reranklab.features.batch import to_device
    from reranklab.models.registry import get_variant

    keys = task.keys()[: int(task.cell["training"]["eval_batch_size"])]
    index = get_variant(task.cell["variant"]).featurizer()(
        model, keys, task.data.queries, task.data.corpus, progress=False
    )
    model.eval()
    with torch.inference_mode():
        model.score(
            to_device(
                index.batch([index[k] for k in keys], int(task.cell["max_length"])), model.device
            )
        )
    _synchronize(model.device)


def engine_train(task: TrainTask, work_dir: Path) -> Measurement:
    """Train one epoch with the loop ``reranklab train`` runs and time it.

    The same :func:`~reranklab.training.plan.build_plan` and
    :func:`~reranklab.training.loop.run_loop` as :func:`~reranklab.training.trainer.train_model`,
    timed by the same :class:`~reranklab.training.callbacks.Throughput` callback that gives
    ``train_stats.json`` its ``pairs_per_s``; only the saving of the model is left out.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    from reranklab.training.callbacks import ProgressLog, Throughput
    from reranklab.training.loop import run_loop
    from reranklab.training.plan import build_plan
    from reranklab.training.steps import accumulation_steps
    from reranklab.training.trainer import epoch_losses

    work_dir.mkdir(parents=True, exist_ok=True)
    examples = work_dir / "examples.parquet"
    pq.write_table(pa.table(dict(task.columns)), examples)
    plan = build_plan(
        task.cell, examples, task.data.queries, task.data.corpus, progress=task.progress
    )
    speed = Throughput()
    state = run_loop(plan, [speed, ProgressLog(plan, task.progress)])
    losses = epoch_losses(state.losses, plan.steps_per_epoch, plan.epochs)
    settings = plan.settings
    return Measurement(
        pairs=speed.pairs,
        seconds=speed.seconds,
        tokens=speed.tokens,
        padded_tokens=speed.padded_tokens,
        extra={
            "tokenize_seconds": plan.tokenize_seconds,
            "steps": state.global_step,
            "final_loss": losses[-1] if losses else None,
            "precision": plan.precision.name,
            "accumulation_steps": accumulation_steps(
                settings.batch_size, settings.micro_batch_size
            ),
        },
    )


def baseline_train(task: TrainTask) -> Measurement:
    """The naive loop: shuffled batches, tokenised when they come, padded to max length, fp32, default AdamW.

    Its own loop on purpose: it is the yardstick, what a plain PyTorch fine-tuning script does,
    so it shares none of the engine's levers (only the model, the loss and the schedule).
    """
    import numpy as np
    import torch
    from tqdm.auto import tqdm

    from reranklab.features.batch import collator_for, to_device
    from reranklab.models.encoder import select_device
    from reranklab.models.registry import get_variant
    from reranklab.training.plan import linear_schedule
    from reranklab.training.steps import count_tokens

    training = task.cell["training"]
    spec = get_variant(task.cell["variant"])
    max_length = int(task.cell["max_length"])
    device = select_device(str(training["device"]))
    collator = collator_for(spec.example_kind)
    batch_size = int(training["batch_size"])
    model = build_model(task.cell, device)
    loss_fn = spec.loss(model, training)
    optimizer = torch.optim.AdamW(
        model.parameters(),
        lr=float(training["learning_rate"]),
        weight_decay=float(training["weight_decay"]),
    )
    n = len(task.columns["qid"])
    steps = math.ceil(n / batch_size)
    # The engine's schedule, its warm-up from the ratio alone (a naive loop has no absolute one).
    scheduler = linear_schedule(
        optimizer, math.ceil(float(training["warmup_ratio"]) * steps), steps
    )
    order = np.random.default_rng(int(task.cell["seed"])).permutation(n)
    featurize = spec.featurizer()

    def next_batch(rows: np.ndarray) -> Any:
        sub = {name: [values[i] for i in rows] for name, values in task.columns.items()}
        index = featurize(
            model, collator.pair_keys(sub), task.data.queries, task.data.corpus, progress=False
        )
        # pad_to_multiple_of=max_length: every batch is max_length wide (no pair is longer).
        return collator.from_columns(sub, index, pad_to_multiple_of=max_length)(
            list(range(len(rows)))
        )

    model.train()
    # Untimed warm-up (kernel selection, allocator, thread pools): one forward/backward at full size.
    loss_fn(to_device(next_batch(order[:batch_size]), device)).backward()
    optimizer.zero_grad(set_to_none=True)
    tokens = padded = pairs = 0
    losses = []
    _synchronize(device)
    started = time.perf_counter()
    for start in tqdm(
        range(0, n, batch_size),
        desc="baseline train",
        unit="step",
        disable=not task.progress,
        mininterval=1.0,
    ):
        rows = order[start : start + batch_size]
        batch = next_batch(rows)
        real, width = count_tokens(batch)
        loss = loss_fn(to_device(batch, device))
        loss.backward()
        if float(training.get("max_grad_norm") or 0) > 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), float(training["max_grad_norm"]))
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad()
        losses.append(loss.item())
        tokens += real
        padded += width
        pairs += len(rows) * collator.pairs_per_example
    _synchronize(device)
    seconds = time.perf_counter() - started
    return Measurement(
        pairs,
        seconds,
        tokens,
        padded,
        {
            "steps": steps,
            "final_loss": float(np.mean(losses)) if losses else None,
            "precision": "fp32",
        },
    )


def _compiled_copy(model: Any) -> Any:
    """A compiled copy of ``model``, made once per model (repeats reuse its compiled code)."""
    import copy

    from reranklab.training.compile import compile_encoders

    compiled = getattr(model, "_bench_compiled", None)
    if compiled is None:
        compiled = copy.deepcopy(model)
        compile_encoders(compiled)
        object.__setattr__(model, "_bench_compiled", compiled)
    return compiled


def engine_rerank(model: Any, task: RerankTask) -> tuple[Measurement, dict[str, dict[str, float]]]:
    """Score with :func:`~reranklab.training.inference.rerank_with_model` (tokenisation included)."""
    import numpy as np

    from reranklab.features.batch import length_sorted_batches
    from reranklab.features.packing import packed_if_supported
    from reranklab.models.registry import get_variant
    from reranklab.training.inference import rerank_with_model
    from reranklab.training.precision import resolve_precision
    from reranklab.training.steps import count_tokens

    training = task.cell["training"]
    eval_batch_size = int(training["eval_batch_size"])
    if training["compile"]:
        model = _compiled_copy(model)  # the baseline and the peers keep the eager model
    _synchronize(model.device)
    started = time.perf_counter()
    run = rerank_with_model(
        model,
        task.candidates,
        task.qids,
        task.data.queries,
        task.data.corpus,
        eval_batch_size,
        progress=task.progress,
        precision=str(training["precision"]),
        packing=bool(training["packing"]),
    )
    _synchronize(model.device)
    seconds = time.perf_counter() - started
    # Token counts, untimed: the same featurizer, the same length-sorted batches.
    keys = task.keys()
    features = get_variant(task.cell["variant"]).featurizer()(
        model, keys, task.data.queries, task.data.corpus, progress=False
    )
    lengths = np.asarray(features.lengths, dtype=np.int64)
    multiple = 8 if model.device.type == "cuda" else 1
    if training["packing"]:
        # Packed rows: the cells of the batches as the engine built them.
        packed = packed_if_supported(model, features, True)
        padded = sum(
            count_tokens(packed.batch(b, multiple))[1]
            for b in length_sorted_batches(lengths, eval_batch_size)
        )
    else:
        padded = sum(
            len(b) * (-(-int(lengths[b].max()) // multiple) * multiple)
            for b in length_sorted_batches(lengths, eval_batch_size)
        )
    precision = resolve_precision(str(training["precision"]), model.device).name
    return Measurement(
        len(keys),
        seconds,
        int(lengths.sum()),
        int(padded),
        {"batch_size": eval_batch_size, "precision": precision},
    ), run


def baseline_rerank(
    model: Any, task: RerankTask
) -> tuple[Measurement, dict[str, dict[str, float]]]:
    """The naive loop: candidates in order, a training-size batch tokenised and padded to max length, fp32, ``no_grad``."""
    import torch
    from tqdm.auto import tqdm

    from reranklab.features.batch import to_device
    from reranklab.models.registry import get_variant
    from reranklab.training.steps import count_tokens

    max_length = int(task.cell["max_length"])
    batch_size = int(task.cell["training"]["batch_size"])
    featurize = get_variant(task.cell["variant"]).featurizer()
    keys = task.keys()
    run: dict[str, dict[str, float]] = {}
    tokens = padded = 0
    model.eval()
    _synchronize(model.device)
    started = time.perf_counter()
    with torch.no_grad():
        for start in tqdm(
            range(0, len(keys), batch_size),
            desc="baseline re-rank",
            unit="batch",
            disable=not task.progress,
            mininterval=1.0,
        ):
            chunk = keys[start : start + batch_size]
            index = featurize(model, chunk, task.data.queries, task.data.corpus, progress=False)
            inputs = index.batch([index[key] for key in chunk], max_length)
            real, width = count_tokens(inputs)
            scores = model.score(to_device(inputs, model.device)).double().cpu().numpy()
            for (qid, pid), score in zip(chunk, scores.tolist(), strict=True):
                run.setdefault(qid, {})[pid] = score
            tokens += real
            padded += width
    _synchronize(model.device)
    seconds = time.perf_counter() - started
    return Measurement(
        len(keys), seconds, tokens, padded, {"batch_size": batch_size, "precision": "fp32"}
    ), run
