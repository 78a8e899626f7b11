# reranklab: BERT passage re-ranking studies, from raw data to fold-aggregated, tracked results.
#
#   snakemake --cores 8 --resources gpu=1                                   # the study in params.yaml
#   snakemake --cores 2 --resources gpu=1 --configfile config/quickstart.yaml  # offline CPU quick start
#
# The rules ship inside the package (src/reranklab/workflow/): this study folder holds only its
# configuration (params.yaml, config/), and the workflow that runs is the one of the installed
# reranklab whose steps its rules call. `reranklab init DIR` writes this file into a new study.

from reranklab.workflow import SNAKEFILE


configfile: "params.yaml"


include: str(SNAKEFILE)


rule all:
    default_target: True
    input:
        STUDY_TARGETS,
