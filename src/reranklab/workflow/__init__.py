"""The Snakemake workflow, shipped inside the package: its Snakefile, rules, schema and profiles.

A study folder's ``Snakefile`` (a checkout's, or the one ``reranklab init`` writes) reads
``params.yaml`` and includes :data:`SNAKEFILE`, so the rules that run are always those of the
installed ``reranklab`` whose steps they call. Layout::

    reranklab/workflow/Snakefile                 the DAG: includes rules/*.smk, the `all` target
    reranklab/workflow/rules/*.smk               one file per step (common.smk: shared helpers)
    reranklab/workflow/schemas/params.schema.yaml  JSON schema of params.yaml (generated)
    reranklab/workflow/profiles/slurm/           Snakemake profile for SLURM clusters
    reranklab/workflow/study/                    what `reranklab init` copies into a new study

Example:
    >>> SNAKEFILE.name, SCHEMA.name
    ('Snakefile', 'params.schema.yaml')
    >>> SNAKEFILE.is_file() and SCHEMA.is_file()
    True
"""

from __future__ import annotations

from pathlib import Path

# Real files next to this module (the package is never imported from a zip: Snakemake reads
# the rules from disk).
ROOT = Path(__file__).resolve().parent
SNAKEFILE = ROOT / "Snakefile"
RULES = ROOT / "rules"
SCHEMA = ROOT / "schemas" / "params.schema.yaml"
PROFILES = ROOT / "profiles"
STUDY = ROOT / "study"

__all__ = ["PROFILES", "ROOT", "RULES", "SCHEMA", "SNAKEFILE", "STUDY"]
