"""``reranklab baseline``: the first-stage run of a fold's test queries (the baseline rule)."""

from __future__ import annotations

import argparse
import logging

from reranklab.cli._options import add_inputs

NAME = "baseline"
HELP = "the first-stage run of a fold's test queries"

log = logging.getLogger("reranklab")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_inputs(parser, "candidates", "folds")
    parser.add_argument("--out", required=True, help="the run to write (TREC format)")
    add_inputs(parser, "fold")
    parser.add_argument(
        "--tag", default="first_stage", help="the run's tag column (default: first_stage)"
    )


def run(args: argparse.Namespace) -> None:
    from reranklab.io import read_folds, read_run, write_run

    qids = read_folds(args.folds).fold(args.fold).test
    run = read_run(args.candidates)
    write_run(args.out, {q: run[q] for q in qids if q in run}, tag=args.tag)
    log.info("first-stage run of %d test queries", len(qids))
