"""``reranklab bench-suite``: a list of bench runs kept as data, run and written as a Markdown
table (its arguments and the run live in :mod:`reranklab.bench.suite`)."""

from __future__ import annotations

import argparse

NAME = "bench-suite"
HELP = (
    "run a list of bench runs kept as data (gpu, cpu, or a .yaml) and write their Markdown"
    " table, e.g. into BENCHMARKS.md"
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from reranklab.bench.suite import add_arguments as bench_suite_arguments

    bench_suite_arguments(parser)


def run(args: argparse.Namespace) -> None:
    from reranklab.bench.suite import command

    command(args)
