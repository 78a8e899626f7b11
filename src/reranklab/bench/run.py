"""``reranklab bench``: measure both engines on the same pairs and model, print the report."""

from __future__ import annotations

import argparse
import dataclasses
import gc
import logging
import statistics
import sys
import tempfile
from dataclasses import asdict
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
from reranklab.bench.inputs import load_bench_data, rerank_pairs, training_examples
from reranklab.bench.peers import (
    check_peers,
    crossencoder_rerank,
    crossencoder_train,
    save_start,
    trainer_rerank,
    trainer_train,
)
from reranklab.bench.report import (
    describe_device,
    format_report,
    peak_bf16_tflops,
    report_json,
    summarize,
)
from reranklab.bench.settings import BenchSettings
from reranklab.errors import ConfigError

log = logging.getLogger(__name__)


def run_bench(settings: BenchSettings, progress: bool = True) -> dict[str, Any]:
    """Measure the engine and the baseline on the same pairs and model; return the report.

    Args:
        settings: what to run.
        progress: tqdm bars.

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
    peak = settings.peak_tflops or (
        peak_bf16_tflops(torch.cuda.get_device_name(device)) if device.type == "cuda" else None
    )
    check_peers(list(settings.against), settings.variant)
    engine_runs: list[Measurement] = []
    baseline_runs: list[Measurement] = []
    peer_runs: dict[str, list[Measurement]] = {name: [] for name in settings.against}
    peer_differences: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="reranklab-bench-") as tmp:
        work = Path(tmp)
        data = load_bench_data(
            settings.dataset, work, settings.mirror, settings.data_dir, progress=progress
        )
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
        # The peers start from the engine's model, saved as a standard one-logit checkpoint.
        start = save_start(model, work / "start") if settings.against else None
        if settings.mode == "train":
            del model
            gc.collect()
            columns = training_examples(data, spec.example_kind, settings.pairs, settings.seed)
            report["examples"] = len(columns["qid"])
            for repeat in range(settings.repeats):
                log.info("bench train, repeat %d/%d: baseline", repeat + 1, settings.repeats)
                baseline_runs.append(baseline_train(cell, columns, data, progress))
                log.info("bench train, repeat %d/%d: engine", repeat + 1, settings.repeats)
                engine_runs.append(
                    engine_train(cell, columns, data, work / f"engine{repeat}", progress)
                )
                for name in settings.against:
                    log.info("bench train, repeat %d/%d: %s", repeat + 1, settings.repeats, name)
                    train_peer = trainer_train if name == "trainer" else crossencoder_train
                    peer_runs[name].append(
                        train_peer(start, cell, columns, data, work / f"{name}{repeat}", progress)
                    )
                    gc.collect()
            flops_per_token = 6.0 * non_embedding
        else:
            candidates, qids = rerank_pairs(data, settings.pairs, settings.seed)
            report["queries"] = len(qids)
            warm_up_scoring(model, cell, candidates, qids, data)
            for repeat in range(settings.repeats):
                log.info("bench rerank, repeat %d/%d: baseline", repeat + 1, settings.repeats)
                measured, baseline_run = baseline_rerank(
                    model, cell, candidates, qids, data, progress
                )
                baseline_runs.append(measured)
                log.info("bench rerank, repeat %d/%d: engine", repeat + 1, settings.repeats)
                measured, engine_run = engine_rerank(model, cell, candidates, qids, data, progress)
                engine_runs.append(measured)
                for name in settings.against:
                    log.info("bench rerank, repeat %d/%d: %s", repeat + 1, settings.repeats, name)
                    if name == "trainer":
                        measured, peer_run = trainer_rerank(
                            start, cell, candidates, qids, data, work, progress
                        )
                    else:
                        measured, peer_run = crossencoder_rerank(
                            start, cell, candidates, qids, data, progress
                        )
                    peer_runs[name].append(measured)
                    peer_differences[name] = max(
                        abs(engine_run[q][p] - peer_run[q][p])
                        for q in engine_run
                        for p in engine_run[q]
                    )
            # Same model, same word pieces: the scores must agree (up to padding/precision rounding).
            report["max_score_difference"] = max(
                abs(engine_run[q][p] - baseline_run[q][p])
                for q in engine_run
                for p in engine_run[q]
            )
            flops_per_token = 2.0 * non_embedding
    report["engine"] = summarize(engine_runs, flops_per_token, peak)
    report["baseline"] = summarize(baseline_runs, flops_per_token, peak)
    report["ratio"] = report["engine"]["pairs_per_s"] / report["baseline"]["pairs_per_s"]
    report["ratio_tokens"] = report["engine"]["tokens_per_s"] / report["baseline"]["tokens_per_s"]
    report["peers"] = {
        name: summarize(runs, flops_per_token, peak) for name, runs in peer_runs.items()
    }
    report["ratios"] = {
        name: report["engine"]["pairs_per_s"] / peer["pairs_per_s"]
        for name, peer in report["peers"].items()
    }
    if peer_differences:
        # The same checkpoint and word pieces: the peers' scores must agree with the engine's.
        report["peer_max_score_difference"] = peer_differences
    if settings.mode == "train":
        # With the one-off tokenisation counted against the engine (a cold feature cache).
        with_tokenisation = statistics.median(
            m.pairs / (m.seconds + m.extra["tokenize_seconds"]) for m in engine_runs
        )
        report["ratio_with_tokenisation"] = with_tokenisation / report["baseline"]["pairs_per_s"]
    return report


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
