# The study's summary table, then its grade against the reproduction matrix (studies/*.yaml).


rule summarize:
    input:
        metrics=PLAN.cell_files("metrics.json"),
        tracked=PLAN.cell_files("mlflow.json"),
        first_stages=PLAN.first_stage_records(),
    output:
        csv="results/summary.csv",
        md="results/summary.md",
        json="results/summary.json",
        significance_csv="results/significance.csv",
        significance_md="results/significance.md",
    log:
        "results/logs/summarize/summary.log",
    message:
        "Writing the summary table of the study"
    params:
        spec=PLAN.summary_spec(),
    conda:
        CONDA_ENV
    shell:
        "reranklab summarize --out-csv {output.csv} --out-md {output.md} --out-json {output.json}"
        " --out-significance-csv {output.significance_csv} --out-significance-md {output.significance_md}"
        " --spec {params.spec:q} > {log} 2>&1"


rule regress:
    input:
        summary="results/summary.json",
        matrix=PLAN.matrix_files(),
        claims=PLAN.claims_files(),
    output:
        "results/regression.md",
    log:
        "results/logs/regress/regress.log",
    params:
        claims=PLAN.claims_options(),
    message:
        "Grading the study against the reproduction matrix and the papers' claims (studies/*.yaml)"
    localrule: True
    conda:
        CONDA_ENV
    # --exit-zero: the report is this rule's output, a FAIL line must not stop the DAG;
    # `make regress` (and a plain `reranklab regress`) is what fails on FAIL.
    shell:
        "reranklab regress --summary {input.summary} --matrix {input.matrix} {params.claims} --out {output} --exit-zero > {log} 2>&1"
