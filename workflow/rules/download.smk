rule download:
    output:
        "results/data/{dataset}/raw/manifest.json",
    log:
        "results/logs/download/{dataset}.log",
    message:
        "Fetching and verifying the raw files of {wildcards.dataset}"
    params:
        mirror=mirror_arg(),
        # Only the files the options use are fetched (TrecQA's `train` picks TRAIN or TRAIN-ALL).
        settings=lambda w: as_json({"options": protocol(w.dataset)["options"]}),
    conda:
        CONDA_ENV
    shell:
        "reranklab download --dataset {wildcards.dataset} --out-dir results/data/{wildcards.dataset}/raw"
        " {params.mirror} --params {params.settings:q} > {log} 2>&1"
