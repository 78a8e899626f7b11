"""Shared fixtures: the repository, the dataset mirror, and a tiny BERT built locally (no hub)."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from filelock import FileLock

REPO = Path(__file__).resolve().parents[1]
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
os.environ.setdefault("DVC_NO_ANALYTICS", "1")


@pytest.fixture(scope="session")
def repo() -> Path:
    return REPO


def mirror_path() -> Path | None:
    """The real dataset files: $RERANKLAB_MIRROR, else ../shared/datasets beside the repo."""
    candidates = [os.environ.get("RERANKLAB_MIRROR"), REPO.parent / "shared" / "datasets"]
    for candidate in candidates:
        if candidate and Path(candidate).is_dir():
            return Path(candidate)
    return None


@pytest.fixture(scope="session")
def mirror() -> Path:
    path = mirror_path()
    if path is None:
        pytest.skip(
            "the real dataset files are not here: set RERANKLAB_MIRROR or put them in ../shared/datasets"
        )
    return path


# -- what the workers of one run share ----------------------------------------------------------

# `make test` runs the suite in pytest-xdist workers. A session fixture runs once per worker, so
# what is slow to make (the tiny BERT's folder, the finished sample study) is made once per run
# in the run's own temporary folder, under a lock: the first worker to ask builds it, the others
# wait and read it.


def run_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The temporary folder of the whole run: above the workers' own ones under xdist."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def built_once(
    tmp_path_factory: pytest.TempPathFactory, name: str, build: Callable[[Path], None]
) -> Path:
    """``run_folder()/name``, made by ``build(folder)`` by the first worker that asks for it."""
    root = run_folder(tmp_path_factory)
    folder, done = root / name, root / f"{name}.done"
    with FileLock(str(root / f"{name}.lock")):
        if not done.is_file():
            shutil.rmtree(folder, ignore_errors=True)  # a build that failed in another worker
            folder.mkdir()
            build(folder)
            done.touch()
    return folder


@contextlib.contextmanager
def cluster_to_itself(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Hold the one-node SLURM cluster: its scenarios count jobs and slots, one at a time."""
    with FileLock(str(run_folder(tmp_path_factory) / "slurm-cluster.lock")):
        yield


@pytest.fixture(scope="session")
def tiny_bert(tmp_path_factory) -> Path:
    """A tiny random BERT whose vocabulary covers the shipped sample collection."""
    from reranklab.data.sample import words
    from reranklab.models.tiny import build_tiny_bert

    return built_once(
        tmp_path_factory, "tiny-bert", lambda folder: build_tiny_bert(folder, words())
    )


def tool_env() -> dict[str, str]:
    """Environment in which `snakemake`, `dvc` and `reranklab` of this interpreter are on PATH."""
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["HF_HUB_OFFLINE"] = "1"
    env.pop("RERANKLAB_SCHEMA", None)
    return env


def assert_group_gone(pgid: int, within_s: float, what: str) -> None:
    """Wait up to ``within_s`` for every process of group ``pgid`` to exit (a job's python may
    take a moment); else kill the group and fail, naming ``what`` outlived it."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    os.killpg(pgid, signal.SIGKILL)
    pytest.fail(f"a process of the group was alive {within_s:.0f} s after {what}")


# -- one finished sample study, shared by the integration tests that only read it ------------------

# The tiny-BERT study that tests/test_workflow.py and tests/test_variant_aliases.py read: two
# re-rankers and an alias of one of them (`bertlets_m05`: bertlets with its own margin), two folds.
# It is run once per session, through `dvc repro` in a git clone of the working tree, so the same
# run also proves the DVC stages (each one a Snakemake target) end to end.
SAMPLE_STUDY_VARIANTS = ["pointwise", "bertlets", "bertlets_m05"]


def sample_study_config(tiny_bert: Path) -> dict:
    return {
        "study": "itest",
        "datasets": ["sample"],
        "grid": {"variant": list(SAMPLE_STUDY_VARIANTS), "max_length": [64]},
        "protocol": {"sample": {"folds": 2}},
        "training": {
            "encoder": str(tiny_bert),
            "epochs": 1,
            "batch_size": 16,
            "learning_rate": 1e-3,
        },
        "variants": {"bertlets_m05": {"base": "bertlets", "margin": 0.5, "learning_rate": 1e-3}},
    }


@dataclass(frozen=True)
class SampleStudy:
    """The finished study's folder (config/test.yaml is its config) and what DVC printed."""

    path: Path
    repro: subprocess.CompletedProcess  # the `dvc repro` that ran the study
    again: subprocess.CompletedProcess  # a second `dvc repro`, straight after: nothing to do


def copy_working_tree(target: Path) -> None:
    """Copy the working tree's files (tracked, and new ones git does not ignore) to ``target``."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    for name in filter(None, listed.split("\0")):
        source = REPO / name
        if source.is_file() or source.is_symlink():  # a deleted tracked file is not copied
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            # follow_symlinks=False: the packaged study templates link to the checkout's files.
            shutil.copy(source, target / name, follow_symlinks=False)


def _dvc_output(root: Path) -> Path:
    """Where the study in ``root`` keeps what its two `dvc repro` printed: beside it, not in it."""
    return root.parent / f"{root.name}.dvc-output.json"


def _run_study(root: Path, tiny_bert: Path) -> None:
    """Run the sample study in ``root`` by `dvc repro`, twice; keep what DVC printed."""
    import yaml

    copy_working_tree(root)
    (root / "config/test.yaml").write_text(yaml.safe_dump(sample_study_config(tiny_bert)))
    params = yaml.safe_load((root / "params.yaml").read_text())
    params["dvc"] = {"configfiles": ["config/test.yaml"]}
    (root / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    env = tool_env()
    for cmd in (
        ["git", "init", "-q"],
        ["git", "add", "-A"],
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "t"],
    ):
        subprocess.run(cmd, cwd=root, check=True, env=env, capture_output=True)

    def dvc_repro() -> dict:
        done = subprocess.run(
            ["dvc", "repro"], cwd=root, env=env, capture_output=True, text=True, timeout=1800
        )
        return {"returncode": done.returncode, "stdout": done.stdout, "stderr": done.stderr}

    repro = dvc_repro()
    assert repro["returncode"] == 0, repro["stdout"][-3000:] + repro["stderr"][-5000:]
    # Straight away, before any test can touch a dependency of a stage.
    again = dvc_repro()
    _dvc_output(root).write_text(json.dumps([repro, again]))


@pytest.fixture(scope="session")
def sample_study(tmp_path_factory, tiny_bert) -> SampleStudy:
    """The sample study run once by `dvc repro` (the `dvc` block of params.yaml names
    config/test.yaml, so every stage runs `snakemake <target> ... --configfiles config/test.yaml`),
    then `dvc repro` again. Tests read it; one that needs a changed config writes it elsewhere."""
    root = built_once(
        tmp_path_factory, "sample-study", lambda folder: _run_study(folder, tiny_bert)
    )
    repro, again = (
        subprocess.CompletedProcess(["dvc", "repro"], **done)
        for done in json.loads(_dvc_output(root).read_text())
    )
    return SampleStudy(root, repro, again)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The end-to-end tests first (a stable sort): under pytest-xdist their files are handed out
    before the short ones, so no worker starts a five-minute scenario when the other is done."""
    items.sort(key=lambda item: item.get_closest_marker("integration") is None)
