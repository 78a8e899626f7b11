# Frozen-encoder features of one fold, for the variants that train only a head on them (the lite
# variants: `reranklab variants`; VariantSpec.needs_cache); see StudyPlan.cache_for.
rule encode:
    input:
        examples=PLAN.examples_for,
        candidates="results/first_stage/{dataset}/candidates.run",
        folds="results/splits/{dataset}/folds.json",
        queries="results/data/{dataset}/queries.tsv",
        corpus="results/data/{dataset}/corpus.parquet",
    output:
        directory(f"results/cache/{{dataset}}/{CELL_DIR}/fold{{fold}}"),
    log:
        f"results/logs/encode/{{dataset}}/{CELL_DIR}/fold{{fold}}.log",
    message:
        "Encoding the training pairs and test candidates of {wildcards.dataset} fold {wildcards.fold}{wildcards.seed_dir} once with the frozen encoder of {wildcards.variant}"
    threads: PLAN.threads_for_models()
    resources:
        gpu=PLAN.gpu_slots_of,
    params:
        spec=PLAN.encode_spec,
        gpu=PLAN.gpu_options,
    conda:
        CONDA_ENV
    shell:
        "reranklab encode --examples {input.examples} --candidates {input.candidates} --folds {input.folds}"
        " --fold {wildcards.fold} --queries {input.queries} --corpus {input.corpus} --out-dir {output}"
        " --threads {threads} {params.gpu} --spec {params.spec:q} > {log} 2>&1"
