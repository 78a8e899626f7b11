def summary_settings():
    cells = [
        {
            "dataset": dataset,
            "variant": variant,
            "max_length": max_length,
            "metrics_path": f"results/cells/{dataset}/{cell}/metrics.json",
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
