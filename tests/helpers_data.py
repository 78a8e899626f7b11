"""What the dataset tests share: the fixture copies and the mirror folders they read."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"


def copy_fixture(name: str, tmp_path: Path) -> Path:
    """A writable copy of ``tests/fixtures/<name>`` at ``tmp_path/raw`` (prepare writes beside it)."""
    target = tmp_path / "raw"
    shutil.copytree(FIXTURES / name, target)
    return target


def mirror_folder(mirror: Path, folder: str, probe: str) -> Path:
    """The dataset's folder in the mirror; skip, saying which file is missing, when it lacks one."""
    if not (mirror / folder / probe).is_file():
        pytest.skip(f"the mirror {mirror} has no {folder}/{probe}")
    return mirror / folder
