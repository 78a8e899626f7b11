"""The typed settings model: the generated schema, defaults, errors naming the key, variant
settings beside the variant, dataset options checked with the config, and the Cell name."""

from __future__ import annotations

import re
import shutil
import subprocess

import jsonschema
import pytest
import yaml
from pydantic import Field

from reranklab.cli import main as cli
from reranklab.config import (
    load_params,
    resolve_training,
    schema_defaults,
    study_model,
    validate_config,
)
from reranklab.errors import ConfigError
from reranklab.models.registry import get_variant, variant_names
from reranklab.settings.cell import Cell
from reranklab.settings.generate import COMMAND, out_of_date, render
from reranklab.settings.sources import training_sources
from reranklab.settings.training import (
    NOT_FINGERPRINTED_KEYS,
    NOT_MODEL_KEYS,
    RUN_OPTION_KEYS,
    SharedTraining,
    training_view,
)
from reranklab.settings.variant import VariantSettings
from reranklab.settings.variant_fields import describe, merged_field, training_model
from tests.conftest import tool_env

SCHEMA = "workflow/schemas/params.schema.yaml"


def write(path, data):
    path.write_text(yaml.safe_dump(data))
    return path


# -- the generated schema ----------------------------------------------------------------------


def test_committed_schema_is_the_generated_one(repo):
    problem = out_of_date(repo / SCHEMA, study_model())
    assert problem is None, (
        problem
    )  # "... is out of date, run `reranklab settings-schema` to update it"


def test_check_fails_with_the_command_to_run_when_the_file_drifts(tmp_path, capsys):
    path = tmp_path / "params.schema.yaml"
    text = render(study_model())
    path.write_text(text.replace("Peak AdamW learning rate.", "Peak learning rate."))
    with pytest.raises(SystemExit) as stopped:
        cli(["settings-schema", "--check", "--path", str(path)])
    assert (
        stopped.value.code == 1
        and f"is out of date, run `{COMMAND}` to update it" in capsys.readouterr().err
    )
    assert cli(["settings-schema", "--path", str(path)]) == 0 and path.read_text() == text
    assert cli(["settings-schema", "--check", "--path", str(path)]) == 0
    assert (
        text.startswith("# GENERATED from the settings model") and COMMAND in text.splitlines()[1]
    )


def test_schema_is_draft_2020_12_closed_and_every_key_documented(repo):
    schema = yaml.safe_load((repo / SCHEMA).read_text())
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    jsonschema.Draft202012Validator.check_schema(schema)
    blocks = {"(top)": schema, **schema["$defs"]}
    for name, block in blocks.items():
        # Closed: no other keys, or (variants, local) other keys only as aliases or
        # collections of one's own, each a closed block.
        extra = block.get("additionalProperties")
        assert extra is False or name in ("Variants", "LocalBlock"), name
        for key, prop in block["properties"].items():
            # A required key (an alias's base, a paper's id) has no default.
            assert "description" in prop, f"{name}.{key}"
            assert ("default" in prop) != (key in block.get("required", [])), f"{name}.{key}"
            assert {"type", "anyOf", "$ref"} & prop.keys(), f"{name}.{key}"
    alias = schema["$defs"]["Variants"]["additionalProperties"]["$ref"].rpartition("/")[2]
    assert schema["$defs"][alias]["additionalProperties"] is False
    assert schema["$defs"][alias]["required"] == ["base"]
    assert schema["$defs"]["Variants"]["propertyNames"]["pattern"] == "^[a-z][a-z0-9_]*$"
    assert schema["$defs"]["LocalCollection"]["additionalProperties"] is False
    assert schema["$defs"]["LocalCollection"]["required"] == ["queries", "passages", "qrels"]


