# Shared by the rule files - the validated config, the study's plan (reranklab.workflow.plan,
# which gives every job its spec, inputs and run options, as tested Python) and the patterns of
# the wildcards. The rule files hold only rules.
from pathlib import Path

from reranklab.config import snakemake_config, with_defaults
from reranklab.data.irds import IRDS_NAME
from reranklab.settings.cell import Cell
from reranklab.workflow.plan import SIGNIFICANCE, SUMMARY, StudyPlan
from reranklab.workflow.refusal import refused



def _config_files():
    """The files Snakemake merged into `config`, lowest priority first: the Snakefile's
    configfile (unless --replace-workflow-config), then the --configfile files."""
    given = [Path(f).absolute() for f in workflow.config_settings.configfiles]
    own = [Path(f) for f in workflow.configfiles if Path(f).absolute() not in given]
    return ([] if workflow.config_settings.replace_workflow_config else own) + given


def _cores():
    """Snakemake's --cores (0 when unset); None under a cluster executor, which has none."""
    try:
        return workflow.cores or 0
    except Exception:  # WorkflowError: its profile's set-threads decides
        return None


# Checked file by file, then the --config values (read as YAML scalars, as in a file), then
# the merge: an error names where the wrong value is, in one line (refused: no traceback).
# `config` itself gets the typed values.
with refused():
    config.update(snakemake_config(config, _config_files(), workflow.config_settings.config))
    CFG = with_defaults(config)
    PLAN = StudyPlan(CFG, cores=_cores())
# What the validate-config command checks, as the workflow loads (in the main process only: a
# cluster job's own Snakemake need not check again): a collection's missing file and an encoder
# that train could not load are one line now, before any job (not a traceback, not after download).
if workflow.is_main_process:
    from reranklab.preflight import check_encoders

    with refused():
        PLAN.check_local_files()
        check_encoders(config, [str(f) for f in _config_files()], hub_cache=False)
# The conda environment (used only with --sdm conda): envs/ at the top, named relative to the rule
# files (workflow/rules/), as Snakemake reads it.
CONDA_ENV = "../../envs/reranklab.yaml"
# The seed axis (`seeds`): per-seed paths get a `/seed<s>` part (the {seed_dir} wildcard);
# without it they are unchanged. With it a re-ranker cell wildcard always names its seed, so
# results/cells/<ds>/<cell>/metrics.json is made only by aggregate_seeds (rules/seeds.smk).
SEEDS = PLAN.seeds
# A re-ranker cell's folder as wildcards ("{variant}-L{max_length}"; CELL_DIR adds the seed part).
CELL = Cell.WILDCARDS
CELL_DIR = f"{Cell.WILDCARDS}{Cell.SEED_WILDCARD}"
CELL_PATTERN = Cell.pattern(bool(SEEDS))
# Status lines of long steps (reranklab.progress) on the terminal as well as in the job's log:
# fd 3 is Snakemake's stderr, opened before the rule's own `> {log} 2>&1`. A prefix, not part
# of any rule's shell text, so no job re-runs for it (Snakemake's code trigger reads that text).
shell.prefix("set -euo pipefail; exec 3>&2; export RERANKLAB_STATUS_FD=3; ")


wildcard_constraints:
    # A registered name, or an ir_datasets id (irds:antique/test: its parts are folders).
    dataset=rf"[A-Za-z0-9][A-Za-z0-9_.]*(-[A-Za-z0-9_.]+)*|{IRDS_NAME}",
    variant=r"[a-z][a-z0-9_]*",
    max_length=r"\d+",
    fold=r"\d+",
    first_stage=r"bm25|pool",
    cell=CELL_PATTERN,
    seed_dir=r"(/seed\d+)?",


def report_item(name, caption, subcategory, item):
    """A dataset's figure or table in the HTML report: its category is the dataset."""
    return report(
        f"results/report/{{dataset}}/{name}",
        caption=f"../report/{caption}.rst",
        category="{dataset}",
        subcategory=subcategory,
        labels={"item": item},
    )
