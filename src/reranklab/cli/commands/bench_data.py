"""``reranklab bench-data``: the data steps against their naive versions on synthetic files (its
arguments and the run live in :mod:`reranklab.bench.data`)."""

from __future__ import annotations

import argparse

NAME = "bench-data"
HELP = "data steps vs their naive versions on synthetic files: corpus subset reads, tar extraction"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from reranklab.bench.data import add_arguments as bench_data_arguments

    bench_data_arguments(parser)


def run(args: argparse.Namespace) -> None:
    from reranklab.bench.data import command

    command(args)
