# Fine-tuning one fold of a cell (its spec, dev inputs and run options: reranklab.workflow.plan).

rule train:
    input:
        examples=PLAN.examples_for,
        queries="results/data/{dataset}/queries.tsv",
        corpus="results/data/{dataset}/corpus.parquet",
        cache=PLAN.cache_for,
        dev=PLAN.dev_inputs,
    output:
        directory(f"results/models/{{dataset}}/{CELL_DIR}/fold{{fold}}"),
    log:
        f"results/logs/train/{{dataset}}/{CELL_DIR}/fold{{fold}}.log",
    message:
        "Fine-tuning {wildcards.variant} (max length {wildcards.max_length}) on {wildcards.dataset} fold {wildcards.fold}{wildcards.seed_dir}"
    threads: PLAN.threads_for_models()
    resources:
        gpu=PLAN.gpu_slots_of,
    params:
        spec=PLAN.train_spec,
        options=PLAN.train_options,
    conda:
        CONDA_ENV
    shell:
        "reranklab train --examples {input.examples} --queries {input.queries} --corpus {input.corpus}"
        " --out-dir {output} --threads {threads} {params.options} --frozen-features {input.cache}"
        " --spec {params.spec:q} > {log} 2>&1"
