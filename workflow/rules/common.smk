# Shared helpers: config validation, the grid, and the settings each rule passes to its step.
import json
import os

from reranklab.config import (
    cell_id,
    first_stage_cell,
    grid,
    n_folds,
    resolve_cell,
    resolve_protocol,
    validate_config,
    with_defaults,
)

_sources = [str(f) for f in getattr(workflow, "configfiles", [])] or ["params.yaml"]
validate_config(config, source=" + ".join(_sources))
CFG = with_defaults(config)
CONDA_ENV = "../../envs/reranklab.yaml"
SUMMARY = ["results/summary.csv", "results/summary.md", "results/summary.json"]


wildcard_constraints:
    dataset=r"[A-Za-z0-9][A-Za-z0-9_.]*(-[A-Za-z0-9_.]+)*",
    variant=r"[a-z][a-z0-9_]*",
    max_length=r"\d+",
    fold=r"\d+",
    first_stage=r"bm25|pool",
    cell=r"[a-z][a-z0-9_]*(-L\d+)?",


def as_json(obj):
    """Settings for a step's --params; sorted so Snakemake's params trigger sees real changes only."""
    return json.dumps(obj, sort_keys=True)


def protocol(dataset):
    return resolve_protocol(CFG, dataset)


def folds_of(dataset):
    return range(n_folds(CFG, dataset))


def first_stage_name(dataset):
    return protocol(dataset)["first_stage"]


def mirror_arg():
    mirror = CFG["data"].get("mirror")
    return f"--mirror {mirror}" if mirror else ""


def train_params(w):
    # Only what changes the trained model: inference settings and names must not retrain.
    cell = resolve_cell(CFG, w.dataset, w.variant, int(w.max_length))
    training = {k: v for k, v in cell["training"].items() if k not in ("eval_batch_size",)}
    return as_json({**cell, "training": training, "protocol": None, "retrieval": None, "study": None})


def rerank_params(w):
    cell = resolve_cell(CFG, w.dataset, w.variant, int(w.max_length))
    return as_json({k: cell[k] for k in ("dataset", "variant", "max_length", "training")})


def cell_params(dataset, cell):
    """The full, resolved settings of a cell (what MLflow records)."""
    if "-L" in cell:
        variant, max_length = cell.rsplit("-L", 1)
        return resolve_cell(CFG, dataset, variant, int(max_length))
    return first_stage_cell(CFG, dataset)


def all_cells():
    """(dataset, cell id, variant, max_length) of every summary row: first stages first."""
    rows = []
    for dataset in CFG["datasets"]:
        rows.append((dataset, first_stage_name(dataset), first_stage_name(dataset), None))
    for dataset, variant, max_length in grid(CFG):
        rows.append((dataset, cell_id(variant, max_length), variant, max_length))
    return rows


def threads_for_models():
    return min(4, workflow.cores) if workflow.cores else 1
