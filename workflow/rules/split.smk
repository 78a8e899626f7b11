from reranklab.training.validation import study_dev_fraction


def split_settings(w):
    settings = {"protocol": {k: protocol(w.dataset)[k] for k in ("split", "folds")}, "seed": CFG["seed"]}
    # training.validation.dev_fraction: dev-less folds hold out part of their training queries.
    # Only when set: a study without it keeps its split job's params (nothing re-runs).
    fraction = study_dev_fraction(CFG, CFG["grid"]["variant"])
    if fraction:
        settings["dev_fraction"] = fraction
    return as_json(settings)


rule split:
    input:
        qrels="results/data/{dataset}/qrels.txt",
        split="results/data/{dataset}/split.json",
    output:
        "results/splits/{dataset}/folds.json",
    log:
        "results/logs/split/{dataset}.log",
    message:
        "Splitting the queries of {wildcards.dataset} into folds"
    params:
        settings=split_settings,
    conda:
        CONDA_ENV
    shell:
        "reranklab split --dataset {wildcards.dataset} --qrels {input.qrels} --split-file {input.split}"
        " --out {output} --params {params.settings:q} > {log} 2>&1"
