"""``reranklab summarize``: the study's summary table, as CSV, Markdown and JSON, and its
significance tables (the summarize rule)."""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

from reranklab.cli._options import add_spec
from reranklab.settings.job import SummarySpec

NAME = "summarize"
HELP = "the study's summary table (CSV, Markdown, JSON)"

log = logging.getLogger("reranklab")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out-csv", required=True, help="summary.csv to write")
    parser.add_argument("--out-md", required=True, help="summary.md to write")
    parser.add_argument("--out-json", required=True, help="summary.json to write")
    parser.add_argument(
        "--out-significance-csv",
        default=None,
        help="significance.csv to write: every pair of a dataset's rows, per measure",
    )
    parser.add_argument(
        "--out-significance-md", default=None, help="significance.md to write (the same, as tables)"
    )
    add_spec(parser, SummarySpec)


def run(args: argparse.Namespace) -> None:
    from reranklab.report.summary import summarize

    spec: SummarySpec = args.spec
    # Each row's settings as the rule wrote them (an unset one is absent, not null).
    cells = [cell.model_dump(mode="json", exclude_none=True) for cell in spec.cells]
    summarize(
        cells,
        Path(args.out_csv),
        Path(args.out_md),
        Path(args.out_json),
        spec.title,
        significance=spec.significance,
        out_significance_csv=args.out_significance_csv,
        out_significance_md=args.out_significance_md,
        first_stages=spec.first_stages,
    )
    log.info("summary of %d cells written to %s", len(cells), args.out_md)
