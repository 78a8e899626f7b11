rule sample:
    input:
        candidates="results/first_stage/{dataset}/candidates.run",
        qrels="results/data/{dataset}/qrels.txt",
        folds="results/splits/{dataset}/folds.json",
    output:
        pointwise="results/samples/{dataset}{seed_dir}/fold{fold}/pointwise.parquet",
        triplets="results/samples/{dataset}{seed_dir}/fold{fold}/triplets.parquet",
    log:
        "results/logs/sample/{dataset}{seed_dir}/fold{fold}.log",
    message:
        "Sampling the training examples of {wildcards.dataset} fold {wildcards.fold}"
    params:
        settings=lambda w: as_json(
            {
                "protocol": {k: protocol(w.dataset)[k] for k in ("negatives_per_positive", "relevance_threshold")},
                "seed": seed_of(w),
            }
        ),
    conda:
        CONDA_ENV
    shell:
        "reranklab sample --candidates {input.candidates} --qrels {input.qrels} --folds {input.folds}"
        " --fold {wildcards.fold} --out-pointwise {output.pointwise} --out-triplets {output.triplets}"
        " --params {params.settings:q} > {log} 2>&1"
