"""``reranklab aggregate-seeds``: a multi-seed cell's mean and standard deviation over its seeds
(the aggregate_seeds rule, on a seed axis)."""

from __future__ import annotations

import argparse
import json
import logging
from pathlib import Path

NAME = "aggregate-seeds"
HELP = "mean and std over the seeds of a cell (the seed axis)"

log = logging.getLogger("reranklab")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--metrics", nargs="+", required=True, help="each seed's cell metrics (aggregate output)"
    )
    parser.add_argument(
        "--seeds", nargs="+", type=int, required=True, help="the seeds, in --metrics order"
    )
    parser.add_argument("--out", required=True, help="the multi-seed cell's metrics JSON to write")


def run(args: argparse.Namespace) -> None:
    from reranklab.evaluation.seeds import aggregate_seeds

    result = aggregate_seeds([Path(p) for p in args.metrics], args.seeds, Path(args.out))
    log.info(
        "cell over %d seeds: %s ± %s",
        result["n_seeds"],
        json.dumps(result["overall"]),
        json.dumps(result["seed_std"]),
    )
