# The first stage: the BM25 index of a corpus and each query's candidates (BM25 top-k or the pool).


rule index:
    input:
        "results/data/{dataset}/corpus.parquet",
    output:
        directory("results/index/{dataset}/bm25"),
    log:
        "results/logs/index/{dataset}.log",
    message:
        "Building the BM25 index of {wildcards.dataset}"
    threads: 1
    params:
        spec=PLAN.index_spec,
    conda:
        CONDA_ENV
    shell:
        "reranklab index --corpus {input} --out-dir {output} --threads {threads} --spec {params.spec:q} > {log} 2>&1"


rule retrieve:
    input:
        queries="results/data/{dataset}/queries.tsv",
        qrels="results/data/{dataset}/qrels.txt",
        pool="results/data/{dataset}/pool.run",
        index=PLAN.index_for,
    output:
        run="results/first_stage/{dataset}/candidates.run",
        record="results/first_stage/{dataset}/first_stage.json",
    log:
        "results/logs/retrieve/{dataset}.log",
    message:
        "First stage of {wildcards.dataset}: candidates per query"
    threads: PLAN.threads_for_retrieval()
    params:
        spec=PLAN.retrieve_spec,
        index=lambda w, input: f"--index-dir {input.index}" if input.index else "",
    conda:
        CONDA_ENV
    shell:
        "reranklab retrieve --queries {input.queries} --qrels {input.qrels} --pool {input.pool}"
        " {params.index} --out {output.run} --out-record {output.record} --threads {threads}"
        " --spec {params.spec:q} > {log} 2>&1"


rule first_stage:
    input:
        expand("results/first_stage/{dataset}/candidates.run", dataset=PLAN.datasets),
