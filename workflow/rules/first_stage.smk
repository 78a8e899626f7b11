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
        settings=lambda w: as_json({"retrieval": retrieval_settings()}),
    conda:
        CONDA_ENV
    shell:
        "reranklab index --corpus {input} --out-dir {output} --threads {threads} --params {params.settings:q} > {log} 2>&1"


rule retrieve:
    input:
        queries="results/data/{dataset}/queries.tsv",
        qrels="results/data/{dataset}/qrels.txt",
        pool="results/data/{dataset}/pool.run",
        index=lambda w: "results/index/{dataset}/bm25" if first_stage_name(w.dataset) == "bm25" else [],
    output:
        "results/first_stage/{dataset}/candidates.run",
    log:
        "results/logs/retrieve/{dataset}.log",
    message:
        "First stage of {wildcards.dataset}: candidates per query"
    threads: threads_for_retrieval()
    params:
        settings=retrieve_settings,
        index=lambda w, input: f"--index-dir {input.index}" if input.index else "",
    conda:
        CONDA_ENV
    shell:
        "reranklab retrieve --queries {input.queries} --qrels {input.qrels} --pool {input.pool}"
        " {params.index} --out {output} --threads {threads} --params {params.settings:q} > {log} 2>&1"


rule first_stage:
    input:
        expand("results/first_stage/{dataset}/candidates.run", dataset=CFG["datasets"]),
