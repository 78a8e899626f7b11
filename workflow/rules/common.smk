# Shared helpers: config validation, the grid, and the settings each rule passes to its step.
# (rules/helpers.smk holds the helpers of single rules; the rule files hold only rules.)
import json
import os
from pathlib import Path

from snakemake.exceptions import WorkflowError

from reranklab.config import (
    first_stage_cell,
    grid,
    n_folds,
    resolve_cell,
    resolve_protocol,
    resolve_scoring,
    snakemake_config,
    with_defaults,
)
from reranklab.data.irds import IRDS_NAME
from reranklab.seeds import seed_from_dir, study_seeds
from reranklab.settings.cell import Cell, seed_of_part
from reranklab.settings.training import NOT_MODEL_KEYS, RUN_OPTION_KEYS, training_view



def _config_files():
    """The files Snakemake merged into `config`, lowest priority first: the Snakefile's
    configfile (unless --replace-workflow-config), then the --configfile files."""
    given = [Path(f).absolute() for f in workflow.config_settings.configfiles]
    own = [Path(f) for f in workflow.configfiles if Path(f).absolute() not in given]
    return ([] if workflow.config_settings.replace_workflow_config else own) + given


# Checked file by file, then the --config values (read as YAML scalars, as in a file), then
# the merge: an error names where the wrong value is. `config` itself gets the typed values.
config.update(snakemake_config(config, _config_files(), workflow.config_settings.config))
CFG = with_defaults(config)
# The study folder's conda environment (a checkout's envs/; used only with --sdm conda).
CONDA_ENV = os.path.join(workflow.basedir, "envs", "reranklab.yaml")
SUMMARY = ["results/summary.csv", "results/summary.md", "results/summary.json"]
SIGNIFICANCE = ["results/significance.csv", "results/significance.md"]
# The seed axis (`seeds`): per-seed paths get a `/seed<s>` part (the {seed_dir} wildcard);
# without it they are unchanged. With it a re-ranker cell wildcard always names its seed, so
# results/cells/<ds>/<cell>/metrics.json is made only by aggregate_seeds (rules/seeds.smk).
SEEDS = study_seeds(CFG)
# A re-ranker cell's folder as wildcards ("{variant}-L{max_length}"; CELL_DIR adds the seed part).
CELL = Cell.WILDCARDS
CELL_DIR = f"{Cell.WILDCARDS}{Cell.SEED_WILDCARD}"
CELL_PATTERN = Cell.pattern(bool(SEEDS))
# Status lines of long steps (reranklab.progress) on the terminal as well as in the job's log:
# fd 3 is Snakemake's stderr, opened before the rule's own `> {log} 2>&1`. A prefix, not part
# of any rule's shell text, so no job re-runs for it (Snakemake's code trigger reads that text).
shell.prefix("set -euo pipefail; exec 3>&2; export RERANKLAB_STATUS_FD=3; ")


wildcard_constraints:
    # A registered name, or an ir_datasets id (irds:antique/test: its parts are folders).
    dataset=rf"[A-Za-z0-9][A-Za-z0-9_.]*(-[A-Za-z0-9_.]+)*|{IRDS_NAME}",
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
    return f"--config-mirror {mirror}" if mirror else ""


def seed_of(w):
    """The seed of a job: its {seed_dir} wildcard's, else the study seed."""
    return seed_from_dir(getattr(w, "seed_dir", ""), CFG["seed"])


def cell_of(w):
    """The Cell of a job's {dataset}, {variant}, {max_length} and {seed_dir} wildcards."""
    return Cell(w.dataset, w.variant, int(w.max_length), seed_of_part(getattr(w, "seed_dir", "")))


def train_params(w):
    # Only what changes the trained model (settings flagged otherwise in the model, e.g.
    # eval_batch_size and the checkpoint options, must not retrain).
    cell = resolve_cell(CFG, w.dataset, w.variant, int(w.max_length))
    training = {k: v for k, v in cell["training"].items() if k not in NOT_MODEL_KEYS}
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
    training = training_view(resolve_cell(CFG, w.dataset, w.variant, int(w.max_length))["training"])
    directory = cell_of(w).path("checkpoints", f"fold{w.fold}")
    return RunOptions(
        f"--checkpoint-dir {directory} --checkpoint-every {training.checkpoint_every}"
        f" --keep-checkpoints {training.keep_checkpoints} --delete-checkpoints {int(training.delete_checkpoints)}"
    )


def gpu_slots_of(w):
    """The `gpu` resource of a model job, in slots (training.gpu_slots per GPU): its
    training.gpu_share, else whole GPUs (training.gpus of a ddp job, else one)."""
    training = training_view(resolve_cell(CFG, w.dataset, w.variant, int(w.max_length))["training"])
    gpus = training.gpus if training.distributed == "ddp" else 1
    if training.gpu_share is None or training.distributed == "ddp":
        return gpus * training.gpu_slots
    if training.gpu_share > training.gpu_slots:
        raise WorkflowError(
            f"{w.variant}: training.gpu_share {training.gpu_share} is more than training.gpu_slots {training.gpu_slots}"
        )
    return training.gpu_share


def gpu_options(w):
    """How the job's GPU lease is taken (run options: changing them re-runs nothing)."""
    training = training_view(resolve_cell(CFG, w.dataset, w.variant, int(w.max_length))["training"])
    return RunOptions(f"--gpu-slots {training.gpu_slots} --gpu-share {training.gpu_share or 0}")


def rerank_params(w):
    cell = resolve_cell(CFG, w.dataset, w.variant, int(w.max_length))
    training = {k: v for k, v in cell["training"].items() if k not in RUN_OPTION_KEYS}
    return as_json({**{k: cell[k] for k in ("dataset", "variant", "max_length")}, "training": training})


def cell_params(dataset, cell):
    """The full, resolved settings of a cell (what MLflow records)."""
    parsed = Cell.parse(dataset, cell)
    if not parsed.is_first_stage:
        resolved = resolve_cell(CFG, dataset, parsed.variant, parsed.max_length)
        # A seed of the seed axis (or, seed None, a multi-seed cell as a whole).
        seed = resolved["seed"] if parsed.seed is None else parsed.seed
        return {**resolved, "seed": seed, "seeds": SEEDS} if SEEDS else resolved
    return first_stage_cell(CFG, dataset)


def all_cells():
    """(dataset, cell id, variant, max_length) of every summary row: first stages first."""
    rows = []
    for dataset in CFG["datasets"]:
        rows.append((dataset, first_stage_name(dataset), first_stage_name(dataset), None))
    for dataset, variant, max_length in grid(CFG):
        rows.append((dataset, Cell(dataset, variant, max_length).name, variant, max_length))
    return rows


def threads_for_models():
    try:
        cores = workflow.cores
    except Exception:  # WorkflowError: a cluster executor has no --cores; its profile's set-threads decides
        return 4
    return min(4, cores) if cores else 1
