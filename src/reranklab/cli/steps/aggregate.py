"""``reranklab aggregate``: a cell's folds' runs concatenated and evaluated as one run (the
aggregate rule)."""

from __future__ import annotations

import argparse
import json
import logging
from pathlib import Path

from reranklab.cli._options import add_inputs, add_spec
from reranklab.cli.steps._common import scoring
from reranklab.settings.job import ScoringSpec

NAME = "aggregate"
HELP = "concatenate the folds' runs of a cell and evaluate"

log = logging.getLogger("reranklab")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--runs", nargs="+", required=True, help="each fold's run, in fold order")
    parser.add_argument(
        "--metrics", nargs="+", required=True, help="each fold's metrics JSON, in fold order"
    )
    add_inputs(parser, "qrels")
    parser.add_argument(
        "--out-run", required=True, help="the cell's run to write (folds concatenated)"
    )
    parser.add_argument("--out-metrics", required=True, help="the cell's metrics JSON to write")
    add_spec(parser, ScoringSpec)


def run(args: argparse.Namespace) -> None:
    from reranklab.evaluation.aggregate import aggregate_folds
    from reranklab.io import read_qrels

    result = aggregate_folds(
        [Path(p) for p in args.runs],
        [Path(p) for p in args.metrics],
        read_qrels(args.qrels),
        scoring(args.spec),
        Path(args.out_run),
        Path(args.out_metrics),
    )
    log.info("cell over %d queries: %s", result["n_queries"], json.dumps(result["overall"]))
