"""The Snakefile's own params.yaml is parsed before Snakemake reads it, except where Snakemake
would not read it (a module given its own config) or where it is missing (Snakemake's message)."""

from __future__ import annotations

from pathlib import Path

import pytest

from reranklab.errors import ConfigError
from reranklab.workflow.refusal import check_workflow_configfile


def test_a_yaml_error_names_the_file_line_and_column(tmp_path: Path):
    params = tmp_path / "params.yaml"
    params.write_text("training:\n  epochs: 1\nseeds: [1, 2\n")
    with pytest.raises(ConfigError) as raised:
        check_workflow_configfile(params, skipped=False)
    assert str(raised.value).startswith(f"{params}:4:1: invalid YAML: expected ',' or ']'")


def test_a_file_snakemake_skips_or_lacks_is_not_read(tmp_path: Path):
    params = tmp_path / "params.yaml"
    params.write_text("seeds: [1, 2\n")
    check_workflow_configfile(params, skipped=True)  # a module given its own config
    check_workflow_configfile(tmp_path / "missing.yaml", skipped=False)


def test_its_keys_are_left_to_the_merged_check(tmp_path: Path):
    params = tmp_path / "params.yaml"
    params.write_text("no_such_key: 1\n")
    check_workflow_configfile(params, skipped=False)  # valid YAML: the schema is checked later
