"""``reranklab bench``: the engine against the naive Hugging Face loop on the same data and model
(its arguments and the run live in :mod:`reranklab.bench`)."""

from __future__ import annotations

import argparse

NAME = "bench"
HELP = "engine vs the naive Hugging Face loop on the same data and model: pairs/s, tokens/s, ratio"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from reranklab.bench import add_arguments as bench_arguments

    bench_arguments(parser)


def run(args: argparse.Namespace) -> None:
    from reranklab.bench import command

    command(args)
