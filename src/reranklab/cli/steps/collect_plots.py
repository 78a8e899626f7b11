"""``reranklab collect-plots``: the study's DVC plots, every dataset's sweep and per-query tables
and its figures in one folder (the collect_plots rule)."""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

NAME = "collect-plots"
HELP = "the study's DVC plots: every dataset's sweep and per-query tables, its figures"

log = logging.getLogger("reranklab")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--report-dirs", nargs="+", required=True, help="results/report/<dataset> folders"
    )
    parser.add_argument("--out-dir", required=True, help="the plots folder (results/plots)")


def run(args: argparse.Namespace) -> None:
    from reranklab.io.report_dirs import report_dirs_of
    from reranklab.report.plots import collect_plots

    written = collect_plots(report_dirs_of(args.report_dirs), Path(args.out_dir))
    log.info("%d plot files written to %s", len(written), args.out_dir)
