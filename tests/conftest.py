"""Shared fixtures: the repository, the dataset mirror, and a tiny BERT built locally (no hub)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

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


@pytest.fixture(scope="session")
def tiny_bert(tmp_path_factory) -> Path:
    """A tiny random BERT whose vocabulary covers the shipped sample collection."""
    from importlib.resources import files

    from reranklab.models.tiny import build_tiny_bert

    data = files("reranklab.data") / "sample_data"
    words: list[str] = []
    for name in ("questions.tsv", "passages.tsv"):
        for line in (data / name).read_text(encoding="utf-8").splitlines():
            words += line.split("\t", 1)[-1].lower().split()
    return build_tiny_bert(tmp_path_factory.mktemp("tiny-bert"), words)


def tool_env() -> dict[str, str]:
    """Environment in which `snakemake`, `dvc` and `reranklab` of this interpreter are on PATH."""
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["HF_HUB_OFFLINE"] = "1"
    env.pop("RERANKLAB_SCHEMA", None)
    return env
