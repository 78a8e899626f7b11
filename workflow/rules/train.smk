# Fine-tuning one fold of a cell (settings, dev inputs and run options: rules/helpers.smk).

rule train:
    input:
        examples=examples_for,
        queries="results/data/{dataset}/queries.tsv",
        corpus="results/data/{dataset}/corpus.parquet",
        cache=cache_for,
        dev=dev_inputs,
    output:
        directory(f"results/models/{{dataset}}/{CELL_DIR}/fold{{fold}}"),
    log:
        f"results/logs/train/{{dataset}}/{CELL_DIR}/fold{{fold}}.log",
    message:
        "Fine-tuning {wildcards.variant} (max length {wildcards.max_length}) on {wildcards.dataset} fold {wildcards.fold}{wildcards.seed_dir}"
    threads: threads_for_models()
    resources:
        gpu=gpu_slots_of,
    params:
        settings=train_settings,
        checkpointing=train_options,
    conda:
        CONDA_ENV
    shell:
        "reranklab train --examples {input.examples} --queries {input.queries} --corpus {input.corpus}"
        " --out-dir {output} --threads {threads} {params.checkpointing} --frozen-features {input.cache}"
        " --params {params.settings:q} > {log} 2>&1"
