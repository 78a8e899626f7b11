"""``reranklab settings-schema``: write (or check) the JSON schema of params.yaml that is
generated from the settings model."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

NAME = "settings-schema"
HELP = "write the JSON schema of params.yaml from the settings model"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--check", action="store_true", help="only check: exit 1 when the file is out of date"
    )
    parser.add_argument(
        "--path",
        type=Path,
        default=None,
        help="the schema file (default: the one shipped in the package,"
        " workflow/schemas/params.schema.yaml in a checkout)",
    )


def _shown(path: Path) -> Path:
    """``path`` relative to the working directory when it lies inside it (shorter messages)."""
    try:
        return path.relative_to(Path.cwd())
    except ValueError:
        return path


def run(args: argparse.Namespace) -> None:
    from reranklab.config import study_model
    from reranklab.io import atomic_write_text
    from reranklab.settings.generate import out_of_date, render
    from reranklab.workflow import SCHEMA

    model = study_model()
    args.path = args.path or _shown(SCHEMA)
    if args.check:
        problem = out_of_date(args.path, model)
        if problem:
            print(problem, file=sys.stderr)
            raise SystemExit(1)
        print(f"{args.path} is up to date")
        return
    atomic_write_text(args.path, render(model))
    print(f"wrote {args.path}")