def test_the_schema_and_the_model_agree_on_shipped_and_wrong_configs(repo):
    validator = jsonschema.Draft202012Validator(yaml.safe_load((repo / SCHEMA).read_text()))
    for path in [repo / "params.yaml", *sorted((repo / "config").glob("*.yaml"))]:
        data = yaml.safe_load(path.read_text())
        validate_config(data, str(path))
        assert not list(validator.iter_errors(data)), path.name
    wrong = [
        {"training": {"epochs": 0}},
        {"protocol": {"wikiqa_typo": {}}},
        {"variants": {"nosuch": {}}},
        {"protocol": {"wikiqa": {"options": {"bogus": 1}}}},
        {"protocol": {"insuranceqa": {"options": {"pool_size": 1000}}}},
        {"training": {"pooling": "sum"}},
        {"grid": {"variant": ["No-pe"]}},
        {"grid": {"variant": ["bm25"]}},
        {"variants": {"bertsel_x": {"epochs": 5}}},  # an alias without a base
        {"variants": {"bertsel_x": {"base": "nope"}}},
        {"variants": {"bertsel_x": {"base": "bertsel", "epoks": 5}}},
        {"variants": {"Bertsel-x": {"base": "bertsel"}}},
        {"paper": {"id": "mass2019"}},
        {"deviations": [{"name": "x", "what": "y"}]},
        {"deviations": [{"name": "x", "what": "y", "why": "z", "affect": []}]},
    ]
    for config in wrong:
        assert list(validator.iter_errors(config)), config
        with pytest.raises(ConfigError):
            validate_config(config)
    # Both accept aliases, a paper and deviations (JSON Schema cannot tell whether a name in
    # grid.variant is defined as an alias: the model checks it on the merged config).
    right = {
        "grid": {"variant": ["bertsel", "bertsel_epoch5"]},
        "variants": {"bertsel_epoch5": {"base": "bertsel", "epochs": 5}},
        "paper": {"id": "bertsel2020", "cite": "papers/bertsel2020.txt:1"},
        "deviations": [{"name": "x", "what": "y", "why": "z", "affects": ["bertsel2020/*"]}],
    }
    validate_config(right)
    assert not list(validator.iter_errors(right))
    assert not list(validator.iter_errors({"grid": {"variant": ["nope"]}}))
    with pytest.raises(ConfigError, match="unknown variant 'nope' in grid.variant"):
        validate_config({"grid": {"variant": ["nope"]}})


def test_paper_and_deviations_are_checked_but_change_no_cell(repo):
    from reranklab.config import first_stage_cell, resolve_cell

    plain = load_params([repo / "params.yaml"])
    study = {
        **plain,
        "paper": {"id": "mass2019", "cite": "papers/mass2019.txt:3"},
        "deviations": [
            {
                "name": "no-doc2query",
                "what": "re-ranks plain BM25 top-1000, not Doc2query-expanded BM25",
                "why": "reranklab has no Doc2query expansions",
                "affects": ["markedbert2020/table1/*", "markedbert2020/table2/*"],
            },
            {"name": "no-affects", "what": "x", "why": "y"},
        ],
    }
    validate_config(study, "studies/mass2019.yaml")
    assert schema_defaults()["paper"] is None and schema_defaults()["deviations"] == []
    for variant in ("pointwise", "bertsel"):
        assert resolve_cell(study, "wikiqa", variant, 256) == resolve_cell(
            plain, "wikiqa", variant, 256
        )
    assert first_stage_cell(study, "wikiqa") == first_stage_cell(plain, "wikiqa")


# -- defaults and layering ---------------------------------------------------------------------


def test_defaults_come_from_the_model_and_the_schema_shows_them(repo):
    defaults = schema_defaults()
    schema = yaml.safe_load((repo / SCHEMA).read_text())
    training = schema["$defs"]["Training"]["properties"]
    assert {key: prop["default"] for key, prop in training.items()} == defaults["training"]
    assert (
        defaults["training"]["learning_rate"]
        == SharedTraining.model_fields["learning_rate"].default
    )
    assert defaults["protocol"] == {} and defaults["variants"] == {}
    assert defaults["grid"] == {"variant": ["pointwise"], "max_length": [256]}


