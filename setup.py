"""Ship the Snakemake workflow (the top-level ``Snakefile``, ``envs/`` and ``workflow/``) inside
the wheel.

Everything else is in pyproject.toml. The entry point, the rules, schemas, report captions, Conda
environment and profiles are not Python files under ``src/``, so package data cannot name them:
this build step copies them to ``reranklab/_workflow/`` in the checkout's own layout
(``_workflow/Snakefile``, ``_workflow/envs/``, ``_workflow/workflow/rules/`` ...), so the
Snakefile's relative paths (``include: "workflow/rules/..."``) hold there too;
:mod:`reranklab.resources` looks there first. An editable install reads the checkout's files
directly and copies nothing.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

# What the wheel's reranklab/_workflow/ holds, each at its path in the checkout.
WORKFLOW_FILES = ("Snakefile", "envs", "workflow")


class BuildPyWithWorkflow(build_py):
    """``build_py``, then a copy of the workflow into the built package (not in editable mode)."""

    def run(self) -> None:
        super().run()
        if self.editable_mode:
            return
        root = Path(__file__).resolve().parent
        target = Path(self.build_lib) / "reranklab" / "_workflow"
        ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".snakemake")
        for name in WORKFLOW_FILES:
            source = root / name
            if source.is_dir():
                shutil.copytree(source, target / name, dirs_exist_ok=True, ignore=ignore)
            else:
                target.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(source, target / name)


setup(cmdclass={"build_py": BuildPyWithWorkflow})
