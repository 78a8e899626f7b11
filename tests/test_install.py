"""An installable workflow: the wheel carries the rules, the schema, the profiles and the study
templates; `reranklab init` starts a study folder outside the repository, where
`reranklab validate-config` and `snakemake -n` work; and the workflow passes `snakemake --lint`."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from reranklab.errors import ReranklabError
from reranklab.resources import ENVS, PROFILES, RULES, SCHEMA, SNAKEFILE, STUDY
from reranklab.workflow.init import init_study, study_files
from tests.conftest import tool_env

# What a wheel is built from (a copy: building in the checkout would leave build/ and egg-info).
SOURCES = (
    "pyproject.toml",
    "setup.py",
    "MANIFEST.in",
    "README.md",
    "params.yaml",
    "Snakefile",
    "envs",
    "workflow",
    "config",
    "studies",
    "src",
)


def _run(command: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    result = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, f"{command}:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    return result


def test_the_checkout_has_the_design_layout_and_one_copy_of_each_rule(repo):
    # In a checkout (or an editable install) the package reads the top-level files themselves.
    assert repo / "Snakefile" == SNAKEFILE and SCHEMA.is_file()
    assert repo / "workflow" / "rules" == RULES and (PROFILES / "slurm").is_dir()
    assert repo / "envs" == ENVS and (ENVS / "reranklab.yaml").is_file()
    assert {p.name for p in RULES.glob("*.smk")} >= {"common.smk", "train.smk", "report.smk"}
    top = {p.name for p in repo.iterdir()}
    assert {"Snakefile", "dvc.yaml", "params.yaml", "workflow", "src", "envs", "tests"} <= top
    layout = {p.name for p in (repo / "workflow").iterdir()}
    assert {"rules", "schemas", "report", "profiles"} <= layout
    assert not {"Snakefile", "envs"} & layout  # moved to the top
    assert (repo / ".snakemake-workflow-catalog.yml").is_file()
    assert (repo / "config" / "README.md").is_file()
    # One Snakefile, the entry point Snakemake finds at the top; no rule file inside src/.
    others = [p for name in ("workflow", "envs", "src") for p in (repo / name).rglob("Snakefile")]
    # ... the only other is the template of `reranklab init`, which includes that one.
    assert others == [STUDY / "Snakefile"]
    assert "include: str(SNAKEFILE)" in (STUDY / "Snakefile").read_text()
    assert not list((repo / "src").rglob("*.smk"))
    # The conda environment the rules name is the top-level one.
    common = (RULES / "common.smk").read_text()
    assert (RULES / "../../envs/reranklab.yaml").resolve() == (ENVS / "reranklab.yaml").resolve()
    assert 'CONDA_ENV = "../../envs/reranklab.yaml"' in common
    # The study templates are the checkout's own files, not copies.
    for name in ("params.yaml", "config", "studies"):
        assert (STUDY / name).resolve() == (repo / name).resolve(), name


def test_init_writes_a_study_and_never_replaces_a_file(tmp_path):
    written = init_study(tmp_path / "study")
    names = {str(path) for path in written}
    assert {"Snakefile", "params.yaml", "config/quickstart.yaml", "config/README.md"} <= names
    assert "profiles/slurm/config.v8+.yaml" in names
    # The papers' studies, matrix and claims ship with the package.
    assert {
        "studies/bertdmn2021.yaml",
        "studies/published.yaml",
        "studies/claims.yaml",
    } <= names
    assert all((tmp_path / "study" / name).is_file() for name in names)
    assert [str(target) for _, target in study_files()] == [str(path) for path in written]
    (tmp_path / "study" / "params.yaml").write_text("study: mine\n")
    with pytest.raises(ReranklabError, match=r"would replace Snakefile, params\.yaml, .*--force"):
        init_study(tmp_path / "study")
    assert (tmp_path / "study" / "params.yaml").read_text() == "study: mine\n"
    init_study(tmp_path / "study", force=True)
    assert (tmp_path / "study" / "params.yaml").read_text() != "study: mine\n"


def test_the_workflow_passes_snakemake_lint(repo, tmp_path):
    for name in ("Snakefile", "workflow", "envs", "params.yaml", "config"):
        (shutil.copytree if (repo / name).is_dir() else shutil.copy)(repo / name, tmp_path / name)
    result = subprocess.run(
        ["snakemake", "--lint", "--configfile", "config/quickstart.yaml"],
        cwd=tmp_path,
        env=tool_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-3000:]
    assert "Lints for" not in output and "Congratulations" in output


def test_a_study_runs_from_the_installed_wheel_outside_the_repository(repo, tmp_path):
    """Build the wheel, install it into a fresh venv (its dependencies from this one's
    site-packages, so nothing is downloaded), then, in a folder outside the repository:
    `reranklab init`, `validate-config` and a dry run of the quick start (~10 s)."""
    source = tmp_path / "source"
    source.mkdir()
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info")
    for name in SOURCES:
        if (repo / name).is_dir():
            shutil.copytree(repo / name, source / name, symlinks=True, ignore=ignore)
        else:
            shutil.copy(repo / name, source / name)
    python = sys.executable
    env = {**tool_env(), "PIP_NO_INDEX": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    _run(
        [
            python,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            "dist",
            "./source",
        ],
        tmp_path,
        env,
    )
    (wheel,) = (tmp_path / "dist").glob("reranklab-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for packaged in (
        "reranklab/_workflow/Snakefile",
        "reranklab/_workflow/envs/reranklab.yaml",
        "reranklab/_workflow/workflow/rules/common.smk",
        "reranklab/_workflow/workflow/schemas/params.schema.yaml",
        "reranklab/_workflow/workflow/profiles/slurm/config.v8+.yaml",
        "reranklab/_workflow/workflow/profiles/slurm-cpu/config.v8+.yaml",
        "reranklab/_workflow/workflow/report/workflow.rst",
        "reranklab/workflow/study/Snakefile",
        "reranklab/workflow/study/params.yaml",
        "reranklab/workflow/study/config/quickstart.yaml",
        "reranklab/workflow/study/config/README.md",
        "reranklab/workflow/study/studies/mass2019.yaml",
        "reranklab/workflow/study/studies/published.yaml",
        "reranklab/workflow/study/studies/claims.yaml",
    ):
        assert packaged in names, packaged
    # The templates are files in the wheel, with the checkout's content (not links).
    study_params = zipfile.ZipFile(wheel).read("reranklab/workflow/study/params.yaml")
    assert study_params == (repo / "params.yaml").read_bytes()

    venv = tmp_path / "venv"
    _run([python, "-m", "venv", "--without-pip", str(venv)], tmp_path, env)
    _run([python, "-m", "pip", "--python", str(venv / "bin" / "python"), "install", "--no-deps",
          str(wheel)], tmp_path, env)  # fmt: skip
    site = Path(
        subprocess.check_output(
            [
                venv / "bin" / "python",
                "-c",
                "import sysconfig; print(sysconfig.get_path('purelib'))",
            ],
            text=True,
        ).strip()
    )
    # Dependencies from this environment; its editable reranklab is not on the path (its .pth
    # files are not read from an added directory), so `reranklab` is the installed wheel.
    (site / "_reranklab_deps.pth").write_text(sysconfig.get_path("purelib") + "\n")
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env['PATH']}"
    env.pop("PYTHONPATH", None)
    where = _run([str(venv / "bin" / "python"), "-c", "import reranklab; print(reranklab.__file__)"],
                 tmp_path, env).stdout  # fmt: skip
    assert Path(where.strip()).is_relative_to(venv), where
    # ... and its workflow is the wheel's copy (Snakefile, envs/, workflow/), not the checkout's.
    code = "from reranklab.resources import SNAKEFILE; print(SNAKEFILE)"
    snakefile = _run([str(venv / "bin" / "python"), "-c", code], tmp_path, env).stdout.strip()
    assert Path(snakefile).is_relative_to(venv) and Path(snakefile).parent.name == "_workflow"

    study = tmp_path / "elsewhere" / "my-study"
    _run(["reranklab", "init", str(study)], tmp_path, env)
    assert (study / "config" / "README.md").is_file()
    checked = _run(
        ["reranklab", "validate-config", "params.yaml", "config/quickstart.yaml"], study, env
    )
    assert checked.stdout.startswith("ok: params.yaml + config/quickstart.yaml;")
    _run(["reranklab", "settings-schema", "--check"], study, env)  # the packaged schema is current
    plan = _run(
        [
            str(venv / "bin" / "python"),
            "-m",
            "snakemake",
            "-n",
            "--configfile",
            "config/quickstart.yaml",
        ],
        study,
        env,
    )
    output = plan.stdout + plan.stderr
    assert "Job stats:" in output and "summarize" in output and "regress" in output
    assert str(repo / "src") not in output
    assert not (study / "results").exists()  # a dry run writes nothing
    # A collection given as files (config/own-data.yaml, studies/own-data/) plans from the wheel
    # too: no package edit (tests/test_own_data_workflow.py runs it to the end).
    assert (study / "studies" / "own-data" / "passages.jsonl").is_file()
    _run(["reranklab", "validate-config", "params.yaml", "config/own-data.yaml"], study, env)
    own = _run(
        [str(venv / "bin" / "python"), "-m", "snakemake", "-n", "--configfile",
         "config/own-data.yaml"],
        study,
        env,
    )  # fmt: skip
    own_output = own.stdout + own.stderr
    assert "Job stats:" in own_output and "results/data/faq" in own_output
    assert not (study / "results").exists()
    # The matrix and the claims come with the package: graded from a folder without studies/.
    bare = tmp_path / "elsewhere" / "bare"
    bare.mkdir()
    graded = _run(["reranklab", "regress", "--json"], bare, env).stdout
    assert '"claims"' in graded and '"NOT RUN"' in graded
