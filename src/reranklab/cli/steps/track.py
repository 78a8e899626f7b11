"""``reranklab track``: log a cell to MLflow, a parent run with one child run per fold (the track
rule)."""

from __future__ import annotations

import argparse
import json
import logging
from pathlib import Path

from reranklab.cli._options import add_inputs, add_spec
from reranklab.errors import ReranklabError
from reranklab.settings.job import RecordSpec

NAME = "track"
HELP = "log a cell (parent run) and its folds (child runs) to MLflow"

log = logging.getLogger("reranklab")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--runs", nargs="+", required=True, help="each fold's run, in fold order")
    parser.add_argument(
        "--metrics", nargs="+", required=True, help="each fold's metrics JSON, in fold order"
    )
    parser.add_argument(
        "--train-stats",
        nargs="*",
        default=None,
        help="each fold's train_stats.json (none for a first-stage cell)",
    )
    parser.add_argument("--cell-run", required=True, help="the cell's run (the aggregate step's)")
    parser.add_argument(
        "--cell-metrics", required=True, help="the cell's metrics JSON (aggregate's)"
    )
    add_inputs(parser, "tracking-uri", "experiment")
    parser.add_argument("--out", required=True, help="mlflow.json to write: the runs' ids")
    add_spec(parser, RecordSpec)


def run(args: argparse.Namespace) -> None:
    from reranklab.tracking.mlflow_tracking import track_cell

    stats = args.train_stats or [None] * len(args.runs)
    if len(stats) != len(args.runs) or len(args.metrics) != len(args.runs):
        raise ReranklabError("track: --runs, --metrics and --train-stats need one entry per fold")
    folds = [
        {"fold": i, "run": Path(r), "metrics": Path(m), "train_stats": Path(s) if s else None}
        for i, (r, m, s) in enumerate(zip(args.runs, args.metrics, stats, strict=True))
    ]
    out = track_cell(
        args.spec.model_dump(mode="json", exclude_none=True),
        folds,
        Path(args.cell_metrics),
        Path(args.cell_run),
        args.tracking_uri,
        args.experiment,
        Path(args.out),
    )
    log.info("MLflow: %s", json.dumps(out, sort_keys=True))
    log.info("MLflow: the study's runs are at %s", out["ui"])
