rule download:
    output:
        "results/data/{dataset}/raw/manifest.json",
    log:
        "results/logs/download/{dataset}.log",
    message:
        "Fetching and verifying the raw files of {wildcards.dataset}"
    params:
        mirror=PLAN.mirror_option(),
        # Only the files the options use are fetched (TrecQA's `train` picks TRAIN or TRAIN-ALL).
        spec=PLAN.dataset_spec,
    conda:
        CONDA_ENV
    shell:
        "reranklab download --dataset {wildcards.dataset} --out-dir results/data/{wildcards.dataset}/raw"
        " {params.mirror} --spec {params.spec:q} > {log} 2>&1"
