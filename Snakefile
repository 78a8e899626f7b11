# reranklab: BERT passage re-ranking studies, from raw data to fold-aggregated, tracked results.
#
#   snakemake --cores 8 --resources gpu=1                                      # the study in params.yaml
#   snakemake --cores 2 --resources gpu=1 --configfile config/quickstart.yaml  # offline CPU quick start
#
# This file is the workflow's one entry point, at the top of the repository beside params.yaml,
# dvc.yaml and envs/ (Snakemake finds it when run from here). workflow/ holds the rest:
# rules/*.smk (one file per step, thin rules that each call one `reranklab <step>`), schemas/,
# report/ (captions) and profiles/. The Python the rules need (which jobs, which settings each
# gets) is the tested module reranklab.workflow.plan; the steps' logic is the package's. The
# wheel carries this file, envs/ and workflow/ (as reranklab/_workflow/), so a study folder made
# by `reranklab init` includes the installed copy, and another workflow can use it as a module:
#
#   module reranklab:
#       snakefile: github("<owner>/reranklab", path="Snakefile", tag="<tag>")
#       config: config
#   use rule * from reranklab
#
# The configuration stays in params.yaml at the top (not config/config.yaml): DVC reads its
# params from there (dvc.yaml's `params:` lists), and `dvc params diff` compares them.

from snakemake.utils import min_version

min_version("9.0")

# Snakemake's own reader would say only "Config file is not valid JSON or YAML"; this names the
# file, line and column in one line (reranklab.workflow.refusal).
from reranklab.workflow.refusal import check_workflow_configfile, refused

with refused():
    check_workflow_configfile("params.yaml", skipped=workflow.modifier.skip_configfile)


configfile: "params.yaml"


report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"
include: "workflow/rules/download.smk"
include: "workflow/rules/prepare.smk"
include: "workflow/rules/first_stage.smk"
include: "workflow/rules/split.smk"
include: "workflow/rules/sample.smk"
include: "workflow/rules/encode.smk"
include: "workflow/rules/train.smk"
include: "workflow/rules/rerank.smk"
include: "workflow/rules/evaluate.smk"
include: "workflow/rules/aggregate.smk"
include: "workflow/rules/seeds.smk"
include: "workflow/rules/report.smk"
include: "workflow/rules/analyze.smk"


# Under a cluster executor (workflow/profiles/slurm) these light jobs run on the submitting host:
# downloads need the internet, which compute nodes often lack; the others take seconds
# (workflow/rules/seeds.smk adds its two).
localrules:
    download,
    baseline,
    evaluate,
    aggregate,
    track,
    summarize,


# What a study makes: the summary, the significance tests, the regression grades and the
# report's pages, figures and tables.
STUDY_TARGETS = PLAN.study_targets()


rule all:
    default_target: True
    input:
        STUDY_TARGETS,


onstart:
    # Snakemake's SIGTERM handler takes its scheduler's lock in the main thread, which may hold
    # it already (a failing job being cleaned up): it then hangs for good. SLURM's walltime and
    # scancel send SIGTERM. Run the handler in a thread (reranklab.workflow.signals).
    from reranklab.workflow.signals import defer_sigterm

    defer_sigterm()


onerror:
    # Each failed job's one-line error (the file, line or key at fault) where a person looks:
    # the terminal, not only the job's log (reranklab.workflow.failures).
    import sys

    from reranklab.workflow.failures import failed_job_lines

    for line in failed_job_lines(log):
        print(f"reranklab: {line}", file=sys.stderr)
