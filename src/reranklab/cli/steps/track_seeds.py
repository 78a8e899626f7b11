"""``reranklab track-seeds``: log a multi-seed cell to MLflow with its seed runs nested under it
(the track_seeds rule, on a seed axis)."""

from __future__ import annotations

import argparse
import json
import logging
from pathlib import Path

from reranklab.cli._options import add_inputs, add_spec
from reranklab.settings.job import RecordSpec

NAME = "track-seeds"
HELP = "log a multi-seed cell to MLflow and nest its seed runs under it"

log = logging.getLogger("reranklab")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--tracked", nargs="+", required=True, help="each seed's mlflow.json (track output)"
    )
    parser.add_argument(
        "--metrics", required=True, help="the cell's metrics (aggregate-seeds output)"
    )
    add_inputs(parser, "tracking-uri", "experiment")
    parser.add_argument("--out", required=True, help="mlflow.json to write: the runs' ids")
    add_spec(parser, RecordSpec)


def run(args: argparse.Namespace) -> None:
    from reranklab.tracking.seeds import track_seeds

    out = track_seeds(
        args.spec.model_dump(mode="json", exclude_none=True),
        [Path(p) for p in args.tracked],
        Path(args.metrics),
        args.tracking_uri,
        args.experiment,
        Path(args.out),
    )
    log.info("MLflow: %s", json.dumps(out, sort_keys=True))
