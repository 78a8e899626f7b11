"""``reranklab docs-reference``: write (or check) the documentation site's generated reference
pages: every setting of params.yaml from the generated schema (``settings.md``) and every
subcommand's ``--help`` (``cli.md``)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

NAME = "docs-reference"
HELP = (
    "write the documentation's reference pages: settings.md from the params.yaml schema and "
    "cli.md from every subcommand's --help"
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--out",
        type=Path,
        default=Path("docs/reference"),
        help="the folder of the pages (default: docs/reference)",
    )
    parser.add_argument(
        "--check", action="store_true", help="only check: exit 1 when a page is out of date"
    )


def run(args: argparse.Namespace) -> None:
    from reranklab.cli import build_parser
    from reranklab.io import atomic_write_text
    from reranklab.report.reference import cli_page, settings_page
    from reranklab.workflow import SCHEMA

    pages = {"settings.md": settings_page(SCHEMA), "cli.md": cli_page(build_parser())}
    stale = [
        name
        for name, text in pages.items()
        if not (args.out / name).is_file() or (args.out / name).read_text("utf-8") != text
    ]
    if args.check:
        if stale:
            names = ", ".join(str(args.out / name) for name in stale)
            print(f"{names}: out of date; run: reranklab docs-reference", file=sys.stderr)
            raise SystemExit(1)
        print(f"{args.out}: up to date")
        return
    args.out.mkdir(parents=True, exist_ok=True)
    for name, text in pages.items():
        atomic_write_text(args.out / name, text)
        print(f"wrote {args.out / name}")
