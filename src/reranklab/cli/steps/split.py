"""``reranklab split``: a dataset's folds, k-fold cross-validation or its predefined split (the
split rule)."""

from __future__ import annotations

import argparse
import logging

from reranklab.cli._options import add_inputs, add_spec
from reranklab.settings.job import SplitSpec

NAME = "split"
HELP = "k-fold cross-validation or the predefined split"

log = logging.getLogger("reranklab")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_inputs(parser, "dataset", "qrels")
    parser.add_argument("--split-file", required=True, help="split.json: the dataset's own split")
    parser.add_argument("--out", required=True, help="the folds.json to write")
    add_spec(parser, SplitSpec)


def run(args: argparse.Namespace) -> None:
    from reranklab.io import read_json, read_qrels, write_folds
    from reranklab.splits import hold_out_dev, make_folds, score_dev

    spec: SplitSpec = args.spec
    protocol = spec.protocol
    folds = make_folds(
        protocol,
        read_qrels(args.qrels),
        read_json(args.split_file),
        spec.seed,
        args.dataset,
    )
    # training.validation.dev_fraction: dev-less folds hold out part of their training queries.
    folds = hold_out_dev(folds, spec.dev_fraction or 0.0, spec.seed)
    if protocol.get("scored", "test") == "dev":
        folds = score_dev(folds)
    write_folds(args.out, folds)
    for fold in folds.folds:
        log.info(
            "%s: train %d, dev %d, test %d queries",
            fold.name,
            len(fold.train),
            len(fold.dev),
            len(fold.test),
        )
