"""``reranklab score``: score run files on a dataset's split under its official protocol (or
another scoring of the dataset), as text or JSON."""

from __future__ import annotations

import argparse
import json
import sys

from reranklab.cli._options import DATASET

NAME = "score"
HELP = "score run files (TREC or SemEval format) on a dataset's split under its official protocol"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dataset", required=True, help=DATASET)
    parser.add_argument("--split", required=True, help="train, dev, test, or all (every query)")
    parser.add_argument(
        "--protocol", default=None, help="a scoring of the dataset (default: its official one)"
    )
    parser.add_argument(
        "--json",
        action="store_true",
        help="print JSON: one object per run (a list for several runs)",
    )
    parser.add_argument(
        "--mirror",
        default=None,
        help="local mirror folder (default: env RERANKLAB_MIRROR, else download)",
    )
    parser.add_argument(
        "--cache",
        default=None,
        help="where raw files are kept (default: env RERANKLAB_CACHE, else ~/.cache/reranklab)",
    )
    _add_ties(parser)
    parser.add_argument(
        "runs",
        nargs="+",
        metavar="RUN",
        help="run files: TREC (qid Q0 pid rank score tag) or SemEval (qid aid rank score label)",
    )


def _add_ties(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--tie-seed",
        type=int,
        default=0,
        help="seed of the hash that orders tied scores (default 0)",
    )
    parser.add_argument(
        "--ties",
        choices=("hash", "official", "trec_eval", "file"),
        default="hash",
        help="how tied scores are ordered: hash (default, never by id or file order); official / trec_eval / file "
        "reproduce an official tool's figure on a run with ties (trec_eval: pid descending; file: file order, as the SemEval scorer)",
    )


def run(args: argparse.Namespace) -> None:
    from reranklab import score
    from reranklab.data import get_dataset

    results = score.score_runs(
        args.dataset,
        args.split,
        args.runs,
        protocol=args.protocol,
        mirror=score.mirror_folder(args.mirror),
        cache=args.cache,
        tie_seed=args.tie_seed,
        ties=args.ties,
        progress=sys.stderr.isatty(),
    )
    if args.json:
        print(json.dumps(results[0] if len(results) == 1 else results, indent=2))
        return
    scoring = score.resolve_scoring(get_dataset(args.dataset), args.protocol)
    print("\n\n".join(score.format_text(result, scoring) for result in results))
