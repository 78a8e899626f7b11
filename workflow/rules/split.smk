# Folds: seeded k-fold cross-validation by query, or the dataset's predefined split.


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
        spec=PLAN.split_spec,
    conda:
        CONDA_ENV
    shell:
        "reranklab split --dataset {wildcards.dataset} --qrels {input.qrels} --split-file {input.split}"
        " --out {output} --spec {params.spec:q} > {log} 2>&1"
