"""``reranklab train``: fine-tune a re-ranker variant on one fold (the train rule), on one GPU
or as a DDP job whose workers re-run this command under torchrun."""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import signal
from pathlib import Path
from typing import Any

from reranklab.cli._options import (
    FROZEN,
    add_gpu_lease,
    add_inputs,
    add_spec,
    add_threads,
    run_options,
)
from reranklab.cli.steps._common import frozen_features, name_job
from reranklab.errors import ReranklabError
from reranklab.settings.job import ModelSpec

NAME = "train"
HELP = "fine-tune a re-ranker variant on one fold"

log = logging.getLogger("reranklab")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_gpu_lease(parser)
    add_inputs(parser, "examples", "queries", "corpus")
    parser.add_argument("--out-dir", required=True, help="folder for the trained model")
    _add_checkpointing(parser)
    add_threads(parser)
    parser.add_argument("--frozen-features", nargs="*", default=None, help=FROZEN)
    _add_validation(parser)
    _add_tracking(parser)
    add_spec(parser, ModelSpec)


def _add_checkpointing(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--checkpoint-dir",
        default=None,
        help="checkpoint/resume directory of this job (default: no checkpoints)",
    )
    parser.add_argument(
        "--checkpoint-every", type=int, default=None, help="overrides training.checkpoint_every"
    )
    parser.add_argument(
        "--keep-checkpoints", type=int, default=None, help="overrides training.keep_checkpoints"
    )
    parser.add_argument(
        "--delete-checkpoints",
        type=int,
        choices=(0, 1),
        default=None,
        help="overrides training.delete_checkpoints",
    )


def _add_validation(parser: argparse.ArgumentParser) -> None:
    # Model selection on dev (training.validation): what scoring the fold's dev queries needs.
    parser.add_argument(
        "--candidates",
        default=None,
        help="the first-stage run (training.validation: the dev queries' candidates)",
    )
    parser.add_argument("--qrels", default=None, help="the qrels (training.validation)")
    parser.add_argument(
        "--folds", default=None, help="folds.json (training.validation: the fold's dev queries)"
    )
    parser.add_argument(
        "--fold", type=int, default=None, help="the fold index (training.validation)"
    )
    parser.add_argument(
        "--eval-batch-size",
        type=int,
        default=None,
        help="overrides training.eval_batch_size (dev scoring)",
    )


def _add_tracking(parser: argparse.ArgumentParser) -> None:
    # mlflow.log_training: the fold's MLflow run, logged while it trains (then completed by track).
    parser.add_argument(
        "--tracking-uri", default=None, help="log to the fold's MLflow run while training"
    )
    parser.add_argument(
        "--experiment", default=None, help="the MLflow experiment (default: --study)"
    )
    parser.add_argument(
        "--study", default=None, help="the study's name (the run's reranklab.study)"
    )
    parser.add_argument(
        "--cell-key", default=None, help="the cell's key, with its seed on a seed axis"
    )


def run(args: argparse.Namespace) -> None:
    from reranklab.gpu import gpu_binding
    from reranklab.settings.training import training_view
    from reranklab.training import distributed

    # SIGTERM (Snakemake stopping a job, scancel, a preemption) unwinds like Ctrl-C: the live
    # MLflow run is ended KILLED and the GPU lease released, instead of the process vanishing.
    signal.signal(signal.SIGTERM, _interrupted)
    # The cell as the training code reads it, with the run options that change no model.
    options = run_options(args)
    cell = args.spec.resolved(options)
    training = cell["training"]
    device = training_view(training).device
    if distributed.is_worker():  # one rank of a DDP job: its launcher bound the GPUs
        distributed.init_worker(device)
        try:
            _train(args, cell, writer=distributed.is_main_process())
        finally:
            distributed.shutdown()
        return
    ddp = distributed.wants_ddp(training)
    gpus = training_view(training).gpus
    with gpu_binding(device, gpus if ddp else 1, **options.lease(ddp)):
        if ddp:
            distributed.launch(args.argv, gpus)
        else:
            _train(args, cell)


def _interrupted(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt(f"stopped by signal {signal.Signals(signum).name}")


def _train(args: argparse.Namespace, cell: dict[str, Any], writer: bool = True) -> None:
    """Train the fold's model in this process (``writer``: the rank that writes and logs)."""
    from reranklab.io import read_corpus, read_queries
    from reranklab.training.inference import candidate_pids
    from reranklab.training.trainer import passages_to_read, train_model
    from reranklab.training.validation import load_dev_set

    name_job("train", args, Path(args.out_dir).name)
    # training.validation: the fold's dev queries, scored after every epoch (None when off).
    dev = load_dev_set(cell, args.candidates, args.qrels, args.folds, args.fold)
    checkpointer = _checkpointer(args, cell, dev is not None, writer)
    pids = passages_to_read(cell, Path(args.examples))
    if pids is not None and dev is not None:
        pids |= candidate_pids(dev.candidates, dev.qids)
    # --tracking-uri (mlflow.log_training): the fold's MLflow run, logged while it trains (rank
    # 0 only); without it training never touches MLflow.
    live = _live_run(args, cell, dev is not None) if writer else None
    with live if live is not None else contextlib.nullcontext():
        stats = train_model(
            cell,
            Path(args.examples),
            read_queries(args.queries),
            read_corpus(args.corpus, pids),
            Path(args.out_dir),
            threads=args.threads,
            checkpointer=checkpointer,
            progress=writer,
            frozen_features=frozen_features(args),
            dev=dev,
            callback=live,
        )
    if writer:
        log.info("trained: %s", json.dumps(stats, sort_keys=True, default=str))


def _checkpointer(
    args: argparse.Namespace, cell: dict[str, Any], validates: bool, writer: bool
) -> Any:
    """The job's checkpointer: it resumes only from checkpoints of the same inputs."""
    from reranklab.training.checkpoint import checkpointer_for

    inputs = [args.examples, args.queries, args.corpus] + (
        [args.candidates, args.qrels, args.folds] if validates else []
    )
    inputs += (
        [frozen_features(args)] if frozen_features(args) else []
    )  # its content is an input too
    return checkpointer_for(
        cell,
        args.checkpoint_dir,
        inputs,
        writer=writer,
        every=args.checkpoint_every,
        keep=args.keep_checkpoints,
        delete_when_done=args.delete_checkpoints,
    )


def _live_run(args: argparse.Namespace, cell: dict[str, Any], validates: bool) -> Any:
    """The job's :class:`~reranklab.tracking.live.LiveRun`, or None without --tracking-uri."""
    if not getattr(args, "tracking_uri", None):
        return None
    from reranklab.tracking.live import LiveRun, training_datasets
    from reranklab.tracking.mlflow_tracking import cell_key

    experiment = args.experiment or args.study
    if args.fold is None or not experiment:
        raise ReranklabError(
            "train --tracking-uri: also give --fold and --experiment (or --study), which name"
            " the fold's MLflow run"
        )
    dataset = args.spec.dataset
    dev_files = [args.candidates, args.qrels, args.folds] if validates else []
    return LiveRun(
        args.tracking_uri,
        experiment,
        cell,
        args.cell_key or cell_key(cell),
        int(args.fold),
        study=args.study,
        datasets=training_datasets(
            dataset, int(args.fold), args.queries, args.corpus, args.examples, dev_files
        ),
    )
