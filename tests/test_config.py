"""The configuration: schema validation with clear errors, layering, and the resolved cells."""

from __future__ import annotations

import subprocess
import sys

import pytest
import yaml

from reranklab.config import grid, load_params, resolve_cell, resolve_protocol, schema_defaults
from reranklab.errors import ConfigError


def write(path, data):
    path.write_text(yaml.safe_dump(data))
    return path


def test_params_and_quickstart_are_valid(repo):
    config = load_params([repo / "params.yaml", repo / "config/quickstart.yaml"])
    assert grid(config) == [("insuranceqa", "pairwise_ce", 64)]
    assert load_params([repo / "params.yaml"])["training"]["encoder"] == "bert-base-uncased"


def test_every_shipped_config_is_valid_and_names_registered_variants(repo):
    from reranklab.models.registry import variant_names

    shipped = sorted((repo / "config").glob("*.yaml"))
    assert {p.name for p in shipped} >= {
        "quickstart.yaml",
        "allvariants.yaml",
        "allvariants-wikiqa.yaml",
    }
    for path in shipped:
        config = load_params([repo / "params.yaml", path])
        assert {variant for _, variant, _ in grid(config)} <= set(variant_names()), path.name
    for full_grid in (
        [repo / "params.yaml"],
        [repo / "params.yaml", repo / "config/allvariants-wikiqa.yaml"],
    ):
        assert {variant for _, variant, _ in grid(load_params(full_grid))} == set(variant_names())


def test_unknown_key_names_key_and_file(tmp_path, repo):
    bad = write(tmp_path / "bad.yaml", {"training": {"lerning_rate": 1e-5}})
    with pytest.raises(ConfigError, match=r"bad\.yaml: unknown key training\.lerning_rate"):
        load_params([repo / "params.yaml", bad])


def test_wrong_type_and_unknown_names(tmp_path, repo):
    with pytest.raises(
        ConfigError, match=r"bad\.yaml: key grid\.max_length\.0: 1024 is greater than"
    ):
        load_params([write(tmp_path / "bad.yaml", {"grid": {"max_length": [1024]}})])
    with pytest.raises(ConfigError, match=r"unknown dataset 'nope'"):
        load_params([write(tmp_path / "bad2.yaml", {"datasets": ["nope"]})])
    with pytest.raises(ConfigError, match=r"unknown variant 'nope'"):
        load_params([write(tmp_path / "bad3.yaml", {"grid": {"variant": ["nope"]}})])


def _validate_config(repo, override) -> subprocess.CompletedProcess:
    """`reranklab validate-config params.yaml <override>` as a user runs it."""
    command = [sys.executable, "-m", "reranklab.cli", "validate-config"]
    return subprocess.run(
        [*command, str(repo / "params.yaml"), str(override)],
        capture_output=True,
        text=True,
        cwd=repo,
    )


def test_cli_validate_config_reports_the_key(tmp_path, repo):
    bad = write(tmp_path / "bad.yaml", {"mlflow": {"uri": "x"}})
    out = _validate_config(repo, bad)
    assert out.returncode == 2
    assert "unknown key mlflow.uri" in out.stderr and "bad.yaml" in out.stderr


def test_layering_protocol_and_training(tmp_path):
    config = {
        "datasets": ["sample"],
        "protocol": {"sample": {"depth": 7, "folds": None}},
        "training": {"learning_rate": 1e-5},
        "variants": {"bertlets": {"margin": 0.5}},
    }
    protocol = resolve_protocol(config, "sample")
    assert protocol["depth"] == 7 and protocol["folds"] == 5  # null keeps the dataset default
    cell = resolve_cell(config, "sample", "bertlets", 64)
    assert cell["training"]["learning_rate"] == 1e-5 and cell["training"]["margin"] == 0.5
    assert (
        resolve_cell(config, "sample", "pointwise", 64)["training"]["margin"]
        == schema_defaults()["training"]["margin"]
    )
    assert cell["max_length"] == 64 and cell["seed"] == 42


def test_a_yaml_syntax_error_is_one_line_with_file_line_and_column(tmp_path, repo):
    bad = tmp_path / "broken.yaml"
    bad.write_text("study: x\ngrid: {variant: [pointwise\n")
    out = _validate_config(repo, bad)
    assert out.returncode == 2
    assert out.stderr.count("\n") == 1, out.stderr
    assert f"{bad}:3:1: invalid YAML: expected ',' or ']'" in out.stderr
    assert "while parsing a flow sequence at line 2, column 17" in out.stderr
