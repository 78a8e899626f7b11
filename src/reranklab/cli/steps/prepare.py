"""``reranklab prepare``: parse a dataset's raw files into the canonical form (the prepare rule)."""

from __future__ import annotations

import argparse
import json
import logging

from reranklab.cli._options import add_inputs, add_spec
from reranklab.settings.job import DatasetSpec

NAME = "prepare"
HELP = "parse raw files into the canonical form"

log = logging.getLogger("reranklab")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_inputs(parser, "dataset")
    parser.add_argument(
        "--raw-dir", required=True, help="the raw files (the download step's folder)"
    )
    parser.add_argument(
        "--out-dir",
        required=True,
        help="folder for corpus.parquet, queries.tsv, qrels.txt, split.json, pool.run, stats.json",
    )
    add_spec(parser, DatasetSpec, required=False)


def run(args: argparse.Namespace) -> None:
    from reranklab.data import get_dataset

    options = dict(args.spec.options) if args.spec else {}
    dataset = get_dataset(args.dataset, local=args.spec.local if args.spec else None)
    stats = dataset.prepare(args.raw_dir, args.out_dir, options)
    log.info("prepared %s: %s", args.dataset, json.dumps(stats, sort_keys=True))
