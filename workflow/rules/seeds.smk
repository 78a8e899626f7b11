# The seed axis (`seeds: [..]` in params.yaml): each re-ranker cell is trained, re-ranked,
# evaluated, aggregated over folds and tracked once per seed under <cell>/seed<s>/ (the rules
# above, with the seed in the {seed_dir} / {cell} wildcards); these two rules combine the seeds.
# Without a seed axis they do not exist and nothing changes.


if SEEDS:

    localrules:
        aggregate_seeds,
        track_seeds,

    rule aggregate_seeds:
        input:
            metrics=PLAN.seed_files("results/cells/{dataset}/{cell}/seed{seed}/metrics.json"),
        output:
            metrics=f"results/cells/{{dataset}}/{CELL}/metrics.json",
        log:
            f"results/logs/aggregate_seeds/{{dataset}}/{CELL}.log",
        message:
            "Aggregating {wildcards.dataset}/{wildcards.variant}-L{wildcards.max_length} over seeds"
        params:
            seeds=" ".join(str(s) for s in SEEDS),
        conda:
            CONDA_ENV
        shell:
            "reranklab aggregate-seeds --metrics {input.metrics} --seeds {params.seeds} --out {output.metrics} > {log} 2>&1"

    rule track_seeds:
        input:
            tracked=PLAN.seed_files("results/cells/{dataset}/{cell}/seed{seed}/mlflow.json"),
            metrics=f"results/cells/{{dataset}}/{CELL}/metrics.json",
        output:
            f"results/cells/{{dataset}}/{CELL}/mlflow.json",
        log:
            f"results/logs/track_seeds/{{dataset}}/{CELL}.log",
        message:
            "Logging {wildcards.dataset}/{wildcards.variant}-L{wildcards.max_length} to MLflow (a run per cell, its seeds nested)"
        params:
            spec=PLAN.seeds_record_spec,
            uri=CFG["mlflow"]["tracking_uri"],
            experiment=PLAN.experiment,
        conda:
            CONDA_ENV
        shell:
            "reranklab track-seeds --tracked {input.tracked} --metrics {input.metrics} --tracking-uri {params.uri:q}"
            " --experiment {params.experiment:q} --out {output} --spec {params.spec:q} > {log} 2>&1"
