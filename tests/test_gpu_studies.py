"""The MiniLM studies on a lent GPU (``scripts/gpu-studies.sh``), checked on CPU.

``--dry-run`` runs the script itself with tiny shapes (a tiny random BERT, the shipped ``sample``
collection, one seed, a study's first variant), through the study's own Snakemake workflow and
``reranklab record``, so the script cannot rot between GPU loans; ``--overrides`` gives the
full-size GPU override of each study, which must validate with its study file. Nothing measured
here is worth reading.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from reranklab.cli import main
from tests.conftest import tool_env

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "gpu-studies.sh"
STUDIES = sorted(p.stem for p in (ROOT / "studies" / "minilm").glob("*.yaml"))


def _script(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    environ = {
        **tool_env(),
        "OUT": str(tmp_path / "out"),
        "PYTHON": sys.executable,
        "GPU_STUDIES_SITE": str(tmp_path / "site"),
        "GPU_STUDIES_WORK": str(tmp_path / "work"),
        "GPU_STUDIES_CORES": "2",
        **env,
    }
    environ.pop("RERANKLAB_MIRROR", None)
    return subprocess.run(
        ["bash", str(SCRIPT), *args], env=environ, capture_output=True, text=True, timeout=900
    )


@pytest.mark.integration
def test_dry_run_records_a_study_and_skips_what_the_budget_leaves(tmp_path):
    """The device's one command end to end on CPU: one study recorded, none started past the budget."""
    done = _script(tmp_path, "--dry-run", GPU_STUDIES="monobert2019")
    assert done.returncode == 0, done.stderr[-3000:]
    out = tmp_path / "out"
    # What comes back from the device: at most 8 files, no folder.
    assert sorted(p.name for p in out.iterdir()) == [
        "env.txt",
        "log.txt",
        "records.tar.gz",
        "status.md",
    ]
    assert not (tmp_path / "site").exists()  # the packages were importable: nothing installed
    assert "cuda False" in (out / "env.txt").read_text()
    assert "| monobert2019 | recorded (" in (out / "status.md").read_text()
    records = tmp_path / "records"
    with tarfile.open(out / "records.tar.gz") as archive:
        archive.extractall(records, filter="data")
    record = records / "monobert2019"
    assert {"summary.json", "per_query.json", "provenance.json", "timings.json"} <= {
        p.name for p in record.iterdir()
    }
    summary = json.loads((record / "summary.json").read_text())
    assert {"sample/bm25", "sample/monobert/L64"} <= set(summary)  # the study's variant, tiny
    provenance = json.loads((record / "provenance.json").read_text())
    assert provenance["command"].startswith("scripts/gpu-studies.sh --dry-run")
    assert "studies/minilm/monobert2019.yaml gpu.yaml" in provenance["command"]
    # The dry run's override: tiny shapes on CPU, over the study file's settings.
    gpu = (tmp_path / "work" / "monobert2019" / "gpu.yaml").read_text()
    assert "datasets: [sample]" in gpu and "device: cpu" in gpu and "tiny-bert" in gpu

    # Past the budget no study starts, and the command fails (nothing was recorded).
    late = _script(
        tmp_path / "late",
        "--dry-run",
        GPU_STUDIES="monobert2019 bertsel2020",
        GPU_STUDIES_BUDGET_S="0",
    )
    assert late.returncode != 0
    status = (tmp_path / "late" / "out" / "status.md").read_text()
    assert "| monobert2019 | not started (budget) |" in status
    assert "| bertsel2020 | not started (budget) |" in status
    assert not (tmp_path / "late" / "work" / "tiny-bert").exists()


@pytest.mark.parametrize("study", STUDIES)
def test_each_study_s_gpu_override_validates(tmp_path, study, monkeypatch, capsys):
    """The full-size GPU run of every MiniLM study is a valid configuration (schema and settings)."""
    assert "bertsel2020" in STUDIES  # the new study is among them
    done = _script(tmp_path, "--overrides", study)
    assert done.returncode == 0, done.stderr
    assert "device: cuda" in done.stdout
    override = tmp_path / "gpu.yaml"
    override.write_text(done.stdout)
    monkeypatch.chdir(ROOT)
    study_file = f"studies/minilm/{study}.yaml"
    assert main(["validate-config", "params.yaml", study_file, str(override)]) == 0
    assert capsys.readouterr().out.startswith("ok: ")


def test_an_unknown_study_is_one_clear_error(tmp_path):
    done = _script(tmp_path, "--overrides", "nosuch2099")
    assert done.returncode == 2
    assert done.stderr.strip() == "no study studies/minilm/nosuch2099.yaml"
