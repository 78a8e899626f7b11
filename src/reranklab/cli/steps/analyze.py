"""``reranklab analyze``: the seed papers' figures and tables of one dataset of a finished study
(the analyze rule)."""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

from reranklab.cli._options import add_inputs

NAME = "analyze"
HELP = (
    "the seed papers' figures and tables of one dataset of a finished study"
    " (results/report/<dataset>/)"
)

log = logging.getLogger("reranklab")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--summary", default="results/summary.json", help="the study's summary.json"
    )
    add_inputs(parser, "dataset")
    parser.add_argument(
        "--out-dir", required=True, help="folder for the dataset's figures and tables"
    )
    parser.add_argument(
        "--results", default="results", help="the results folder (queries, fold models' stats)"
    )
    parser.add_argument(
        "--reference",
        default=None,
        help="the base row of the per-query Δ (e.g. wikiqa/bertlets/L256); default: the first stage",
    )


def run(args: argparse.Namespace) -> None:
    from reranklab.report.analyses.run import analyze

    written = analyze(
        Path(args.summary),
        args.dataset,
        Path(args.out_dir),
        results=Path(args.results),
        reference=args.reference,
    )
    log.info("%d figures and tables of %s written to %s", len(written), args.dataset, args.out_dir)
