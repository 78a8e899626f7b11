def grading_settings(dataset, variant, max_length):
    """What `reranklab regress` matches a summary row by: the study, and a re-ranker's encoder and epochs."""
    if max_length is None:
        return {"study": CFG["study"]}
    training = resolve_cell(CFG, dataset, variant, max_length)["training"]
    return {"study": CFG["study"], "encoder": training["encoder"], "epochs": training["epochs"]}


def summary_settings():
    cells = [
        {
            "dataset": dataset,
            "variant": variant,
            "max_length": max_length,
            "metrics_path": f"results/cells/{dataset}/{cell}/metrics.json",
            **grading_settings(dataset, variant, max_length),
        }
        for dataset, cell, variant, max_length in all_cells()
    ]
    return as_json({"cells": cells, "title": CFG["study"]})


rule summarize:
    input:
        metrics=[f"results/cells/{d}/{c}/metrics.json" for d, c, _, _ in all_cells()],
        tracked=[f"results/cells/{d}/{c}/mlflow.json" for d, c, _, _ in all_cells()],
    output:
        csv="results/summary.csv",
        md="results/summary.md",
        json="results/summary.json",
    log:
        "results/logs/summarize/summary.log",
    message:
        "Writing the summary table of the study"
    params:
        settings=summary_settings(),
    conda:
        CONDA_ENV
    shell:
        "reranklab summarize --out-csv {output.csv} --out-md {output.md} --out-json {output.json}"
        " --params {params.settings:q} > {log} 2>&1"


# The matrix files that exist: a workflow copied without studies/ still runs (and grades nothing).
REGRESSION_MATRIX = [path for path in ("studies/published.yaml", "studies/expected.yaml") if os.path.exists(path)]


rule regress:
    input:
        summary="results/summary.json",
        matrix=REGRESSION_MATRIX,
    output:
        "results/regression.md",
    log:
        "results/logs/regress/regress.log",
    message:
        "Grading the study against the reproduction matrix (studies/*.yaml): OK / FAIL / NOT RUN"
    localrule: True
    conda:
        CONDA_ENV
    # --exit-zero: the report is this rule's output, a FAIL line must not stop the DAG;
    # `make regress` (and a plain `reranklab regress`) is what fails on FAIL.
    shell:
        "reranklab regress --summary {input.summary} --matrix {input.matrix} --out {output} --exit-zero > {log} 2>&1"
