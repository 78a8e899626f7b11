"""``reranklab validate-config``: check params.yaml and its override files against the settings
model, and that every cell's encoder can be loaded here (before the data steps run, not at
``train``)."""

from __future__ import annotations

import argparse

NAME = "validate-config"
HELP = "check params.yaml (+ override files) against the settings model"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "files",
        nargs="*",
        default=["params.yaml"],
        metavar="FILE",
        help="params.yaml, then override files, later wins (default: params.yaml)",
    )


def run(args: argparse.Namespace) -> None:
    from reranklab.config import grid, load_params
    from reranklab.preflight import check_encoders, check_local_collections

    config = load_params(args.files)
    cells = grid(config)
    check_encoders(config, args.files)
    check_local_collections(config)
    print(f"ok: {' + '.join(args.files)}; {len(cells)} cells")
