rule sample:
    input:
        candidates="results/first_stage/{dataset}/candidates.run",
        qrels="results/data/{dataset}/qrels.txt",
        folds="results/splits/{dataset}/folds.json",
        first_stage="results/first_stage/{dataset}/first_stage.json",
    output:
        pointwise="results/samples/{dataset}{seed_dir}/fold{fold}/pointwise.parquet",
        triplets="results/samples/{dataset}{seed_dir}/fold{fold}/triplets.parquet",
    log:
        "results/logs/sample/{dataset}{seed_dir}/fold{fold}.log",
    message:
        "Sampling the training examples of {wildcards.dataset} fold {wildcards.fold}"
    params:
        spec=PLAN.sample_spec,
    conda:
        CONDA_ENV
    shell:
        "reranklab sample --candidates {input.candidates} --qrels {input.qrels} --folds {input.folds}"
        " --first-stage {input.first_stage}"
        " --fold {wildcards.fold} --out-pointwise {output.pointwise} --out-triplets {output.triplets}"
        " --spec {params.spec:q} > {log} 2>&1"
