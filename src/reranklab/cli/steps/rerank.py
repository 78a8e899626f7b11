"""``reranklab rerank``: score a fold's test candidates with a trained model (the rerank rule)."""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

from reranklab.cli._options import (
    FROZEN,
    add_gpu_lease,
    add_inputs,
    add_spec,
    add_threads,
    run_options,
)
from reranklab.cli.steps._common import frozen_features, name_job
from reranklab.settings.job import ModelSpec

NAME = "rerank"
HELP = "score a fold's test candidates with a trained model"

log = logging.getLogger("reranklab")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_gpu_lease(parser)
    parser.add_argument(
        "--model-dir", required=True, help="the trained model (the train step's folder)"
    )
    add_inputs(parser, "candidates", "folds", "queries", "corpus")
    parser.add_argument("--out", required=True, help="the run to write (TREC format, raw scores)")
    add_inputs(parser, "fold")
    add_threads(parser)
    parser.add_argument("--frozen-features", nargs="*", default=None, help=FROZEN)
    add_spec(parser, ModelSpec)


def run(args: argparse.Namespace) -> None:
    from reranklab.gpu import gpu_binding
    from reranklab.io import read_corpus, read_folds, read_queries, read_run, write_run
    from reranklab.settings.training import training_view
    from reranklab.training.inference import candidate_pids, rerank

    name_job("rerank", args, args.fold)
    spec: ModelSpec = args.spec
    options = run_options(args)
    training = training_view(spec.resolved(options)["training"])
    qids = read_folds(args.folds).fold(args.fold).test
    # An empty candidates file would make an empty run that scores 0: refused, naming it.
    candidates = read_run(args.candidates, allow_empty=False)
    with gpu_binding(training.device, **options.lease()):
        run = rerank(
            Path(args.model_dir),
            candidates,
            qids,
            read_queries(args.queries),
            read_corpus(args.corpus, candidate_pids(candidates, qids)),
            batch_size=training.eval_batch_size,
            device=training.device,
            threads=args.threads,
            precision=training.precision,
            feature_cache=training.feature_cache,
            dataset=spec.dataset,
            frozen_features=frozen_features(args),
            packing=training.packing,
            compile_model=training.compile,
        )
    write_run(
        args.out,
        run,
        tag=spec.cell().name,
    )
    log.info("re-ranked %d queries, %d pairs", len(run), sum(len(c) for c in run.values()))
