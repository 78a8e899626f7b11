"""``reranklab status``: which cells of the study are trained, re-ranked, evaluated and tracked,
read from the result files."""

from __future__ import annotations

import argparse

NAME = "status"
HELP = (
    "which cells of the study are trained, re-ranked, evaluated and tracked (from the result files)"
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--configfile",
        nargs="+",
        action="extend",
        default=[],
        help="override files, as snakemake's --configfile (e.g. config/quickstart.yaml)",
    )
    parser.add_argument("--params-file", default="params.yaml", help="the study's params.yaml")
    parser.add_argument("--root", default=".", help="the folder holding results/")


def run(args: argparse.Namespace) -> None:
    from reranklab.config import first_stage_cell, grid, load_params, n_folds, with_defaults
    from reranklab.report.status import study_status
    from reranklab.settings.cell import Cell

    config = with_defaults(load_params([args.params_file, *args.configfile]))
    cells = []  # the summary's rows: each dataset's first stage, then its grid cells (each seed)
    for dataset in config["datasets"]:
        folds = n_folds(config, dataset)
        cells.append((Cell(dataset, first_stage_cell(config, dataset)["variant"]), folds))
        cells += [
            (Cell(dataset, variant, max_length, seed), folds)
            for ds, variant, max_length in grid(config)
            if ds == dataset
            for seed in config.get("seeds") or [None]
        ]
    print(study_status(config["study"], cells, args.root))
