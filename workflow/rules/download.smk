rule download:
    output:
        "results/data/{dataset}/raw/manifest.json",
    log:
        "results/logs/download/{dataset}.log",
    message:
        "Fetching and verifying the raw files of {wildcards.dataset}"
    params:
        mirror=mirror_arg(),
    conda:
        CONDA_ENV
    shell:
        "reranklab download --dataset {wildcards.dataset} --out-dir results/data/{wildcards.dataset}/raw"
        " {params.mirror} > {log} 2>&1"
