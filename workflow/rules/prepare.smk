rule prepare:
    input:
        "results/data/{dataset}/raw/manifest.json",
    output:
        corpus="results/data/{dataset}/corpus.parquet",
        queries="results/data/{dataset}/queries.tsv",
        qrels="results/data/{dataset}/qrels.txt",
        split="results/data/{dataset}/split.json",
        pool="results/data/{dataset}/pool.run",
        stats="results/data/{dataset}/stats.json",
    log:
        "results/logs/prepare/{dataset}.log",
    message:
        "Preparing {wildcards.dataset} in canonical form (corpus, queries, qrels, split, pool)"
    params:
        spec=PLAN.dataset_spec,
    conda:
        CONDA_ENV
    shell:
        "reranklab prepare --dataset {wildcards.dataset} --raw-dir results/data/{wildcards.dataset}/raw"
        " --out-dir results/data/{wildcards.dataset} --spec {params.spec:q} > {log} 2>&1"


rule prepared:
    input:
        expand("results/data/{dataset}/stats.json", dataset=PLAN.datasets),
