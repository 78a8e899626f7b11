"""The Python side of the Snakemake workflow: the plan of its jobs, and ``reranklab init``.

The rules themselves are in the repository's ``workflow/`` folder (the Snakemake catalog's
layout; :mod:`reranklab.resources` finds it, or the wheel's copy). They stay thin: every input
function, every step's settings and every target list they need is a function of
:mod:`reranklab.workflow.plan`, which is unit-tested and inside the import contracts like any
other module. :mod:`reranklab.workflow.init` writes a new study folder.

The file locations are re-exported here for the code that read them from this package.
"""

from __future__ import annotations

from reranklab.resources import ENVS, PROFILES, RULES, SCHEMA, SNAKEFILE, STUDY, WORKFLOW

__all__ = ["ENVS", "PROFILES", "RULES", "SCHEMA", "SNAKEFILE", "STUDY", "WORKFLOW"]
