rule evaluate:
    input:
        run="results/runs/{dataset}/{cell}/fold{fold}.run",
        qrels="results/data/{dataset}/qrels.txt",
        folds="results/splits/{dataset}/folds.json",
    output:
        "results/metrics/{dataset}/{cell}/fold{fold}.json",
    log:
        "results/logs/evaluate/{dataset}/{cell}/fold{fold}.log",
    message:
        "Scoring {wildcards.dataset}/{wildcards.cell} fold {wildcards.fold} under the dataset's scoring protocol"
    params:
        spec=PLAN.scoring_spec,
    conda:
        CONDA_ENV
    shell:
        "reranklab evaluate --run {input.run} --qrels {input.qrels} --folds {input.folds} --fold {wildcards.fold}"
        " --out {output} --spec {params.spec:q} > {log} 2>&1"
