"""Snakemake's `--config` values: read as YAML (as in a file), checked on their own, and an error
names where the wrong value is (the --config value, an override file), not params.yaml."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest
import yaml

from reranklab.config import COMMAND_LINE, load_params, snakemake_config
from reranklab.errors import ConfigError
from reranklab.resources import STUDY as STUDY_TEMPLATE
from reranklab.settings.sources import typed_overrides
from tests.conftest import tool_env

STUDY = {
    "study": "overrides",
    "datasets": ["sample"],
    "grid": {"variant": ["pointwise"], "max_length": [128]},
    "protocol": {"sample": {"folds": 2}},
    "training": {"encoder": "unused", "epochs": 1},
}


def test_config_values_are_typed_as_yaml_scalars():
    parsed = {"grid": {"max_length": ["64", "128"]}, "seeds": "null", "seed": 7}
    assert typed_overrides(parsed) == {"grid": {"max_length": [64, 128]}, "seeds": None, "seed": 7}
    flags = typed_overrides({"training": {"length_grouping": "false", "learning_rate": "1.0e-5"}})
    assert flags == {"training": {"length_grouping": False, "learning_rate": 1e-5}}
    # Text that YAML would read as a structure, or not at all, stays the text it was.
    for text in ("a: b", "[x", "- y", "#z", "bert-base-uncased", "0x"):
        assert typed_overrides({"study": text}) == {"study": text}


def test_an_error_in_a_config_value_names_the_command_line(tmp_path, repo):
    with pytest.raises(ConfigError) as raised:
        load_params([repo / "params.yaml"], {"grid": {"max_length": ["x"]}})
    message = str(raised.value)
    assert message.startswith(f"{COMMAND_LINE}: key grid.max_length.0: expected an integer")
    assert "params.yaml" not in message


def test_snakemake_config_checks_each_file_by_its_name(tmp_path, repo, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "good.yaml").write_text(yaml.safe_dump(STUDY))
    (tmp_path / "bad.yaml").write_text(yaml.safe_dump({"training": {"epochs": "two"}}))
    files = [repo / "params.yaml", tmp_path / "good.yaml", tmp_path / "bad.yaml"]
    merged = yaml.safe_load((repo / "params.yaml").read_text()) | STUDY
    with pytest.raises(ConfigError, match=r"^bad\.yaml: key training\.epochs: expected an integer"):
        snakemake_config(merged, files, {})
    config = snakemake_config(merged, files[:2], {"grid": {"max_length": ["64"]}})
    assert config["grid"] == {"variant": ["pointwise"], "max_length": [64]}


# -- through Snakemake -------------------------------------------------------------------------


@pytest.fixture
def workdir(repo, tmp_path):
    # A study folder as `reranklab init` writes it: its Snakefile includes the package's workflow.
    shutil.copy(STUDY_TEMPLATE / "Snakefile", tmp_path / "Snakefile")
    shutil.copy(repo / "params.yaml", tmp_path / "params.yaml")
    (tmp_path / "study.yaml").write_text(yaml.safe_dump(STUDY))
    return tmp_path


def _dry_run(workdir, *config: str) -> subprocess.CompletedProcess:
    command = ["snakemake", "-n", "--configfile", "study.yaml"]
    command += ["--config", *config] if config else []
    return subprocess.run(
        command, cwd=workdir, env=tool_env(), capture_output=True, text=True, timeout=300
    )


def test_snakemake_config_values_are_read_as_yaml(workdir):
    result = _dry_run(workdir, "grid={max_length: [64]}", "seed=7")
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-3000:]
    models = set(re.findall(r"results/models/sample/([\w-]+)/fold\d", output))
    assert models == {"pointwise-L64"}


def test_a_wrong_snakemake_config_value_is_blamed_on_the_command_line(workdir):
    result = _dry_run(workdir, "grid={max_length: [x]}")
    output = result.stdout + result.stderr
    assert result.returncode != 0
    assert f"{COMMAND_LINE}: key grid.max_length.0: expected an integer, got 'x'" in output
    assert "params.yaml:" not in output and "study.yaml:" not in output


def test_a_wrong_value_in_an_override_file_names_that_file(workdir):
    (workdir / "bad.yaml").write_text("training: {lerning_rate: 1.0e-5}\n")
    result = subprocess.run(
        ["snakemake", "-n", "--configfile", "study.yaml", "bad.yaml"],
        cwd=workdir,
        env=tool_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 1
    [line] = result.stderr.splitlines()  # one line, no traceback (reranklab.workflow.refusal)
    assert line.startswith("reranklab: bad.yaml: unknown key training.lerning_rate")
