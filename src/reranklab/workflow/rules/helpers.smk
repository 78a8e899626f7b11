# The helpers of single rules, by step: their input functions, the settings each passes to its
# step (--params) and its run options. Kept out of the rule files, which hold only rules.
import shlex

from reranklab.config import resolve_variant
from reranklab.errors import ConfigError
from reranklab.training.validation import check_measure, setting_key, study_dev_fraction, validation_settings

# -- first stage (rules/first_stage.smk) --------------------------------------------------------


def retrieval_settings():
    # Only the chosen backend's settings, so changing the other's reruns nothing.
    r = CFG["retrieval"]
    return {k: v for k, v in r.items() if k != "elasticsearch" or r["backend"] == "elasticsearch"}


def retrieve_settings(w):
    p = protocol(w.dataset)
    keys = ("first_stage", "depth", "inject_relevant", "relevance_threshold")
    settings = {"protocol": {k: p[k] for k in keys}}
    if p["first_stage"] == "bm25":
        settings["retrieval"] = retrieval_settings()
    return as_json(settings)


def threads_for_retrieval():
    # bm25s scores queries on all the cores it is given (its numba backend); Snakemake caps
    # a job's threads at --cores, so ask for them all.
    try:
        cores = workflow.cores
    except Exception:  # WorkflowError: a cluster executor has no --cores; its profile's set-threads decides
        return 8
    return cores or 1


# -- split (rules/split.smk) ----------------------------------------------------------------------


def split_settings(w):
    settings = {"protocol": {k: protocol(w.dataset)[k] for k in ("split", "folds")}, "seed": CFG["seed"]}
    # training.validation.dev_fraction: dev-less folds hold out part of their training queries.
    # Only when set: a study without it keeps its split job's params (nothing re-runs).
    fraction = study_dev_fraction(CFG, CFG["grid"]["variant"])
    if fraction:
        settings["dev_fraction"] = fraction
    return as_json(settings)


# -- encode (rules/encode.smk): frozen-encoder features of the lite variants ----------------------
# `train` and `rerank` of those variants read this cache (see cache_for); for every other
# variant they do not depend on it.


def cache_dir(w):
    return cell_of(w).path("cache", f"fold{w.fold}")


def cache_for(w):
    """The fold's frozen-feature cache when the variant (an alias: its base) reads one, else nothing."""
    return [cache_dir(w)] if resolve_variant(CFG, w.variant).spec.needs_cache else []


def encode_params(w):
    # Only what changes the features (and how they are computed): encoder, max length, the head's fields.
    resolved = resolve_variant(CFG, w.variant)
    keep = ("encoder", "device", "eval_batch_size", "threads")
    return as_json({**resolved.cell_names, "max_length": int(w.max_length), "training": {k: resolved.training[k] for k in keep}})


# -- train (rules/train.smk) ----------------------------------------------------------------------


def examples_for(w):
    kind = resolve_variant(CFG, w.variant).spec.example_kind
    return f"results/samples/{w.dataset}{w.seed_dir}/fold{w.fold}/{'pointwise' if kind == 'pointwise' else 'triplets'}.parquet"


def validates(w):
    """Whether the job selects its epoch on dev (training.validation on for the cell); checks
    here, before any job runs, what can be checked without the folds."""
    settings = validation_settings(resolve_cell(CFG, w.dataset, w.variant, int(w.max_length))["training"])
    if settings is None:
        return False
    check_measure(settings, resolve_scoring(CFG, w.dataset), setting_key(CFG, w.variant, "measure"))
    if protocol(w.dataset)["split"] == "cv" and not study_dev_fraction(CFG):
        raise ConfigError(
            f"{w.dataset} is split by cross-validation, whose folds have no dev queries, but {w.variant} selects its epoch"
            f" on dev ({setting_key(CFG, w.variant, 'measure')}: {settings.measure}, on in its paper preset or your config):"
            f" set training.validation.dev_fraction (e.g. 0.1) to hold out part of each training fold, or turn it off"
            f" with variants.{w.variant}.validation: null"
        )
    return True


def dev_inputs(w):
    """What scoring the fold's dev queries needs, for a job that validates; else nothing (no new
    inputs, so the jobs of a study without validation keep their inputs and do not re-run)."""
    if not validates(w):
        return []
    return [f"results/first_stage/{w.dataset}/candidates.run", f"results/data/{w.dataset}/qrels.txt", f"results/splits/{w.dataset}/folds.json"]


def train_settings(w):
    # train_params, plus the dataset's scoring protocol when the job validates (a dev MAP is
    # computed as the test MAP is); without validation the params are train_params' exactly.
    settings = json.loads(train_params(w))
    if validates(w):
        settings["scoring"] = resolve_scoring(CFG, w.dataset).as_dict()
    return as_json(settings)


def train_options(w):
    # Run options (not params): the checkpoint options and, for a job that validates, the paths
    # of its dev inputs (already its inputs) and the inference batch. Passed here rather than in
    # the shell command, whose text is the rule's code: a new placeholder would re-run every job.
    text = str(checkpoint_options(w))
    dev = dev_inputs(w)
    if dev:
        candidates, qrels, folds = dev
        batch = int(resolve_cell(CFG, w.dataset, w.variant, int(w.max_length))["training"]["eval_batch_size"])
        text += f" --candidates {candidates} --qrels {qrels} --folds {folds} --fold {w.fold} --eval-batch-size {batch}"
    text += tracking_options(w)  # rules/train.smk: the fold's live MLflow run
    text += f" {gpu_options(w)}"
    return RunOptions(text)


