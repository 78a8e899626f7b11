"""``reranklab html``: a Markdown table file (summary.md, ...) as an HTML page (the report
rules)."""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

NAME = "html"
HELP = "a Markdown table file (summary.md, ...) as an HTML page"

log = logging.getLogger("reranklab")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("markdown", help="the Markdown file")
    parser.add_argument("out", help="the HTML file to write")


def run(args: argparse.Namespace) -> None:
    from reranklab.io import atomic_write_text
    from reranklab.report.html import markdown_page

    source = Path(args.markdown)
    atomic_write_text(args.out, markdown_page(source.read_text(encoding="utf-8"), source.stem))
    log.info("%s written from %s", args.out, source)
