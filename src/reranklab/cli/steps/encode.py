"""``reranklab encode``: cache a frozen encoder's features of one fold's pairs, for the lite
variants (the encode rule)."""

from __future__ import annotations

import argparse
import json
import logging
from pathlib import Path

from reranklab.cli._options import (
    add_gpu_lease,
    add_inputs,
    add_spec,
    add_threads,
    run_options,
)
from reranklab.cli.steps._common import name_job
from reranklab.settings.job import ModelSpec

NAME = "encode"
HELP = "cache a frozen encoder's features of one fold's pairs (lite variants)"

log = logging.getLogger("reranklab")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_gpu_lease(parser)
    add_inputs(parser, "examples", "candidates", "folds", "queries", "corpus")
    parser.add_argument("--out-dir", required=True, help="folder for the feature cache")
    add_inputs(parser, "fold")
    add_threads(parser)
    add_spec(parser, ModelSpec)


def run(args: argparse.Namespace) -> None:
    from reranklab.gpu import gpu_binding
    from reranklab.io import read_corpus, read_folds, read_queries, read_run
    from reranklab.settings.training import training_view
    from reranklab.training.encode import encode_fold
    from reranklab.training.inference import candidate_pids
    from reranklab.training.trainer import passages_to_read

    name_job("encode", args, args.fold)
    options = run_options(args)
    cell = args.spec.resolved(options)
    training = training_view(cell["training"])
    candidates, test = read_run(args.candidates), read_folds(args.folds).fold(args.fold).test
    pids = candidate_pids(candidates, test) | (passages_to_read(cell, Path(args.examples)) or set())
    with gpu_binding(training.device, **options.lease()):
        meta = encode_fold(
            cell,
            Path(args.examples),
            candidates,
            test,
            read_queries(args.queries),
            read_corpus(args.corpus, pids),
            Path(args.out_dir),
            threads=args.threads,
        )
    log.info("encoded: %s", json.dumps(meta, sort_keys=True, default=str))