def test_the_layers_are_one_ordered_tuple():
    assert [name for name, _ in training_sources({}, "dmn", {}, {})] == [
        "defaults",
        "training",
        "dmn paper settings",
        "variants.dmn",
    ]
    # The shared block may restate a default without undoing the paper's value; variants.<name> wins.
    assert resolve_training({"training": {"learning_rate": 2e-5}}, "dmn")["learning_rate"] == 3e-5
    assert (
        resolve_training({"variants": {"dmn": {"learning_rate": 1e-4}}}, "dmn")["learning_rate"]
        == 1e-4
    )


# -- errors naming the key the user wrote ------------------------------------------------------


@pytest.mark.parametrize(
    ("config", "message"),
    [
        (
            {"protocol": {"wikiqa_typo": {}}},
            r"params\.yaml: unknown dataset 'wikiqa_typo' in protocol \(key protocol\.wikiqa_typo; known: antique, .*wikiqa",
        ),
        (
            {"variants": {"nosuch": {"epochs": 1}}},
            r"params\.yaml: unknown variant 'nosuch' in variants \(key variants\.nosuch; known: bert, bert_lite, ",
        ),
        (
            {"datasets": ["wikiqa", "nope"]},
            r"params\.yaml: unknown dataset 'nope' in datasets \(key datasets\.1; known: ",
        ),
        (
            {"grid": {"variant": ["nope"]}},
            r"params\.yaml: unknown variant 'nope' in grid\.variant \(key grid\.variant\.0; ",
        ),
        (
            {"protocol": {"wikiqa": {"options": {"bogus": 1}}}},
            r"params\.yaml: protocol\.wikiqa\.options: WikiQA takes no options, got \['bogus'\] \(key protocol\.wikiqa\.options\.bogus\)",
        ),
        (
            {"protocol": {"insuranceqa": {"options": {"pool_size": 1000}}}},
            r"key protocol\.insuranceqa\.options\.pool_size: expected one of \[100, 500\], got 1000",
        ),
        (
            {"protocol": {"semeval2016": {"options": {"with_2015": "yes"}}}},
            r"key protocol\.semeval2016\.options\.with_2015: expected true or false, got 'yes'",
        ),
        (
            {"protocol": {"wikiqa": {"scoring": "nope"}}},
            r"key protocol\.wikiqa\.scoring: expected one of \['filtered', 'with-correct'\], got 'nope'",
        ),
        (
            {"variants": {"dmn": {"episodes": 0}}},
            r"key variants\.dmn\.episodes: 0 is less than the minimum of 1",
        ),
        ({"training": {"epochs": "3"}}, r"key training\.epochs: expected an integer >= 1, got '3'"),
        (
            {"training": {"lerning_rate": 1e-5}},
            r"unknown key training\.lerning_rate \(allowed here: encoder, epochs, learning_rate",
        ),
        # a paper study's metadata: checked like any key
        ({"paper": {"id": "mass2019"}}, r"key paper\.cite: missing \(a required key\)"),
        (
            {"deviations": [{"name": "a", "what": "b", "why": "c", "afects": ["x/*"]}]},
            r"unknown key deviations\.0\.afects \(allowed here: name, what, why, affects\)",
        ),
        (
            {"deviations": [{"name": "a", "what": "b", "why": "c", "affects": "x/*"}]},
            r"key deviations\.0\.affects: expected a list, got 'x/\*'",
        ),
        (
            {"deviations": [{"name": "a", "what": "b", "why": "c"}] * 2},
            r"key deviations: two deviations are named 'a'",
        ),
    ],
)
def test_errors_name_the_file_and_the_key_the_user_wrote(tmp_path, config, message):
    path = write(tmp_path / "params.yaml", config)
    with pytest.raises(ConfigError, match=message):
        load_params([path])


def test_a_wrong_dataset_option_stops_validation_before_any_download(tmp_path, repo):
    bad = write(tmp_path / "bad.yaml", {"protocol": {"trecqa": {"options": {"train": "all"}}}})
    with pytest.raises(
        ConfigError,
        match=r"bad\.yaml: key protocol\.trecqa\.options\.train: expected one of \['train_all', 'train'\], got 'all'",
    ):
        load_params([repo / "params.yaml", bad])


