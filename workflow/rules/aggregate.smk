# A cell over its folds: the folds' runs concatenated and scored, then logged to MLflow.


rule aggregate:
    input:
        runs=fold_files("results/runs/{dataset}/{cell}/fold{fold}.run"),
        metrics=fold_files("results/metrics/{dataset}/{cell}/fold{fold}.json"),
        qrels="results/data/{dataset}/qrels.txt",
    output:
        run="results/cells/{dataset}/{cell}/run.txt",
        metrics="results/cells/{dataset}/{cell}/metrics.json",
    log:
        "results/logs/aggregate/{dataset}/{cell}.log",
    message:
        "Aggregating the folds of {wildcards.dataset}/{wildcards.cell}"
    params:
        settings=lambda w: scoring_params(w.dataset),
    conda:
        CONDA_ENV
    shell:
        "reranklab aggregate --runs {input.runs} --metrics {input.metrics} --qrels {input.qrels}"
        " --out-run {output.run} --out-metrics {output.metrics} --params {params.settings:q} > {log} 2>&1"


rule track:
    input:
        runs=fold_files("results/runs/{dataset}/{cell}/fold{fold}.run"),
        metrics=fold_files("results/metrics/{dataset}/{cell}/fold{fold}.json"),
        cell_run="results/cells/{dataset}/{cell}/run.txt",
        cell_metrics="results/cells/{dataset}/{cell}/metrics.json",
        models=lambda w: [p.rsplit("/", 1)[0] for p in train_stats(w)],
    output:
        "results/cells/{dataset}/{cell}/mlflow.json",
    log:
        "results/logs/track/{dataset}/{cell}.log",
    message:
        "Logging {wildcards.dataset}/{wildcards.cell} and its folds to MLflow"
    params:
        settings=lambda w: as_json(cell_params(w.dataset, w.cell)),
        stats=lambda w: " ".join(train_stats(w)),
        uri=CFG["mlflow"]["tracking_uri"],
        experiment=CFG["mlflow"]["experiment"] or CFG["study"],
    conda:
        CONDA_ENV
    shell:
        "reranklab track --runs {input.runs} --metrics {input.metrics} --train-stats {params.stats}"
        " --cell-run {input.cell_run} --cell-metrics {input.cell_metrics} --tracking-uri {params.uri:q}"
        " --experiment {params.experiment:q} --out {output} --params {params.settings:q} > {log} 2>&1"


onsuccess:
    print_tracking_link()