# -- aggregate, track (rules/aggregate.smk) ------------------------------------------------------


def fold_files(pattern):
    return lambda w: [pattern.format(dataset=w.dataset, cell=w.cell, fold=k) for k in folds_of(w.dataset)]


def train_stats(w):
    cell = Cell.parse(w.dataset, w.cell)
    if cell.is_first_stage:
        return []
    return [cell.path("models", f"fold{k}", "train_stats.json") for k in folds_of(w.dataset)]


# -- the seed axis (rules/seeds.smk) --------------------------------------------------------------


def seed_files(pattern):
    return lambda w: [pattern.format(dataset=w.dataset, cell=cell_of(w).name, seed=s) for s in SEEDS]


# -- summarize, regress (rules/report.smk) -------------------------------------------------------


def grading_settings(dataset, variant, max_length):
    """What `reranklab regress` matches a summary row by: the study (and the paper it replicates,
    where the config names one), and a re-ranker's encoder and epochs."""
    paper = (CFG.get("paper") or {}).get("id")
    study = {"study": CFG["study"], **({"paper": paper} if paper else {})}
    if max_length is None:
        return study
    training = resolve_cell(CFG, dataset, variant, max_length)["training"]
    return {**study, "encoder": training["encoder"], "epochs": training["epochs"]}


def summary_settings():
    cells = [
        {
            "dataset": dataset,
            "variant": variant,
            "max_length": max_length,
            "metrics_path": f"results/cells/{dataset}/{cell}/metrics.json",
            **grading_settings(dataset, variant, max_length),
        }
        for dataset, cell, variant, max_length in all_cells()
    ]
    return as_json(
        {"cells": cells, "title": CFG["study"], "significance": CFG["report"]["significance"]}
    )


# The matrix files that exist: a workflow run without studies/ still runs (and grades nothing).
REGRESSION_MATRIX = [
    path
    for path in ("studies/published.yaml", "studies/external.yaml", "studies/expected.yaml")
    if os.path.exists(path)
]
# The papers' findings, graded beside the numbers (none: the numbers alone).
REGRESSION_CLAIMS = [path for path in ("studies/claims.yaml",) if os.path.exists(path)]


def tracking_options(w):
    """The options with which `reranklab train` logs to its fold's MLflow run while it trains
    (mlflow.log_training), for train_options; none when it is off: training then never touches
    MLflow, and the track rule makes the fold's run after the fact."""
    if not CFG["mlflow"].get("log_training", True):
        return ""
    options = {
        "--tracking-uri": CFG["mlflow"]["tracking_uri"],
        "--experiment": CFG["mlflow"]["experiment"] or CFG["study"],
        "--study": CFG["study"],
        "--cell-key": cell_of(w).key,  # what the track rule's cell_key gives (seed included)
    }
    text = "".join(f" {name} {shlex.quote(str(value))}" for name, value in options.items())
    # A job that validates has --fold already (its dev inputs).
    return text if dev_inputs(w) else f"{text} --fold {w.fold}"


def print_tracking_link():
    """At the end of a study: where its MLflow runs are (the runs table, in the UI's
    machine-learning layout: reranklab.tracking.ui), from a tracked cell's mlflow.json."""
    from reranklab.tracking.ui import runs_link, ui_command

    for dataset, cell, _, _ in all_cells():
        path = Path(f"results/cells/{dataset}/{cell}/mlflow.json")
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
            link = runs_link(record["tracking_uri"], str(record["experiment_id"]))
        except (OSError, ValueError, KeyError, TypeError):
            continue  # not tracked (yet), or not a record of track
        command = ui_command(record["tracking_uri"])
        print(f"MLflow: {command}, then open {link}" if command else f"MLflow: {link}")
        return


# -- analyze (rules/analyze.smk) ---------------------------------------------------------------


def report_item(name, caption, subcategory, item):
    """A dataset's figure or table in the HTML report: its category is the dataset."""
    return report(
        f"results/report/{{dataset}}/{name}",
        caption=f"../report/{caption}.rst",
        category="{dataset}",
        subcategory=subcategory,
        labels={"item": item},
    )


def analysis_reference():
    """`--reference KEY` when report.significance.reference names a cell, else nothing."""
    reference = CFG["report"]["significance"]["reference"]
    return f"--reference {reference}" if reference else ""


def analysis_files():
    """Every figure and table of the analyses, for each dataset of the study."""
    from reranklab.report.analyses.run import OUTPUTS

    return [f"results/report/{d}/{name}" for d in CFG["datasets"] for name in OUTPUTS]


def analysis_targets():
    """The report's pages, figures and tables, and their record in MLflow."""
    pages = [f"results/report/{page}.html" for page in ("summary", "significance", "regression")]
    plots = ["results/plots/length_sweep.csv", "results/plots/query_delta.csv"]
    return pages + analysis_files() + plots + ["results/report/mlflow.json"]
