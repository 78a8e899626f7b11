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
    resolve_scoring,
    validate_config,
    with_defaults,
)
from reranklab.seeds import seed_from_dir, split_cell, study_seeds

_sources = [str(f) for f in getattr(workflow, "configfiles", [])] or ["params.yaml"]
validate_config(config, source=" + ".join(_sources))
CFG = with_defaults(config)
CONDA_ENV = "../../envs/reranklab.yaml"
SUMMARY = ["results/summary.csv", "results/summary.md", "results/summary.json"]
# The seed axis (`seeds`): per-seed paths get a `/seed<s>` part (the {seed_dir} wildcard);
# without it they are unchanged. With it a re-ranker cell wildcard always names its seed, so
# results/cells/<ds>/<cell>/metrics.json is made only by aggregate_seeds (rules/seeds.smk).
SEEDS = study_seeds(CFG)
# How often a training job checkpoints changes nothing it makes: no job re-runs when they change.
CHECKPOINT_KEYS = ("checkpoint_every", "keep_checkpoints", "delete_checkpoints")
CELL_PATTERN = r"[a-z][a-z0-9_]*(-L\d+/seed\d+)?" if SEEDS else r"[a-z][a-z0-9_]*(-L\d+)?"


wildcard_constraints:
    dataset=r"[A-Za-z0-9][A-Za-z0-9_.]*(-[A-Za-z0-9_.]+)*",
    variant=r"[a-z][a-z0-9_]*",
    max_length=r"\d+",
    fold=r"\d+",
    first_stage=r"bm25|pool",
    cell=CELL_PATTERN,
    seed_dir=r"(/seed\d+)?",


def as_json(obj):
    """Settings for a step's --params; sorted so Snakemake's params trigger sees real changes only."""
    return json.dumps(obj, sort_keys=True)


def protocol(dataset):
    return resolve_protocol(CFG, dataset)


def scoring_params(dataset):
    # The whole definition, not only its name: a changed scoring re-runs evaluate and aggregate.
    return as_json({"scoring": resolve_scoring(CFG, dataset).as_dict()})


def folds_of(dataset):
    return range(n_folds(CFG, dataset))


def first_stage_name(dataset):
    return protocol(dataset)["first_stage"]


def mirror_arg():
    mirror = CFG["data"].get("mirror")
    return f"--mirror {mirror}" if mirror else ""


def seed_of(w):
    """The seed of a job: its {seed_dir} wildcard's, else the study seed."""
    return seed_from_dir(getattr(w, "seed_dir", ""), CFG["seed"])


def train_params(w):
    # Only what changes the trained model: inference settings, checkpointing and names must not retrain.
    cell = resolve_cell(CFG, w.dataset, w.variant, int(w.max_length))
    training = {k: v for k, v in cell["training"].items() if k not in ("eval_batch_size", *CHECKPOINT_KEYS)}
    return as_json({**cell, "seed": seed_of(w), "training": training, "protocol": None, "retrieval": None, "study": None})


class RunOptions:
    """Command-line options that change how a job runs, not what it makes. Snakemake's params
    trigger skips values that are not plain data, so changing these re-runs nothing."""

    def __init__(self, text):
        self.text = text

    def __str__(self):
        return self.text


def checkpoint_options(w):
    # The directory is outside the rule's outputs: Snakemake deletes those of an incomplete
    # job before running it again, and the re-run must find its checkpoints.
    training = resolve_cell(CFG, w.dataset, w.variant, int(w.max_length))["training"]
    directory = f"results/checkpoints/{w.dataset}/{w.variant}-L{w.max_length}{w.seed_dir}/fold{w.fold}"
    return RunOptions(
        f"--checkpoint-dir {directory} --checkpoint-every {int(training['checkpoint_every'])}"
        f" --keep-checkpoints {int(training['keep_checkpoints'])} --delete-checkpoints {int(bool(training['delete_checkpoints']))}"
    )


def gpus_of(w):
    """GPUs of one training job: training.gpus with distributed ddp, else 1."""
    training = resolve_cell(CFG, w.dataset, w.variant, int(w.max_length))["training"]
    return int(training.get("gpus") or 1) if training.get("distributed") == "ddp" else 1


def rerank_params(w):
    cell = resolve_cell(CFG, w.dataset, w.variant, int(w.max_length))
    training = {k: v for k, v in cell["training"].items() if k not in CHECKPOINT_KEYS}
    return as_json({**{k: cell[k] for k in ("dataset", "variant", "max_length")}, "training": training})


def cell_params(dataset, cell):
    """The full, resolved settings of a cell (what MLflow records)."""
    variant, max_length, seed = split_cell(cell)
    if max_length is not None:
        resolved = resolve_cell(CFG, dataset, variant, max_length)
        # A seed of the seed axis (or, seed None, a multi-seed cell as a whole).
        return {**resolved, "seed": resolved["seed"] if seed is None else seed, "seeds": SEEDS} if SEEDS else resolved
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
    try:
        cores = workflow.cores
    except Exception:  # WorkflowError: a cluster executor has no --cores; its profile's set-threads decides
        return 4
    return min(4, cores) if cores else 1
