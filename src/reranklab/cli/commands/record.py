"""``reranklab record``: keep a finished study's results for grading without re-running it."""

from __future__ import annotations

import argparse

NAME = "record"
HELP = (
    "keep a finished study's results for grading without re-running: summary, per-query "
    "values, each query's random-order expectation, training losses, seeds' values, epoch "
    "timings and provenance (e.g. under studies/results/minilm-cpu/<study>/)"
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--summary", default="results/summary.json", help="the study's summary.json"
    )
    parser.add_argument("--out", required=True, help="the folder to write")
    parser.add_argument("--command", required=True, help="the command that produced the results")
    parser.add_argument("--wall-seconds", type=float, default=None, help="how long it took")
    parser.add_argument(
        "--shared",
        default=None,
        metavar="WHAT",
        help="what else ran on the machine meanwhile (the wall time then says less; the "
        "results do not depend on it), e.g. 'the test suite; paused 797 s'",
    )
    parser.add_argument(
        "--study-file",
        default=None,
        help="the configuration file the study ran with (its path in the checkout and its "
        "sha256 are kept: a test checks that the start commit holds the same file)",
    )
    parser.add_argument(
        "--looks",
        type=int,
        default=1,
        help="how many times the study's claims have been graded on these test questions, this "
        "record included (an earlier record counts): they are graded at alpha / looks",
    )
    parser.add_argument(
        "--looks-note",
        default=None,
        help="what the earlier looks were, or why a re-run is no new look (kept in provenance.json)",
    )
    parser.add_argument(
        "--commit",
        default=None,
        help="the commit the study started from (default: the checkout's commit now)",
    )


def run(args: argparse.Namespace) -> None:
    from reranklab.grading.evidence import record

    written = record(
        args.summary,
        args.out,
        args.command,
        args.wall_seconds,
        args.shared,
        study_file=args.study_file,
        commit=args.commit,
        looks=args.looks,
        looks_note=args.looks_note,
    )
    print(f"recorded {len(written)} files in {args.out}")
