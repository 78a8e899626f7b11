# reranklab: BERT passage re-ranking studies, from raw data to fold-aggregated, tracked results.
#
#   snakemake --cores 8 --resources gpu=1                                   # the study in params.yaml
#   snakemake --cores 2 --resources gpu=1 --configfile config/quickstart.yaml  # offline CPU quick start
#
# Every rule is thin: it calls one `reranklab <step>`; the logic lives in src/reranklab/.

from snakemake.utils import min_version

min_version("9.0")


configfile: "params.yaml"


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


# Under a cluster executor (workflow/profiles/slurm) these light jobs run on the submitting host:
# downloads need the internet, which compute nodes often lack; the others take seconds
# (rules/seeds.smk adds its two).
localrules:
    download,
    baseline,
    evaluate,
    aggregate,
    track,
    summarize,


rule all:
    default_target: True
    input:
        SUMMARY,
        "results/regression.md",
