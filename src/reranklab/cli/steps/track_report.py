"""``reranklab track-report``: log the study's tables and figures to MLflow, a study run plus the
figures and model cards on the cell runs (the track_report rule)."""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

NAME = "track-report"
HELP = (
    "log the study's tables and figures to MLflow (a study run; figures and model cards on the"
    " cell runs)"
)

log = logging.getLogger("reranklab")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--study", required=True, help="the study's name")
    parser.add_argument(
        "--tables", nargs="+", required=True, help="summary, significance, regression files"
    )
    parser.add_argument(
        "--report-dirs", nargs="+", required=True, help="results/report/<dataset> folders"
    )
    parser.add_argument("--cells", nargs="+", required=True, help="the cells' mlflow.json records")
    parser.add_argument("--tracking-uri", required=True, help="the MLflow tracking URI")
    parser.add_argument("--experiment", required=True, help="the MLflow experiment (the study's)")
    parser.add_argument("--out", required=True, help="the record to write (JSON)")


def run(args: argparse.Namespace) -> None:
    from reranklab.io.report_dirs import report_dirs_of
    from reranklab.tracking.study_report import track_study

    out = track_study(
        args.study,
        [Path(p) for p in args.tables],
        report_dirs_of(args.report_dirs),
        [Path(p) for p in args.cells],
        args.tracking_uri,
        args.experiment,
        Path(args.out),
    )
    log.info(
        "MLflow: study run %s; figures on %d cell runs",
        out["study_run_id"],
        len(out["cell_run_ids"]),
    )
