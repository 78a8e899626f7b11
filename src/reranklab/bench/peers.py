"""The peers a user would otherwise run, measured in the same process as the engine.

* ``trainer``: Hugging Face's ``Trainer`` on ``AutoModelForSequenceClassification`` with one
  logit and binary cross-entropy (``problem_type="multi_label_classification"``), the pairs
  tokenised once beforehand (``truncation="only_second"``), padded per batch
  (``DataCollatorWithPadding``), length-grouped batches (``train_sampling_strategy``); for
  re-ranking, ``Trainer.predict`` with ``per_device_eval_batch_size`` = the engine's.
* ``crossencoder``: sentence-transformers' ``CrossEncoderTrainer`` with
  ``BinaryCrossEntropyLoss`` (it tokenises each batch as it comes, as its users run it); for
  re-ranking, ``CrossEncoder.predict``.

Same pairs, same checkpoint (the engine's model saved as a standard one-logit checkpoint, so
re-ranking scores agree with the engine's), same max length, batch size, learning rate, weight
decay, warm-up, epochs, seed, threads and precision (bf16 autocast where the engine uses it).
Training time excludes the one-off tokenisation for the engine and ``trainer`` (reported apart)
and includes it for ``crossencoder`` (it has no other way). Point-wise variants only: the
peers train point-wise.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from reranklab.bench.engines import Measurement, _synchronize
from reranklab.bench.inputs import BenchData, RerankTask, TrainTask
from reranklab.errors import ConfigError

PEERS = ("trainer", "crossencoder")


def check_peers(names: list[str], variant: str) -> None:
    unknown = sorted(set(names) - set(PEERS))
    if unknown:
        raise ConfigError(
            f"bench: unknown peer(s) {', '.join(unknown)} (known: {', '.join(PEERS)})"
        )
    if names and variant not in ("pointwise", "monobert"):
        raise ConfigError(
            f"bench: --against trains point-wise peers; use --variant pointwise (not {variant!r})"
        )


def peer_import_error(name: str) -> str | None:
    """Why peer ``name`` cannot run here (its packages do not import), or ``None``.

    Checked before measuring, so a machine whose ``datasets`` does not fit its other packages
    (a lent GPU's own Python, say) still measures the engine and the other peer.
    """
    try:
        if name == "trainer":
            from transformers import Trainer  # noqa: F401 - needs accelerate
        else:
            from datasets import Dataset  # noqa: F401
            from sentence_transformers.cross_encoder import CrossEncoderTrainer  # noqa: F401
    except Exception as error:  # ImportError, or a version check that raises another type
        return f"{type(error).__name__}: {error}"[:300]
    return None


def save_start(model: Any, directory: Path) -> Path:
    """The engine's model as a standard one-logit checkpoint every peer loads."""
    return model.save(directory)


def _texts(keys: list[tuple[str, str]], data: BenchData) -> tuple[list[str], list[str]]:
    return [data.queries[q] for q, _ in keys], [data.corpus[p] for _, p in keys]


def _device(cell: Mapping[str, Any]) -> str:
    """The engine's device (``auto`` resolved as the engine resolves it: a GPU when there is one)."""
    from reranklab.models.encoder import select_device

    return str(select_device(str(cell["training"]["device"])))


def uses_bf16(cell: Mapping[str, Any]) -> bool:
    """Whether the engine computes in bf16 under this cell's ``training.precision``."""
    from reranklab.models.encoder import select_device
    from reranklab.training.precision import resolve_precision

    training = cell["training"]
    device = select_device(str(training["device"]))
    return resolve_precision(str(training["precision"]), device).name == "bf16"


def _arguments(cls: Any, cell: Mapping[str, Any], out: Path, steps: int, progress: bool) -> Any:
    training = cell["training"]
    bf16 = uses_bf16(cell)
    return cls(
        output_dir=str(out),
        per_device_train_batch_size=int(training["batch_size"]),
        per_device_eval_batch_size=int(training["eval_batch_size"]),
        num_train_epochs=1,
        learning_rate=float(training["learning_rate"]),
        weight_decay=float(training["weight_decay"]),
        warmup_steps=math.ceil(float(training["warmup_ratio"]) * steps),
        max_grad_norm=float(training.get("max_grad_norm") or 0.0) or 1e9,
        seed=int(cell["seed"]),
        bf16=bf16,
        use_cpu=_device(cell) == "cpu",
        logging_strategy="no",
        save_strategy="no",
        report_to=[],
        disable_tqdm=not progress,
        dataloader_num_workers=0,
    )


def trainer_train(start: Path, task: TrainTask, work: Path) -> Measurement:
    """Hugging Face ``Trainer``, one epoch over the point-wise examples."""
    import torch
    from transformers import (
        AutoModelForSequenceClassification,
        AutoTokenizer,
        DataCollatorWithPadding,
        Trainer,
        TrainingArguments,
    )

    max_length = int(task.cell["max_length"])
    keys = list(zip(task.columns["qid"], task.columns["pid"], strict=True))
    queries, passages = _texts(keys, task.data)
    tokenizer = AutoTokenizer.from_pretrained(start)
    tokenize_started = time.perf_counter()
    encoded = tokenizer(queries, passages, truncation="only_second", max_length=max_length)
    tokenize_seconds = time.perf_counter() - tokenize_started
    rows = [
        {name: encoded[name][i] for name in encoded} | {"labels": [float(label)]}
        for i, label in enumerate(task.columns["label"])
    ]
    torch.manual_seed(int(task.cell["seed"]))
    model = AutoModelForSequenceClassification.from_pretrained(
        start, num_labels=1, problem_type="multi_label_classification"
    )
    steps = math.ceil(len(rows) / int(task.cell["training"]["batch_size"]))
    args = _arguments(TrainingArguments, task.cell, work / "trainer", steps, task.progress)
    args.train_sampling_strategy = "group_by_length"
    trainer = Trainer(
        model=model,
        args=args,
        train_dataset=rows,
        data_collator=DataCollatorWithPadding(tokenizer),
    )
    _synchronize(model.device)
    started = time.perf_counter()
    trainer.train()
    _synchronize(model.device)
    seconds = time.perf_counter() - started
    tokens = sum(len(ids) for ids in encoded["input_ids"])
    # Padding: its sampler's batches are not ours to see (0 = not measured, shown as –).
    return Measurement(
        len(rows), seconds, tokens, 0, {"tokenize_seconds": tokenize_seconds, "steps": steps}
    )


def crossencoder_train(start: Path, task: TrainTask, work: Path) -> Measurement:
    """sentence-transformers' ``CrossEncoderTrainer`` with ``BinaryCrossEntropyLoss``."""
    import torch
    from datasets import Dataset
    from sentence_transformers.cross_encoder import (
        CrossEncoder,
        CrossEncoderTrainer,
        CrossEncoderTrainingArguments,
    )
    from sentence_transformers.cross_encoder.losses import BinaryCrossEntropyLoss

    keys = list(zip(task.columns["qid"], task.columns["pid"], strict=True))
    queries, passages = _texts(keys, task.data)
    torch.manual_seed(int(task.cell["seed"]))
    model = CrossEncoder(
        str(start),
        num_labels=1,
        max_length=int(task.cell["max_length"]),
        device=_device(task.cell),
    )
    train = Dataset.from_dict(
        {"query": queries, "passage": passages, "label": [float(x) for x in task.columns["label"]]}
    )
    steps = math.ceil(len(keys) / int(task.cell["training"]["batch_size"]))
    args = _arguments(
        CrossEncoderTrainingArguments, task.cell, work / "crossencoder", steps, task.progress
    )
    trainer = CrossEncoderTrainer(
        model=model, args=args, train_dataset=train, loss=BinaryCrossEntropyLoss(model)
    )
    _synchronize(model.device)
    started = time.perf_counter()
    trainer.train()
    _synchronize(model.device)
    seconds = time.perf_counter() - started
    tokens = sum(
        len(ids)
        for ids in model.tokenizer(
            queries, passages, truncation="only_second", max_length=int(task.cell["max_length"])
        )["input_ids"]
    )
    return Measurement(len(keys), seconds, tokens, 0, {"steps": steps})


def in_order_padding(lengths: list[int], batch_size: int) -> int:
    """Word pieces computed when batches of ``batch_size`` in the given order are padded to
    their longest pair (what ``CrossEncoder.predict`` and ``Trainer.predict`` do).

    Example:
        >>> in_order_padding([3, 9, 4, 4], 2)
        26
    """
    return sum(
        len(lengths[i : i + batch_size]) * max(lengths[i : i + batch_size])
        for i in range(0, len(lengths), batch_size)
    )


def crossencoder_rerank(
    start: Path, task: RerankTask
) -> tuple[Measurement, dict[str, dict[str, float]]]:
    """``CrossEncoder.predict`` (tokenisation included, as its users run it)."""
    import torch
    from sentence_transformers.cross_encoder import CrossEncoder

    model = CrossEncoder(
        str(start), max_length=int(task.cell["max_length"]), device=_device(task.cell)
    )
    keys = task.keys()
    queries, passages = _texts(keys, task.data)
    bf16 = uses_bf16(task.cell)
    _synchronize(model.device)
    started = time.perf_counter()
    with torch.autocast(model.device.type, dtype=torch.bfloat16, enabled=bf16):
        scores = model.predict(
            list(zip(queries, passages, strict=True)),
            batch_size=int(task.cell["training"]["eval_batch_size"]),
            show_progress_bar=task.progress,
            convert_to_numpy=True,
        )
    _synchronize(model.device)
    seconds = time.perf_counter() - started
    run = task.run_of(scores.tolist())
    lengths = [
        len(ids)
        for ids in model.tokenizer(
            queries, passages, truncation="only_second", max_length=int(task.cell["max_length"])
        )["input_ids"]
    ]
    # predict() sorts the pairs by its own length estimate before batching: the same order here.
    pairs = list(zip(queries, passages, strict=True))
    measure = getattr(model, "_input_length", lambda pair: sum(map(len, pair)))
    order = sorted(range(len(pairs)), key=lambda i: -measure(pairs[i]))
    batch = int(task.cell["training"]["eval_batch_size"])
    measured = Measurement(
        len(keys),
        seconds,
        sum(lengths),
        in_order_padding([lengths[i] for i in order], batch),
        {"batch_size": batch, "precision": "bf16" if bf16 else "fp32"},
    )
    return measured, run


def trainer_rerank(
    start: Path, task: RerankTask, work: Path
) -> tuple[Measurement, dict[str, dict[str, float]]]:
    """``Trainer.predict`` over the pairs (tokenisation included)."""
    from transformers import (
        AutoModelForSequenceClassification,
        AutoTokenizer,
        DataCollatorWithPadding,
        Trainer,
        TrainingArguments,
    )

    tokenizer = AutoTokenizer.from_pretrained(start)
    model = AutoModelForSequenceClassification.from_pretrained(start)
    trainer = Trainer(
        model=model,
        args=_arguments(TrainingArguments, task.cell, work / "trainer-predict", 1, task.progress),
        data_collator=DataCollatorWithPadding(tokenizer),
    )
    keys = task.keys()
    queries, passages = _texts(keys, task.data)
    _synchronize(model.device)
    started = time.perf_counter()
    encoded = tokenizer(
        queries, passages, truncation="only_second", max_length=int(task.cell["max_length"])
    )
    rows = [{name: encoded[name][i] for name in encoded} for i in range(len(keys))]
    logits = trainer.predict(rows).predictions
    _synchronize(model.device)
    seconds = time.perf_counter() - started
    run = task.run_of(logits.reshape(-1).tolist())
    lengths = [len(ids) for ids in encoded["input_ids"]]
    batch = int(task.cell["training"]["eval_batch_size"])
    return Measurement(
        len(keys), seconds, sum(lengths), in_order_padding(lengths, batch), {"batch_size": batch}
    ), run