@pytest.mark.integration
def test_snakemake_dry_run_rejects_a_wrong_dataset_option(tmp_path, repo):
    for name in ("Snakefile", "envs", "params.yaml", "workflow", "config"):
        (shutil.copytree if (repo / name).is_dir() else shutil.copy)(repo / name, tmp_path / name)
    for options, expected in (
        ({"bogus": 1}, "protocol.wikiqa.options.bogus"),
        ({"pool_size": 1}, "protocol.wikiqa.options.pool_size"),
    ):
        write(
            tmp_path / "config/bad.yaml",
            {"datasets": ["wikiqa"], "protocol": {"wikiqa": {"options": options}}},
        )
        result = subprocess.run(
            ["snakemake", "--cores", "1", "--dry-run", "--configfile", "config/bad.yaml"],
            cwd=tmp_path,
            env=tool_env(),
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert result.returncode != 0 and expected in result.stdout + result.stderr
        assert "Job stats" not in result.stdout  # stopped before planning any job


# -- dataset options, declared by each dataset module ------------------------------------------


def test_each_dataset_declares_its_options_once_and_reads_them_typed():
    from reranklab.data import dataset_names, get_dataset

    for name in dataset_names():
        dataset = get_dataset(name)
        assert dataset.protocol.options == dataset.options_model.defaults(), name
    insurance = get_dataset("insuranceqa").read_options({"pool_size": 500})
    assert insurance.pool_size == 500
    assert (
        get_dataset("msmarco-passage").read_options({"train_queries": "all"}).train_queries == "all"
    )
    with pytest.raises(
        ConfigError, match=r"protocol\.webap\.options\.seed: expected an integer, got '1'"
    ):
        get_dataset("webap").read_options({"seed": "1"})


# -- variant settings beside the variant ---------------------------------------------------------


def test_presets_are_the_variant_settings_defaults_and_valid_training_values():
    from reranklab.models.variants.dmn import DmnSettings

    assert get_variant("dmn").defaults == DmnSettings.preset()
    assert get_variant("dmn").defaults["validation"] == {
        "measure": "MAP",
        "select_best": True,
        "patience": 3,
    }
    model = study_model().model_fields["training"].annotation
    for name in variant_names():
        model.model_validate(get_variant(name).defaults, strict=True)


def test_variant_settings_are_typed_and_an_explicit_zero_is_kept():
    from reranklab.models.variants.chunked import ChunkedSettings
    from reranklab.models.variants.dmn import head_options
    from reranklab.models.variants.marked import MarkedSettings
    from reranklab.models.variants.qa_lstm import QaLstmSettings

    dmn = resolve_training({"variants": {"dmn": {"head_dropout": 0}}}, "dmn")
    assert head_options(dmn) == {"hidden": 256, "episodes": 4, "dropout": 0.0}
    qa = QaLstmSettings.from_training(
        resolve_training({"variants": {"qa_lstm": {"head_dropout": 0.0}}}, "qa_lstm")
    )
    assert (qa.head_dropout, qa.lstm_hidden, qa.margin, qa.warmup_ratio) == (0.0, 256, 0.2, 0.0)
    # null keeps the paper's value, unless null means something of its own
    assert head_options({"episodes": None})["episodes"] == 4
    assert ChunkedSettings.from_training({"chunk_length": None}).chunk_length is None
    assert MarkedSettings.from_training({"marker_stopwords": None}).marker_stopwords is None
    shared = training_view(
        {"max_grad_norm": 0, "warmup_ratio": 0, "threads": 0, "dataloader_workers": 0}
    )
    assert (shared.max_grad_norm, shared.warmup_ratio, shared.eval_batch_size) == (0.0, 0.0, 128)
    with pytest.raises(
        ConfigError, match=r"training\.episodes: expected an integer >= 1, got 'four'"
    ):
        head_options({"episodes": "four"})


def test_a_variant_setting_is_declared_once_and_its_schema_text_generated(repo):
    training = yaml.safe_load((repo / SCHEMA).read_text())["$defs"]["Training"]["properties"]
    assert (
        training["episodes"]["description"]
        == "dmn, dmn_lite only - passes of the episodic memory (BERT-DMN 4); null = the variant's default (4)."
    )
    assert (
        "0.1 for bert, bert_lite, dmn, dmn_lite; 0.5 for qa_lstm"
        in training["head_dropout"]["description"]
    )
    assert (
        training["episodes"]["type"] == ["integer", "null"] and training["episodes"]["minimum"] == 1
    )

    class A(VariantSettings):
        episodes: int = Field(4, ge=1, description="passes")

    class B(VariantSettings):
        episodes: int = Field(8, ge=1, description="passes")

    class C(VariantSettings):
        episodes: int = Field(4, ge=2, description="passes")

    declared = [("a", A.model_fields["episodes"]), ("b", B.model_fields["episodes"])]
    assert (
        describe("episodes", declared)
        == "a, b only - passes; null = the variant's default (4 for a; 8 for b)."
    )
    annotation, field = merged_field("episodes", declared)
    assert (
        field.default is None
        and training_model((("a", A), ("b", B))).model_fields["episodes"].default is None
    )
    with pytest.raises(TypeError, match="another type or range"):
        merged_field("episodes", [*declared, ("c", C.model_fields["episodes"])])


def test_fingerprint_and_job_settings_leave_out_the_flagged_keys(repo, tmp_path):
    from types import SimpleNamespace

    from reranklab.config import with_defaults
    from reranklab.settings.job import ModelSpec
    from reranklab.training.checkpoint import OPERATIONAL_KEYS
    from reranklab.workflow.plan import StudyPlan

    assert OPERATIONAL_KEYS == set(NOT_FINGERPRINTED_KEYS) == {*NOT_MODEL_KEYS, "threads"}
    assert (
        set(RUN_OPTION_KEYS)
        == {"checkpoint_every", "keep_checkpoints", "delete_checkpoints", "gpu_slots", "gpu_share"}
        <= set(NOT_MODEL_KEYS)
    )
    # The jobs' specs: a train job's holds no key that changes no model; a rerank job's keeps
    # its inference batch (a changed batch re-ranks again) but no run option.
    study = write(
        tmp_path / "study.yaml", {"datasets": ["sample"], "grid": {"variant": ["pointwise"]}}
    )
    plan = StudyPlan(with_defaults(load_params([repo / "params.yaml", study])), cores=2)
    job = SimpleNamespace(
        dataset="sample", variant="pointwise", max_length="256", fold="0", seed_dir=""
    )
    train = ModelSpec.parse(plan.train_spec(job)).training
    rerank = ModelSpec.parse(plan.rerank_spec(job)).training
    assert not set(train) & set(NOT_MODEL_KEYS) and "threads" in train
    assert "eval_batch_size" in rerank and not set(rerank) & set(RUN_OPTION_KEYS)


# -- the Cell name ----------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["pointwise-L256", "dmn_lite-L64/seed3", "bm25", "pool"])
def test_cell_names_round_trip(name):
    for seeds in (False, True):
        pattern = re.compile(Cell.pattern(seeds))
        expected = name in ("bm25", "pool") or ("/seed" in name) == seeds
        assert bool(pattern.fullmatch(name)) == expected
    cell = Cell.parse("wikiqa", name)
    assert cell.name == name and Cell.parse("wikiqa", cell.name) == cell
    assert cell.key == "wikiqa/" + name.replace("-L", "/L")
    assert cell.without_seed().seed is None


def test_cell_rejects_what_is_not_a_cell():
    for bad in ("pointwise-L256/3", "Pointwise", "pointwise-256"):
        with pytest.raises(ValueError, match="not a cell name"):
            Cell.parse("wikiqa", bad)
    with pytest.raises(ValueError, match="first-stage cell has no seed"):
        Cell("wikiqa", "bm25", None, 3)
    assert (
        Cell("wikiqa", "bertlets", 64, 2).path("models", "fold0")
        == "results/models/wikiqa/bertlets-L64/seed2/fold0"
    )
