rule rerank:
    input:
        model=f"results/models/{{dataset}}/{CELL_DIR}/fold{{fold}}",
        candidates="results/first_stage/{dataset}/candidates.run",
        folds="results/splits/{dataset}/folds.json",
        queries="results/data/{dataset}/queries.tsv",
        corpus="results/data/{dataset}/corpus.parquet",
        cache=PLAN.cache_for,
    output:
        f"results/runs/{{dataset}}/{CELL_DIR}/fold{{fold}}.run",
    log:
        f"results/logs/rerank/{{dataset}}/{CELL_DIR}/fold{{fold}}.log",
    message:
        "Re-ranking the test queries of {wildcards.dataset} fold {wildcards.fold} with {wildcards.variant}"
    threads: PLAN.threads_for_models()
    resources:
        gpu=PLAN.gpu_slots_of,
    params:
        spec=PLAN.rerank_spec,
        gpu=PLAN.gpu_options,
    conda:
        CONDA_ENV
    shell:
        "reranklab rerank --model-dir {input.model} --candidates {input.candidates} --folds {input.folds}"
        " --fold {wildcards.fold} --queries {input.queries} --corpus {input.corpus} --out {output}"
        " --threads {threads} {params.gpu} --frozen-features {input.cache} --spec {params.spec:q} > {log} 2>&1"


rule baseline:
    input:
        candidates="results/first_stage/{dataset}/candidates.run",
        folds="results/splits/{dataset}/folds.json",
    output:
        "results/runs/{dataset}/{first_stage}/fold{fold}.run",
    log:
        "results/logs/baseline/{dataset}/{first_stage}/fold{fold}.log",
    message:
        "The {wildcards.first_stage} first-stage run of {wildcards.dataset} fold {wildcards.fold} (the baseline row)"
    conda:
        CONDA_ENV
    shell:
        "reranklab baseline --candidates {input.candidates} --folds {input.folds} --fold {wildcards.fold}"
        " --tag {wildcards.first_stage} --out {output} > {log} 2>&1"
