def retrieve_settings(w):
    p = protocol(w.dataset)
    keys = ("first_stage", "depth", "inject_relevant", "relevance_threshold")
    settings = {"protocol": {k: p[k] for k in keys}}
    if p["first_stage"] == "bm25":
        settings["retrieval"] = CFG["retrieval"]
    return as_json(settings)


rule index:
    input:
        "results/data/{dataset}/corpus.parquet",
    output:
        directory("results/index/{dataset}/bm25"),
    log:
        "results/logs/index/{dataset}.log",
    message:
        "Building the BM25 index of {wildcards.dataset}"
    params:
        settings=lambda w: as_json({"retrieval": CFG["retrieval"]}),
    conda:
        CONDA_ENV
    shell:
        "reranklab index --corpus {input} --out-dir {output} --params {params.settings:q} > {log} 2>&1"


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
    params:
        settings=retrieve_settings,
        index=lambda w, input: f"--index-dir {input.index}" if input.index else "",
    conda:
        CONDA_ENV
    shell:
        "reranklab retrieve --queries {input.queries} --qrels {input.qrels} --pool {input.pool}"
        " {params.index} --out {output} --params {params.settings:q} > {log} 2>&1"


rule first_stage:
    input:
        expand("results/first_stage/{dataset}/candidates.run", dataset=CFG["datasets"]),
