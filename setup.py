"""Ship the top-level ``workflow/`` folder (the Snakemake catalog's layout) inside the wheel.

Everything else is in pyproject.toml. The rules, schemas, report captions, Conda environment and
profiles are not Python files under ``src/``, so package data cannot name them: this build step
copies the folder to ``reranklab/_workflow/``, where :mod:`reranklab.resources` looks first. An
editable install reads the checkout's folder directly and copies nothing.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py


class BuildPyWithWorkflow(build_py):
    """``build_py``, then a copy of ``workflow/`` into the built package (not in editable mode)."""

    def run(self) -> None:
        super().run()
        if self.editable_mode:
            return
        source = Path(__file__).resolve().parent / "workflow"
        target = Path(self.build_lib) / "reranklab" / "_workflow"
        ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".snakemake")
        shutil.copytree(source, target, dirs_exist_ok=True, ignore=ignore)


setup(cmdclass={"build_py": BuildPyWithWorkflow})
