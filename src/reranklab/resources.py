"""Where the workflow's files are: the checkout's ``workflow/`` folder, or the wheel's copy of it.

The Snakemake workflow sits at the top of the repository, where the Snakemake workflow catalog
puts it (``workflow/Snakefile``, ``workflow/rules/*.smk``, ``schemas/``, ``report/``, ``envs/``,
``profiles/``). A wheel carries that folder as ``reranklab/_workflow/`` (``setup.py`` copies it
at build time), so an installed reranklab runs the rules of its own version. An editable install
or a checkout on ``PYTHONPATH`` reads the checkout's folder itself: one copy of every rule.

This module imports nothing of reranklab: the config loader (the schema) and ``reranklab init``
(the profiles, the study templates) both read it.

Example:
    >>> SNAKEFILE.name, SCHEMA.name, RULES.name
    ('Snakefile', 'params.schema.yaml', 'rules')
    >>> SNAKEFILE.is_file() and SCHEMA.is_file() and (PROFILES / "slurm").is_dir()
    True
"""

from __future__ import annotations

from pathlib import Path

PACKAGE = Path(__file__).resolve().parent
# The wheel's copy first; else the checkout this package is imported from (src/reranklab/..).
_CANDIDATES = (PACKAGE / "_workflow", PACKAGE.parents[1] / "workflow")
WORKFLOW = next((path for path in _CANDIDATES if (path / "Snakefile").is_file()), _CANDIDATES[0])
SNAKEFILE = WORKFLOW / "Snakefile"
RULES = WORKFLOW / "rules"
SCHEMA = WORKFLOW / "schemas" / "params.schema.yaml"
PROFILES = WORKFLOW / "profiles"
ENVS = WORKFLOW / "envs"
# What `reranklab init` writes into a new study folder: links to the checkout's files (a wheel
# gets their content).
STUDY = PACKAGE / "workflow" / "study"

__all__ = ["ENVS", "PROFILES", "RULES", "SCHEMA", "SNAKEFILE", "STUDY", "WORKFLOW"]
