"""``reranklab variants``: list the registered re-ranker variants."""

from __future__ import annotations

import argparse

NAME = "variants"
HELP = "list the registered re-ranker variants"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """No arguments."""


def run(args: argparse.Namespace) -> None:
    from reranklab.models.registry import get_variant, variant_names

    for name in variant_names():
        spec = get_variant(name)
        print(f"{name:14s} [{spec.example_kind}] {spec.description}")
