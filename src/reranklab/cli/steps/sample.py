"""``reranklab sample``: the training examples of one fold, pointwise and triplets (the sample
rule)."""

from __future__ import annotations

import argparse
import json
import logging

from reranklab.cli._options import add_inputs, add_spec
from reranklab.settings.job import SampleSpec

NAME = "sample"
HELP = "training examples of one fold"

log = logging.getLogger("reranklab")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_inputs(parser, "candidates", "qrels", "folds")
    parser.add_argument(
        "--first-stage",
        help="first_stage.json of the retrieve step: its planted queries give no positive "
        "when positives are the candidates' (protocol positives: candidates)",
    )
    parser.add_argument("--out-pointwise", required=True, help="the pointwise.parquet to write")
    parser.add_argument("--out-triplets", required=True, help="the triplets.parquet to write")
    add_inputs(parser, "fold")
    add_spec(parser, SampleSpec)


def run(args: argparse.Namespace) -> None:
    from reranklab.io import atomic_path, read_folds, read_json, read_qrels, read_run
    from reranklab.sampling import sample_examples

    protocol = args.spec.protocol
    fold = read_folds(args.folds).fold(args.fold)
    planted = read_json(args.first_stage).get("planted", []) if args.first_stage else []
    examples = sample_examples(
        fold.train,
        read_run(args.candidates),
        read_qrels(args.qrels),
        protocol["negatives_per_positive"],
        int(protocol["relevance_threshold"]),
        args.spec.seed + args.fold,
        protocol.get("positives", "judged"),
        planted,
    )
    with atomic_path(args.out_pointwise) as tmp:
        examples.pointwise.to_parquet(tmp, index=False)
    with atomic_path(args.out_triplets) as tmp:
        examples.triplets.to_parquet(tmp, index=False)
    log.info("%s sampling: %s", fold.name, json.dumps(examples.stats, sort_keys=True))
