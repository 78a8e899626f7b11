"""``reranklab datasets``: list the registered datasets with their provenance, counts, protocol,
raw files and size."""

from __future__ import annotations

import argparse
import json

from reranklab.cli._options import MIRROR

NAME = "datasets"
HELP = "list the registered datasets: provenance, counts, protocol, raw files, size"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--results-dir", default="results", help="the workflow's results folder (default: results)"
    )
    parser.add_argument("--mirror", default=None, help=MIRROR)
    parser.add_argument("--json", action="store_true", help="print JSON instead of text")


def run(args: argparse.Namespace) -> None:
    from reranklab.data.download import resolve_mirror
    from reranklab.data.irds import LISTING_NOTE
    from reranklab.data.listing import format_listing, list_datasets

    listings = list_datasets(args.results_dir, resolve_mirror(args.mirror))
    print(
        json.dumps([item.as_dict() for item in listings], indent=2)
        if args.json
        else f"{format_listing(listings)}\n\n{LISTING_NOTE}"
    )
