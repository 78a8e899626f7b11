from reranklab.models.registry import get_variant


def examples_for(w):
    kind = get_variant(w.variant).example_kind
    return f"results/samples/{w.dataset}{w.seed_dir}/fold{w.fold}/{'pointwise' if kind == 'pointwise' else 'triplets'}.parquet"


rule train:
    input:
        examples=examples_for,
        queries="results/data/{dataset}/queries.tsv",
        corpus="results/data/{dataset}/corpus.parquet",
        cache=cache_for,
    output:
        directory("results/models/{dataset}/{variant}-L{max_length}{seed_dir}/fold{fold}"),
    log:
        "results/logs/train/{dataset}/{variant}-L{max_length}{seed_dir}/fold{fold}.log",
    message:
        "Fine-tuning {wildcards.variant} (max length {wildcards.max_length}) on {wildcards.dataset} fold {wildcards.fold}{wildcards.seed_dir}"
    threads: threads_for_models()
    resources:
        gpu=gpus_of,
    params:
        settings=train_params,
        checkpointing=checkpoint_options,
    conda:
        CONDA_ENV
    shell:
        "reranklab train --examples {input.examples} --queries {input.queries} --corpus {input.corpus}"
        " --out-dir {output} --threads {threads} {params.checkpointing} --frozen-features {input.cache}"
        " --params {params.settings:q} > {log} 2>&1"
