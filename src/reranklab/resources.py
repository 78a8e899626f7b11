"""Where the workflow's files are: the checkout's top level, or the wheel's copy of it.

The workflow's entry point is the ``Snakefile`` at the top of the repository (beside
``params.yaml``, ``dvc.yaml`` and ``envs/``); it includes ``workflow/rules/*.smk``, and
``workflow/`` also holds ``schemas/``, ``report/`` and ``profiles/``. A wheel carries those three
(``Snakefile``, ``envs/``, ``workflow/``) under ``reranklab/_workflow/`` in the same layout
(``setup.py`` copies them at build time), so the Snakefile's relative paths hold in both and an
installed reranklab runs the rules of its own version. An editable install or a checkout on
``PYTHONPATH`` reads the checkout's files themselves: one copy of every rule.

This module imports nothing of reranklab: the config loader (the schema) and ``reranklab init``
(the profiles, the study templates) both read it.

Example:
    >>> SNAKEFILE.name, SCHEMA.name, RULES.name, WORKFLOW.name
    ('Snakefile', 'params.schema.yaml', 'rules', 'workflow')
    >>> SNAKEFILE.parent == ROOT and RULES.parent == WORKFLOW and ENVS.parent == ROOT
    True
    >>> SNAKEFILE.is_file() and SCHEMA.is_file() and (PROFILES / "slurm").is_dir()
    True
"""

from __future__ import annotations

from pathlib import Path

PACKAGE = Path(__file__).resolve().parent
# The wheel's copy first; else the checkout this package is imported from (src/reranklab/../..).
_CANDIDATES = (PACKAGE / "_workflow", PACKAGE.parents[1])
# A folder counts only with both the entry point and the rules (a checkout's top level has other
# files named Snakefile nowhere else, but a stray one must not win over the wheel's copy).
ROOT = next(
    (
        path
        for path in _CANDIDATES
        if (path / "Snakefile").is_file() and (path / "workflow" / "rules").is_dir()
    ),
    _CANDIDATES[0],
)
SNAKEFILE = ROOT / "Snakefile"
ENVS = ROOT / "envs"
WORKFLOW = ROOT / "workflow"
RULES = WORKFLOW / "rules"
SCHEMA = WORKFLOW / "schemas" / "params.schema.yaml"
PROFILES = WORKFLOW / "profiles"
# What `reranklab init` writes into a new study folder: links to the checkout's files (a wheel
# gets their content).
STUDY = PACKAGE / "workflow" / "study"

__all__ = ["ENVS", "PROFILES", "ROOT", "RULES", "SCHEMA", "SNAKEFILE", "STUDY", "WORKFLOW"]
