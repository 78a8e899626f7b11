"""``reranklab download``: fetch and verify a dataset's raw files (the download rule)."""

from __future__ import annotations

import argparse
import logging
from pathlib import Path
from typing import Any

from reranklab.cli._options import CONFIG_MIRROR, MIRROR, add_inputs, add_spec
from reranklab.settings.job import DatasetSpec

NAME = "download"
HELP = "fetch and verify a dataset's raw files"

log = logging.getLogger("reranklab")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_inputs(parser, "dataset")
    parser.add_argument(
        "--out-dir", required=True, help="folder for the raw files and manifest.json"
    )
    parser.add_argument("--mirror", default=None, help=MIRROR)
    parser.add_argument("--config-mirror", default=None, help=CONFIG_MIRROR)
    add_spec(parser, DatasetSpec, required=False)  # its options: fetch only the files they use


def run(args: argparse.Namespace) -> None:
    from reranklab.data import get_dataset
    from reranklab.data.download import fetch_dataset, resolve_mirror

    mirror = resolve_mirror(args.mirror, args.config_mirror)
    dataset = get_dataset(args.dataset, local=args.spec.local if args.spec else None)
    if hasattr(dataset, "fetch"):  # irds:<id>: ir_datasets downloads into its own cache
        manifest = dataset.fetch(Path(args.out_dir), _options(args))
        log.info("download %s: %s", args.dataset, ", ".join(manifest["fetched"]))
        return
    # Only the files the options use (TrecQA's `train` picks TRAIN or TRAIN-ALL).
    files = dataset.raw_files(_options(args))
    log.info(
        "download %s into %s (mirror: %s): %s",
        args.dataset,
        args.out_dir,
        mirror or "none",
        ", ".join(f.name for f in files),
    )
    manifest = fetch_dataset(dataset, Path(args.out_dir), mirror, files=files)
    for item in manifest["files"]:
        log.info(
            "  %s  %d bytes  sha256 %s  from %s",
            item["name"],
            item["size"],
            item["sha256"],
            item["source"],
        )


def _options(args: argparse.Namespace) -> dict[str, Any]:
    """The dataset's options of the spec (none without one: the defaults)."""
    return dict(args.spec.options) if args.spec else {}
