"""requirements/lock.txt is current: every dependency of pyproject.toml, all extras, pinned there.

``make install`` installs the lock alone (``pip install --require-hashes``, then reranklab with
``--no-deps``), so a dependency added to pyproject.toml but not locked would simply be missing.
Offline and cheap: the files are parsed, nothing is resolved.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

# Python 3.11+ (the lock's --python-version): tomllib is in the standard library from 3.11.
tomllib = pytest.importorskip("tomllib")

ROOT = Path(__file__).resolve().parents[1]
LOCK = ROOT / "requirements" / "lock.txt"
LOCK_INPUTS = ROOT / "requirements" / "lock.in"
# A pinned line of uv's (pip-compile's) output: name==version, an optional marker, a backslash.
PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+?)(?:\s*;\s*(.*?))?\s*\\?$")


def locked() -> dict[str, list[tuple[Version, str, list[str]]]]:
    """{normalised name: [(version, marker, hashes)]}: a package may be pinned once per marker."""
    pins: dict[str, list[tuple[Version, str, list[str]]]] = {}
    current: list[str] | None = None
    for number, line in enumerate(LOCK.read_text(encoding="utf-8").splitlines(), 1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if stripped.startswith("--hash="):
            assert current is not None, f"{LOCK}:{number}: a hash before any pin"
            current.append(stripped.removeprefix("--hash=").rstrip(" \\"))
            continue
        match = PIN.match(stripped)
        assert match, f"{LOCK}:{number}: not a pin 'name==version': {stripped!r}"
        name, version, marker = match.groups()
        current = []
        pins.setdefault(canonicalize_name(name), []).append(
            (Version(version), marker or "", current)
        )
    return pins


def declared() -> list[Requirement]:
    """pyproject.toml's dependencies and every extra's, reranklab's own extras expanded."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    requirements = [Requirement(text) for text in project["dependencies"]]
    for extra in project.get("optional-dependencies", {}).values():
        requirements += [Requirement(text) for text in extra]
    # `reranklab[bench]` inside an extra: the bench extra, listed above already.
    return [r for r in requirements if canonicalize_name(r.name) != "reranklab"]


def test_every_pin_is_hashed() -> None:
    pins = locked()
    assert len(pins) > 50, "the lock holds the whole environment, dependencies of dependencies too"
    unhashed = [name for name, rows in pins.items() for _, _, hashes in rows if not hashes]
    assert not unhashed, f"pinned without a hash (pip --require-hashes refuses them): {unhashed}"
    assert all(
        re.fullmatch(r"sha256:[0-9a-f]{64}", h)
        for rows in pins.values()
        for _, _, hashes in rows
        for h in hashes
    )


@pytest.mark.parametrize("requirement", declared(), ids=str)
def test_pyproject_dependency_is_locked(requirement: Requirement) -> None:
    rows = locked().get(canonicalize_name(requirement.name))
    assert rows, f"{requirement} (pyproject.toml) is not in {LOCK.name}: run `make lock`"
    wrong = [
        str(version)
        for version, _, _ in rows
        if not requirement.specifier.contains(version, prereleases=True)
    ]
    assert not wrong, (
        f"{requirement} (pyproject.toml), but {LOCK.name} pins {requirement.name} {wrong}: "
        "run `make lock`"
    )


def test_lock_inputs_are_pinned_exactly() -> None:
    """requirements/lock.in (torch's CPU build) is in the lock as written."""
    pins = locked()
    lines = LOCK_INPUTS.read_text(encoding="utf-8").splitlines()
    inputs = [Requirement(line) for line in lines if line.strip() and not line.startswith("#")]
    assert [r.name for r in inputs] == ["torch"]
    for requirement in inputs:
        versions = [v for v, _, _ in pins[canonicalize_name(requirement.name)]]
        assert versions and all(requirement.specifier.contains(v) for v in versions), versions
    assert [str(v) for v, _, _ in pins["torch"]] == ["2.13.0+cpu"]


def test_make_install_uses_the_lock_and_make_lock_writes_it() -> None:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert "pip install --quiet --require-hashes -r $(LOCK)" in makefile
    assert "pip install --quiet --no-deps -e ." in makefile
    assert "LOCK := requirements/lock.txt" in makefile
    header = LOCK.read_text(encoding="utf-8").splitlines()[:2]
    assert header[1].strip("# ") == "make lock", "the lock names the command that refreshes it"
