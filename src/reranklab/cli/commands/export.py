"""``reranklab export``: write a trained model as a Hugging Face folder (its arguments and the
run live in :mod:`reranklab.models.export`)."""

from __future__ import annotations

import argparse

NAME = "export"
HELP = (
    "write a trained model as a Hugging Face folder (safetensors, config, tokenizer, card);"
    " uploads nothing"
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from reranklab.models.export import add_arguments as export_arguments

    export_arguments(parser)


def run(args: argparse.Namespace) -> None:
    from reranklab.models.export import command

    command(args)
