"""Every recorded study names the commit it started from, and the study file at that commit
reproduces it: its datasets, cells, seeds, test questions and first-stage protocol."""

from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
RECORDS = sorted(p.parent for p in (REPO / "studies" / "results").glob("*/*/provenance.json"))


def _git(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=REPO, capture_output=True, check=False)


pytestmark = pytest.mark.skipif(
    _git("rev-parse", "--is-shallow-repository").stdout.strip() != b"false",
    reason="needs the repository's whole history (not a git checkout, or a shallow clone)",
)


def _study_file(provenance: dict) -> str:
    if provenance.get("study_file"):
        return provenance["study_file"]
    study = provenance["study"]
    return (
        "config/quickstart.yaml" if study == "quickstart" else f"studies/minilm/{study[:-7]}.yaml"
    )


def _at(commit: str, path: str) -> bytes:
    shown = _git("show", f"{commit}:{path}")
    assert shown.returncode == 0, f"{path} is not in commit {commit}"
    return shown.stdout


def _read(folder: Path, name: str) -> dict:
    return json.loads((folder / name).read_text())


@pytest.mark.parametrize("folder", RECORDS, ids=[p.name for p in RECORDS])
def test_a_record_is_reproduced_by_its_study_file_at_its_start_commit(folder: Path) -> None:
    provenance = _read(folder, "provenance.json")
    commit = provenance["commit"]
    assert _git("cat-file", "-e", f"{commit}^{{commit}}").returncode == 0, f"no commit {commit}"
    path = _study_file(provenance)
    text = _at(provenance.get("study_file_commit") or commit, path)
    if provenance.get("study_file_sha256"):
        assert hashlib.sha256(text).hexdigest() == provenance["study_file_sha256"]
    if provenance.get("study_file_commit"):
        # Run from `commit` with a study file committed later: only the study file may differ.
        changed = _git(
            "diff", "--quiet", commit, provenance["study_file_commit"], "--",
            "src", "workflow", "Snakefile", "params.yaml",
        )  # fmt: skip
        assert changed.returncode == 0, "the code differs between the two commits"
    study = yaml.safe_load(text)
    rows = _read(folder, "summary.json")["rows"]
    trained = [r for r in rows if not r.get("first_stage")]
    assert {r["dataset"] for r in rows} == set(study["datasets"])
    assert {r["variant"] for r in trained} == set(study["grid"]["variant"])
    assert {r["max_length"] for r in trained} == set(study["grid"]["max_length"])
    assert {int(r.get("n_seeds") or 1) for r in trained} == {len(study.get("seeds") or [1])}
    first_stages = _read(folder, "summary.json").get("first_stages") or (
        _read(folder, "first_stages.json") if (folder / "first_stages.json").is_file() else {}
    )
    for dataset, protocol in (study.get("protocol") or {}).items():
        wanted = (protocol.get("options") or {}).get("test_questions")
        first = next(r for r in rows if r["dataset"] == dataset and r.get("first_stage"))
        if isinstance(wanted, int):
            assert first["n_queries"] + (first.get("n_excluded") or 0) == wanted, dataset
        if dataset in first_stages and "inject_relevant" in protocol:
            assert first_stages[dataset]["planted_answers"] == protocol["inject_relevant"]
            assert first_stages[dataset]["depth"] == protocol["depth"]
