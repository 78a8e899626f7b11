# A cell over its folds: the folds' runs concatenated and scored, then logged to MLflow.


rule aggregate:
    input:
        runs=PLAN.fold_files("results/runs/{dataset}/{cell}/fold{fold}.run"),
        metrics=PLAN.fold_files("results/metrics/{dataset}/{cell}/fold{fold}.json"),
        qrels="results/data/{dataset}/qrels.txt",
    output:
        run="results/cells/{dataset}/{cell}/run.txt",
        metrics="results/cells/{dataset}/{cell}/metrics.json",
    log:
        "results/logs/aggregate/{dataset}/{cell}.log",
    message:
        "Aggregating the folds of {wildcards.dataset}/{wildcards.cell}"
    params:
        spec=PLAN.scoring_spec,
    conda:
        CONDA_ENV
    shell:
        "reranklab aggregate --runs {input.runs} --metrics {input.metrics} --qrels {input.qrels}"
        " --out-run {output.run} --out-metrics {output.metrics} --spec {params.spec:q} > {log} 2>&1"


rule track:
    input:
        runs=PLAN.fold_files("results/runs/{dataset}/{cell}/fold{fold}.run"),
        metrics=PLAN.fold_files("results/metrics/{dataset}/{cell}/fold{fold}.json"),
        cell_run="results/cells/{dataset}/{cell}/run.txt",
        cell_metrics="results/cells/{dataset}/{cell}/metrics.json",
        models=lambda w: [p.rsplit("/", 1)[0] for p in PLAN.train_stats(w)],
    output:
        "results/cells/{dataset}/{cell}/mlflow.json",
    log:
        "results/logs/track/{dataset}/{cell}.log",
    message:
        "Logging {wildcards.dataset}/{wildcards.cell} and its folds to MLflow"
    params:
        spec=PLAN.record_spec,
        stats=lambda w: " ".join(PLAN.train_stats(w)),
        uri=CFG["mlflow"]["tracking_uri"],
        experiment=PLAN.experiment,
    conda:
        CONDA_ENV
    shell:
        "reranklab track --runs {input.runs} --metrics {input.metrics} --train-stats {params.stats}"
        " --cell-run {input.cell_run} --cell-metrics {input.cell_metrics} --tracking-uri {params.uri:q}"
        " --experiment {params.experiment:q} --out {output} --spec {params.spec:q} > {log} 2>&1"


onsuccess:
    # At the end of a study: where its MLflow runs are (the UI's runs table).
    link = PLAN.tracking_link()
    if link:
        print(link)
