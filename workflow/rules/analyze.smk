# The seed papers' analyses of each dataset of the study (reranklab.report.analyses): figures
# (PNG) and tables (CSV for programs and DVC plots, HTML for the report), shown by
# `snakemake --report results/report.html` with the captions of report/*.rst.


rule analyze:
    input:
        summary="results/summary.json",
        significance="results/significance.csv",
        queries="results/data/{dataset}/queries.tsv",
    output:
        methods=report_item("methods.png", "methods", "Methods compared", "MAP and MRR per cell (figure)"),
        methods_html=report_item("methods.html", "methods", "Methods compared", "MAP and MRR per cell (table)"),
        # Only the analyses with something to show for this grid (PLAN.analysis_outputs): no
        # sweep of one max length, no chunking table without a chunked cell beside BERTlets.
        **(
            {
                "sweep": report_item("length_sweep.png", "length_sweep", "Max length", "MAP and MRR by max length (figure)"),
                "sweep_html": report_item("length_sweep.html", "length_sweep", "Max length", "MAP and MRR by max length (table)"),
            }
            if "length_sweep.png" in PLAN.analysis_outputs()
            else {}
        ),
        **(
            {"chunking_html": report_item("chunking.html", "chunking", "Chunking", "chunked against BERTlets (table)")}
            if "chunking.html" in PLAN.analysis_outputs()
            else {}
        ),
        delta=report_item("query_delta.png", "query_delta", "Per query", "per-query ΔMRR, sorted (figure)"),
        delta_html=report_item("query_delta.html", "query_delta", "Per query", "per-query ΔMRR, sorted (table)"),
        length_html=report_item("by_query_length.html", "by_query_length", "Per query", "MRR by query length (table)"),
        type_html=report_item("by_query_type.html", "by_query_type", "Per query", "MRR by first question word (table)"),
        ap=report_item("ap_distribution.png", "ap_distribution", "Per query", "per-query AP per row (figure)"),
        speed_html=report_item("training_speed.html", "training_speed", "Training", "batches/s per epoch (table)"),
        curves=report_item("learning_curves.png", "learning_curves", "Training", "loss and dev measure (figure)"),
        curves_html=report_item("learning_curves.html", "learning_curves", "Training", "loss and dev measure (table)"),
        tables=[f"results/report/{{dataset}}/{name}" for name in PLAN.analysis_outputs() if name.endswith(".csv")],
    log:
        "results/logs/analyze/{dataset}.log",
    message:
        "The papers' analyses of {wildcards.dataset} that apply to its grid: methods, max-length sweep, chunking, per-query Δ, speed, learning curves"
    params:
        out_dir=lambda w: f"results/report/{w.dataset}",
        reference=PLAN.analysis_reference(),
    localrule: True
    conda:
        CONDA_ENV
    shell:
        "reranklab analyze --summary {input.summary} --dataset {wildcards.dataset:q}"
        " --out-dir {params.out_dir:q} {params.reference} > {log} 2>&1"


rule report_page:
    input:
        "results/{page}.md",
    output:
        report(
            "results/report/{page}.html",
            caption="../report/page.rst",
            category="Summary",
            labels={"item": "{page} (table)"},
        ),
    log:
        "results/logs/report_page/{page}.log",
    message:
        "The study's {wildcards.page} table as an HTML page for the report"
    wildcard_constraints:
        page="summary|significance|regression",
    localrule: True
    conda:
        CONDA_ENV
    shell:
        "reranklab html {input:q} {output:q} > {log} 2>&1"


rule track_report:
    input:
        tables=[*SUMMARY, *SIGNIFICANCE, "results/regression.md"],
        pages=PLAN.report_pages(),
        report=PLAN.analysis_files(),
        cells=PLAN.cell_files("mlflow.json"),
    output:
        "results/report/mlflow.json",
    log:
        "results/logs/track_report/study.log",
    message:
        "Logging the study's tables and figures to MLflow (a study run; figures and model cards on the cell runs)"
    params:
        study=CFG["study"],
        report_dirs=PLAN.report_dirs(),
        uri=CFG["mlflow"]["tracking_uri"],
        experiment=PLAN.experiment,
    localrule: True
    conda:
        CONDA_ENV
    shell:
        "reranklab track-report --study {params.study:q} --tables {input.tables} {input.pages}"
        " --report-dirs {params.report_dirs} --cells {input.cells} --tracking-uri {params.uri:q}"
        " --experiment {params.experiment:q} --out {output} > {log} 2>&1"


rule collect_plots:
    input:
        PLAN.analysis_files(),
    output:
        tables=["results/plots/length_sweep.csv", "results/plots/query_delta.csv"],
        figures=directory("results/plots/figures"),
    log:
        "results/logs/collect_plots/plots.log",
    message:
        "The study's DVC plots: every dataset's sweep and per-query tables, and its figures"
    params:
        report_dirs=PLAN.report_dirs(),
    localrule: True
    conda:
        CONDA_ENV
    shell:
        "reranklab collect-plots --report-dirs {params.report_dirs} --out-dir results/plots > {log} 2>&1"
