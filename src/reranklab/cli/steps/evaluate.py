"""``reranklab evaluate``: a fold's run scored with pytrec_eval under the dataset's scoring
protocol (the evaluate rule)."""

from __future__ import annotations

import argparse
import json
import logging

from reranklab.cli._options import add_inputs, add_spec
from reranklab.cli.steps._common import scoring
from reranklab.settings.job import ScoringSpec

NAME = "evaluate"
HELP = "evaluate a fold's run with pytrec_eval"

log = logging.getLogger("reranklab")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--run", required=True, help="the fold's run (TREC format)")
    add_inputs(parser, "qrels", "folds")
    parser.add_argument("--out", required=True, help="the metrics JSON to write")
    add_inputs(parser, "fold")
    add_spec(parser, ScoringSpec)


def run(args: argparse.Namespace) -> None:
    from reranklab.evaluation.evaluate import evaluate_run
    from reranklab.io import read_folds, read_qrels, read_run, write_json

    qids = read_folds(args.folds).fold(args.fold).test
    # What `reranklab score` refuses, refused here too (io.trec's checks): an empty run or qrels
    # (every measure 0 or null), a passage listed twice, a pair judged twice at two grades.
    run = read_run(args.run, allow_empty=False)
    qrels = read_qrels(args.qrels, allow_empty=False)
    result = evaluate_run(run, qrels, qids, scoring=scoring(args.spec))
    write_json(args.out, result)
    log.info(
        "fold %d, scoring %s: %d queries counted, dropped %s, ties %s: %s",
        args.fold,
        result["scoring"]["name"],
        result["n_queries"],
        json.dumps(result["dropped"]),
        json.dumps(result["ties"]),
        json.dumps(result["aggregate"]),
    )
