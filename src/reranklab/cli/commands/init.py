"""``reranklab init``: start a study folder that runs the workflow shipped in the package."""

from __future__ import annotations

import argparse

NAME = "init"
HELP = (
    "start a study folder that runs the workflow shipped in the package: its Snakefile,"
    " params.yaml, config/ and profiles/"
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("directory", metavar="DIR", help="the study folder (created if missing)")
    parser.add_argument(
        "--force", action="store_true", help="replace files of the same names in DIR"
    )


def run(args: argparse.Namespace) -> None:
    from reranklab.workflow.init import init_study

    written = init_study(args.directory, force=args.force)
    where = args.directory
    print(f"wrote {len(written)} files into {where}: {', '.join(str(p) for p in written)}")
    print(
        "next:\n"
        f"  cd {where}\n"
        "  reranklab validate-config params.yaml config/quickstart.yaml\n"
        "  snakemake --cores 2 --resources gpu=1 --configfile config/quickstart.yaml"
        "   # the offline quick start\n"
        "  snakemake --cores 8 --resources gpu=1"
        "   # the study of params.yaml (GPU, internet)"
    )
