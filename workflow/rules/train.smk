import json

from reranklab.errors import ConfigError
from reranklab.models.registry import get_variant
from reranklab.training.validation import check_measure, setting_key, study_dev_fraction, validation_settings


def examples_for(w):
    kind = get_variant(w.variant).example_kind
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
    return RunOptions(text)


rule train:
    input:
        examples=examples_for,
        queries="results/data/{dataset}/queries.tsv",
        corpus="results/data/{dataset}/corpus.parquet",
        cache=cache_for,
        dev=dev_inputs,
    output:
        directory("results/models/{dataset}/" + CELL_DIR + "/fold{fold}"),
    log:
        "results/logs/train/{dataset}/" + CELL_DIR + "/fold{fold}.log",
    message:
        "Fine-tuning {wildcards.variant} (max length {wildcards.max_length}) on {wildcards.dataset} fold {wildcards.fold}{wildcards.seed_dir}"
    threads: threads_for_models()
    resources:
        gpu=gpus_of,
    params:
        settings=train_settings,
        checkpointing=train_options,
    conda:
        CONDA_ENV
    shell:
        "reranklab train --examples {input.examples} --queries {input.queries} --corpus {input.corpus}"
        " --out-dir {output} --threads {threads} {params.checkpointing} --frozen-features {input.cache}"
        " --params {params.settings:q} > {log} 2>&1"
