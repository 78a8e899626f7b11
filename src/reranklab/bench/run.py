"""``reranklab bench``: measure both engines on the same pairs and model, print the report."""

from __future__ import annotations

import argparse
import dataclasses
import gc
import logging
import statistics
import sys
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from reranklab.bench.engines import (
    Measurement,
    baseline_rerank,
    baseline_train,
    bench_cell,
    build_model,
    engine_rerank,
    engine_train,
    warm_up_scoring,
)
from reranklab.bench.inputs import (
    BenchData,
    RerankTask,
    TrainTask,
    load_bench_data,
    rerank_pairs,
    tile_data,
    training_examples,
)
from reranklab.bench.peers import (
    check_peers,
    crossencoder_rerank,
    crossencoder_train,
    peer_import_error,
    save_start,
    trainer_rerank,
    trainer_train,
)
from reranklab.bench.quiet import stdout_to_stderr
from reranklab.bench.report import (
    describe_device,
    format_report,
    peak_bf16_tflops,
    report_json,
    summarize,
)
from reranklab.bench.settings import BenchSettings
from reranklab.bench.weights import WEIGHTS, resolve_weights
from reranklab.errors import ConfigError

log = logging.getLogger(__name__)


@dataclass
class Runs:
    """Every repeat's measurement of each engine (and peer) of one bench."""

    engine: list[Measurement] = field(default_factory=list)
    baseline: list[Measurement] = field(default_factory=list)
    peers: dict[str, list[Measurement]] = field(default_factory=dict)
    # Re-ranking: the largest |score difference| between the engine and each peer.
    peer_differences: dict[str, float] = field(default_factory=dict)


def _check(settings: BenchSettings) -> None:
    if settings.mode not in ("train", "rerank"):
        raise ConfigError(f"bench: mode must be train or rerank, not {settings.mode!r}")
    if settings.pairs < 1 or settings.repeats < 1 or settings.copies < 1:
        raise ConfigError("bench: --pairs, --repeats and --copies must be at least 1")
    if settings.weights not in WEIGHTS:
        raise ConfigError(f"bench: weights must be one of {', '.join(WEIGHTS)}")
    check_peers(list(settings.against), settings.variant)


def _setup(
    settings: BenchSettings, model: Any, cell: dict[str, Any], device: Any, peak: float | None
) -> dict[str, Any]:
    """The report's first part: what ran, on what."""
    import torch
    import transformers

    from reranklab.training.steps import non_embedding_parameters

    training = cell["training"]
    return {
        "mode": settings.mode,
        "variant": settings.variant,
        "max_length": settings.max_length,
        "encoder": settings.encoder,
        "dataset": settings.dataset,
        "parameters": sum(p.numel() for p in model.parameters()),
        "non_embedding_parameters": non_embedding_parameters(model),
        **describe_device(device),
        "peak_bf16_tflops": peak,
        "batch_size": int(training["batch_size"]),
        "micro_batch_size": training.get("micro_batch_size"),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "settings": asdict(settings),
    }


def _train_runs(
    settings: BenchSettings,
    cell: dict[str, Any],
    data: BenchData,
    work: Path,
    start: Path | None,
    progress: bool,
    report: dict[str, Any],
) -> Runs:
    """Train with the baseline, the engine and each peer, ``settings.repeats`` times each."""
    from reranklab.models.registry import get_variant

    example_kind = get_variant(settings.variant).example_kind
    columns = training_examples(data, example_kind, settings.pairs, settings.seed)
    report["examples"] = len(columns["qid"])
    task = TrainTask(cell, columns, data, progress)
    runs = Runs(peers={name: [] for name in settings.against})
    for repeat in range(settings.repeats):
        log.info("bench train, repeat %d/%d: baseline", repeat + 1, settings.repeats)
        runs.baseline.append(baseline_train(task))
        log.info("bench train, repeat %d/%d: engine", repeat + 1, settings.repeats)
        runs.engine.append(engine_train(task, work / f"engine{repeat}"))
        for name in settings.against:
            log.info("bench train, repeat %d/%d: %s", repeat + 1, settings.repeats, name)
            train_peer = trainer_train if name == "trainer" else crossencoder_train
            runs.peers[name].append(train_peer(start, task, work / f"{name}{repeat}"))
            gc.collect()
    return runs


def _max_difference(
    ours: dict[str, dict[str, float]], theirs: dict[str, dict[str, float]]
) -> float:
    return max(abs(ours[q][p] - theirs[q][p]) for q in ours for p in ours[q])


def _rerank_runs(
    settings: BenchSettings,
    model: Any,
    cell: dict[str, Any],
    data: BenchData,
    work: Path,
    start: Path | None,
    progress: bool,
    report: dict[str, Any],
) -> Runs:
    """Score with the baseline, the engine and each peer, ``settings.repeats`` times each."""
    candidates, qids = rerank_pairs(data, settings.pairs, settings.seed)
    report["queries"] = len(qids)
    task = RerankTask(cell, candidates, qids, data, progress)
    warm_up_scoring(model, task)
    runs = Runs(peers={name: [] for name in settings.against})
    for repeat in range(settings.repeats):
        log.info("bench rerank, repeat %d/%d: baseline", repeat + 1, settings.repeats)
        measured, baseline_run = baseline_rerank(model, task)
        runs.baseline.append(measured)
        log.info("bench rerank, repeat %d/%d: engine", repeat + 1, settings.repeats)
        measured, engine_run = engine_rerank(model, task)
        runs.engine.append(measured)
        for name in settings.against:
            log.info("bench rerank, repeat %d/%d: %s", repeat + 1, settings.repeats, name)
            if name == "trainer":
                measured, peer_run = trainer_rerank(start, task, work)
            else:
                measured, peer_run = crossencoder_rerank(start, task)
            runs.peers[name].append(measured)
            runs.peer_differences[name] = _max_difference(engine_run, peer_run)
    # Same model, same word pieces: the scores must agree (up to padding/precision rounding).
    report["max_score_difference"] = _max_difference(engine_run, baseline_run)
    return runs


