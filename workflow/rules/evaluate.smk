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
        "Evaluating {wildcards.dataset}/{wildcards.cell} fold {wildcards.fold} with pytrec_eval"
    params:
        settings=lambda w: as_json({"protocol": {"relevance_threshold": protocol(w.dataset)["relevance_threshold"]}}),
    conda:
        CONDA_ENV
    shell:
        "reranklab evaluate --run {input.run} --qrels {input.qrels} --folds {input.folds} --fold {wildcards.fold}"
        " --out {output} --params {params.settings:q} > {log} 2>&1"