def _summarize(
    report: dict[str, Any], runs: Runs, flops_per_token: float, peak: float | None
) -> None:
    """Add each engine's and peer's summary and the ratios to ``report``."""
    report["engine"] = summarize(runs.engine, flops_per_token, peak)
    report["baseline"] = summarize(runs.baseline, flops_per_token, peak)
    report["ratio"] = report["engine"]["pairs_per_s"] / report["baseline"]["pairs_per_s"]
    report["ratio_tokens"] = report["engine"]["tokens_per_s"] / report["baseline"]["tokens_per_s"]
    report["peers"] = {
        name: summarize(measured, flops_per_token, peak) for name, measured in runs.peers.items()
    }
    report["ratios"] = {
        name: report["engine"]["pairs_per_s"] / peer["pairs_per_s"]
        for name, peer in report["peers"].items()
    }
    if runs.peer_differences:
        # The same checkpoint and word pieces: the peers' scores must agree with the engine's.
        report["peer_max_score_difference"] = runs.peer_differences
    if report["mode"] == "train":
        # With the one-off tokenisation counted against the engine (a cold feature cache).
        with_tokenisation = statistics.median(
            m.pairs / (m.seconds + m.extra["tokenize_seconds"]) for m in runs.engine
        )
        report["ratio_with_tokenisation"] = with_tokenisation / report["baseline"]["pairs_per_s"]


def run_bench(
    settings: BenchSettings, progress: bool = True, weights_dir: Path | None = None
) -> dict[str, Any]:
    """Measure the engine and the baseline on the same pairs and model; return the report.

    Args:
        settings: what to run.
        progress: tqdm bars.
        weights_dir: where random-initialised encoders are kept between calls (a suite's runs
            share one); ``None``: a temporary folder of this call.

    Returns:
        A JSON-able dict: the setup, ``engine`` and ``baseline`` (pairs/s, tokens/s, padding,
        seconds, per-repeat runs, model TFLOP/s and MFU on GPUs) and ``ratio`` (engine pairs/s
        over the baseline's).

    Example (skipped as a doctest: it trains and times a model for minutes; ``tests/test_bench.py``
    runs it on a tiny BERT):
        >>> report = run_bench(BenchSettings("train", "pointwise", 256, device="cpu"))  # doctest: +SKIP
        >>> round(report["ratio"], 1)  # doctest: +SKIP
        5.6
    """
    import torch

    from reranklab.models.encoder import select_device, set_threads

    _check(settings)
    unavailable = {name: peer_import_error(name) for name in settings.against}
    unavailable = {name: error for name, error in unavailable.items() if error}
    for name, error in unavailable.items():
        log.warning("bench: peer %s left out, its packages do not import: %s", name, error)
    settings = dataclasses.replace(
        settings, against=tuple(n for n in settings.against if n not in unavailable)
    )
    set_threads(settings.threads)
    cell = bench_cell(settings)
    device = select_device(str(cell["training"]["device"]))
    peak = settings.peak_tflops or (
        peak_bf16_tflops(torch.cuda.get_device_name(device)) if device.type == "cuda" else None
    )
    with tempfile.TemporaryDirectory(prefix="reranklab-bench-") as tmp:
        work = Path(tmp)
        data = tile_data(
            load_bench_data(
                settings.dataset, work, settings.mirror, settings.data_dir, progress=progress
            ),
            settings.copies,
        )
        # The engine, the baseline and the peers all load this one folder (or hub id).
        weights = resolve_weights(
            settings.encoder, settings.weights, weights_dir or work / "weights", settings.seed
        )
        cell["training"]["encoder"] = weights.path
        model = build_model(cell, device)
        report = _setup(settings, model, cell, device, peak)
        report["weights"] = weights.description
        if unavailable:
            report["peers_unavailable"] = unavailable
        # The peers start from the engine's model, saved as a standard one-logit checkpoint.
        start = save_start(model, work / "start") if settings.against else None
        if settings.mode == "train":
            del model  # the engine and the baseline build their own, from the same seed
            gc.collect()
            runs = _train_runs(settings, cell, data, work, start, progress, report)
            flops_per_token = 6.0 * report["non_embedding_parameters"]
        else:
            runs = _rerank_runs(settings, model, cell, data, work, start, progress, report)
            flops_per_token = 2.0 * report["non_embedding_parameters"]
    _summarize(report, runs, flops_per_token, peak)
    return report


def command(args: argparse.Namespace) -> None:
    """Run ``reranklab bench`` from parsed arguments: print the table (or JSON)."""
    from reranklab.io.atomic import atomic_write_text

    names = {f.name for f in dataclasses.fields(BenchSettings)}
    settings = BenchSettings(**{k: v for k, v in vars(args).items() if k in names})
    # stdout carries the report alone (the table, or JSON a pipe can parse): what the peers'
    # libraries print while measuring (the Trainer's metric dicts) goes to stderr.
    with stdout_to_stderr():
        report = run_bench(settings, progress=sys.stderr.isatty())
    if args.json == "-":
        print(report_json(report))
        return
    if args.json:
        atomic_write_text(args.json, report_json(report) + "\n")
    print(format_report(report))
