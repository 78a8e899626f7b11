"""Model selection on dev (training.validation): per-epoch dev scores, the best epoch's weights,
early stopping, exact resume, the errors, the held-out dev of CV folds, and the dev curve in MLflow."""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
from pathlib import Path

import pandas as pd
import pytest
import torch
import yaml

from reranklab.cli import main
from reranklab.config import resolve_training, study_dev_fraction
from reranklab.errors import ConfigError
from reranklab.evaluation import evaluate_run
from reranklab.evaluation.protocol import default_scoring
from reranklab.io import read_folds, write_json, write_qrels, write_run
from reranklab.models.registry import load_model
from reranklab.splits import hold_out_dev, kfold
from reranklab.tracking.mlflow_tracking import validation_metrics
from reranklab.training.checkpoint import FileCheckpointer
from reranklab.training.inference import rerank, rerank_with_model
from reranklab.training.trainer import TrainState, train_model
from reranklab.training.validation import (
    DevSet,
    ModelSelector,
    ValidationSettings,
    validation_settings,
)
from tests.conftest import tool_env
from tests.helpers_models import (
    CORPUS,
    QIDS,
    QUERIES,
    build_toy_bert,
    candidates,
    model_spec,
    negatives,
    positive,
    toy_cell,
    write_examples,
)

# 32 point-wise toy examples, batch 4: 8 steps an epoch. A high rate so that epochs differ.
BASE = {"learning_rate": 3e-3, "deterministic": True, "threads": 1}
STEPS_PER_EPOCH = 8
# A dev set that training works against: each query's first negative is marked relevant, so
# the dev MAP rises and falls as training pushes the true answers up (the best epoch is not
# the last one, and the measure stops improving).
ADVERSE = {qid: {negatives(qid)[0]: 1, positive(qid): 0} for qid in QIDS}
TRUE = {qid: {positive(qid): 1} for qid in QIDS}


@pytest.fixture(autouse=True)
def _restore_determinism():
    # train_model(deterministic=True) switches torch globally; leave other tests as they were.
    enabled, cublas = (
        torch.are_deterministic_algorithms_enabled(),
        os.environ.get("CUBLAS_WORKSPACE_CONFIG"),
    )
    yield
    torch.use_deterministic_algorithms(enabled)
    if cublas is None:
        os.environ.pop("CUBLAS_WORKSPACE_CONFIG", None)


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    work = tmp_path_factory.mktemp("validation")
    return {
        "work": work,
        "bert": build_toy_bert(work / "bert"),
        "examples": write_examples(work / "examples.parquet", "pointwise"),
    }


def _cell(toy, epochs: int, validate: bool = True, **validation) -> dict:
    extra = {"validation": {"measure": "MAP", **validation}} if validate else {}
    return toy_cell("pointwise", toy["bert"], epochs=epochs, **BASE, **extra)


def _dev(qrels=ADVERSE) -> DevSet:
    return DevSet(list(QIDS), candidates(), qrels, default_scoring(), "fold0")


def _without_seconds(history: list[dict]) -> list[dict]:
    return [{k: v for k, v in item.items() if k != "seconds"} for item in history]


class Snapshots:
    """A checkpointer that keeps a copy of the weights at the end of every epoch."""

    def __init__(self) -> None:
        self.weights: dict[int, dict[str, torch.Tensor]] = {}

    def restore(self, state: TrainState) -> None:
        return None

    def step_done(self, state: TrainState) -> None:
        if state.step_in_epoch == state.steps_per_epoch:
            self.weights[state.epoch + 1] = {
                k: v.detach().clone() for k, v in state.model.state_dict().items()
            }

    def finished(self, state: TrainState, model_dir: Path) -> None:
        return None


@pytest.fixture(scope="module")
def plain(toy):
    """Five epochs without validation, and the weights after each one."""
    snapshots = Snapshots()
    stats = train_model(
        _cell(toy, 5, validate=False),
        toy["examples"],
        QUERIES,
        CORPUS,
        toy["work"] / "plain",
        checkpointer=snapshots,
        progress=False,
    )
    assert sorted(snapshots.weights) == [1, 2, 3, 4, 5] and "validation" not in stats
    return snapshots.weights


def _rerank_weights(toy, weights: dict[str, torch.Tensor]) -> dict:
    model = load_model(toy["work"] / "plain", device=torch.device("cpu"))
    model.load_state_dict(weights)
    return rerank_with_model(
        model, candidates(), QIDS, QUERIES, CORPUS, batch_size=8, progress=False
    )


def test_every_epoch_is_scored_on_dev_with_the_datasets_scoring(toy, plain, tmp_path):
    stats = train_model(
        _cell(toy, 5, select_best=False),
        toy["examples"],
        QUERIES,
        CORPUS,
        tmp_path / "m",
        progress=False,
        dev=_dev(TRUE),
    )
    selection = stats["validation"]
    assert [h["epoch"] for h in selection["history"]] == [1, 2, 3, 4, 5]
    assert [h["step"] for h in selection["history"]] == [8, 16, 24, 32, 40]
    measures = [m.name for m in default_scoring().measures]
    assert all(set(measures) <= set(h) and h["queries"] == len(QIDS) for h in selection["history"])
    # Each epoch's dev MAP is that of the weights reached by then (validating changes no training).
    for item in selection["history"]:
        run = _rerank_weights(toy, plain[item["epoch"]])
        assert (
            item["MAP"]
            == evaluate_run(run, TRUE, QIDS, scoring=default_scoring())["aggregate"]["MAP"]
        )
    assert (selection["chosen_epoch"], selection["chosen_because"], selection["stopped"]) == (
        5,
        "last epoch trained",
        "completed",
    )
    saved = load_model(tmp_path / "m", device=torch.device("cpu")).state_dict()
    assert all(torch.equal(saved[k], v) for k, v in plain[5].items())
    assert (
        selection["dev_queries"] == selection["dev_queries_counted"] == len(QIDS)
        and selection["scoring"] == "default"
    )


def test_select_best_saves_the_best_epochs_weights_exactly(toy, plain, tmp_path):
    stats = train_model(
        _cell(toy, 5),
        toy["examples"],
        QUERIES,
        CORPUS,
        tmp_path / "best",
        progress=False,
        dev=_dev(),
    )
    selection = stats["validation"]
    scores = [h["MAP"] for h in selection["history"]]
    best = selection["best_epoch"]
    assert best == scores.index(max(scores)) + 1 < 5, scores  # the first best; not the last epoch
    assert selection["chosen_epoch"] == best and selection["chosen_because"] == "best dev MAP"
    assert stats["steps"] == 5 * STEPS_PER_EPOCH  # no patience: every epoch trained
    saved = load_model(tmp_path / "best", device=torch.device("cpu")).state_dict()
    assert all(torch.equal(saved[k], v) for k, v in plain[best].items())
    run = rerank(
        tmp_path / "best",
        candidates(),
        QIDS,
        QUERIES,
        CORPUS,
        batch_size=8,
        device="cpu",
        progress=False,
    )
    assert run == _rerank_weights(toy, plain[best])
    assert run != _rerank_weights(toy, plain[5])


def test_patience_stops_training_early(toy, plain, tmp_path):
    stats = train_model(
        _cell(toy, 5, patience=2),
        toy["examples"],
        QUERIES,
        CORPUS,
        tmp_path / "early",
        progress=False,
        dev=_dev(),
    )
    selection = stats["validation"]
    trained = selection["epochs_trained"]
    assert selection["stopped"] == "early_stopping" and trained == selection["best_epoch"] + 2 < 5
    assert "did not improve for 2 epochs" in selection["stop_reason"]
    assert stats["steps"] == trained * STEPS_PER_EPOCH and len(selection["history"]) == trained
    assert len(stats["epoch_losses"]) == trained
    saved = load_model(tmp_path / "early", device=torch.device("cpu")).state_dict()
    assert all(torch.equal(saved[k], v) for k, v in plain[selection["best_epoch"]].items())


class Crash(RuntimeError):
    pass


class CrashingCheckpointer(FileCheckpointer):
    """Writes checkpoints as usual, then dies right after the one at ``crash_at``."""

    def __init__(self, *args, crash_at: int, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.crash_at = crash_at

    def step_done(self, state: TrainState) -> None:
        super().step_done(state)
        if state.global_step == self.crash_at:
            self._release_lock()  # a dead process's lock goes with it
            raise Crash(f"killed at step {state.global_step}")


@pytest.mark.parametrize(
    ("every", "crash_at"), [(0, 24), (5, 20)], ids=["after-epoch-3", "mid-epoch-3"]
)
def test_a_resumed_job_makes_the_same_choice(toy, tmp_path, every, crash_at):
    cell = _cell(toy, 5, patience=2)
    reference = train_model(
        cell, toy["examples"], QUERIES, CORPUS, tmp_path / "reference", progress=False, dev=_dev()
    )
    assert (
        reference["validation"]["epochs_trained"] * STEPS_PER_EPOCH > crash_at
    )  # it dies before the end
    directory = tmp_path / "checkpoints"
    with pytest.raises(Crash):
        crashing = CrashingCheckpointer(
            directory, "fp", every=every, delete_when_done=False, crash_at=crash_at
        )
        train_model(
            cell,
            toy["examples"],
            QUERIES,
            CORPUS,
            tmp_path / "resumed",
            checkpointer=crashing,
            progress=False,
            dev=_dev(),
        )
    resumer = FileCheckpointer(directory, "fp", every=every)
    stats = train_model(
        cell,
        toy["examples"],
        QUERIES,
        CORPUS,
        tmp_path / "resumed",
        checkpointer=resumer,
        progress=False,
        dev=_dev(),
    )
    assert resumer.resumed_from == crash_at and stats["resumed_from_step"] == crash_at
    # The restored history, best epoch, its weights and the patience count give the same choice.
    assert _without_seconds(stats["validation"]["history"]) == _without_seconds(
        reference["validation"]["history"]
    )
    for key in ("best_epoch", "best_score", "chosen_epoch", "epochs_trained", "stopped"):
        assert stats["validation"][key] == reference["validation"][key], key
    ours = load_model(tmp_path / "resumed", device=torch.device("cpu")).state_dict()
    theirs = load_model(tmp_path / "reference", device=torch.device("cpu")).state_dict()
    assert all(torch.equal(ours[k], v) for k, v in theirs.items())


def test_ties_keep_the_earlier_epoch_and_the_selector_round_trips():
    selector = ModelSelector(ValidationSettings("MAP", patience=3))
    model = torch.nn.Linear(2, 1)
    for epoch, value in enumerate([0.5, 0.7, 0.7, 0.6], start=1):
        with torch.no_grad():
            model.weight.fill_(epoch)
        selector.update(epoch, epoch * 10, {"MAP": value, "MRR": None}, model)
    assert (selector.best_epoch, selector.bad_epochs, selector.stopped_early) == (2, 2, False)
    assert torch.equal(selector.best_state["weight"], torch.full((1, 2), 2.0))
    again = ModelSelector(ValidationSettings("MAP", patience=3))
    again.load_state_dict(selector.state_dict())
    again.update(5, 50, {"MAP": 0.7})  # another tie: still epoch 2, and now patience runs out
    assert (again.best_epoch, again.stopped_early) == (2, True)
    assert again.finish(model, 5) == 2 and torch.equal(model.weight, torch.full((1, 2), 2.0))


def test_settings_come_from_the_presets_and_layer_key_by_key():
    assert "validation" not in resolve_training({}, "pointwise")  # off: the cell is unchanged
    assert validation_settings(resolve_training({}, "bertsel")) == ValidationSettings("MAP")
    assert validation_settings(resolve_training({}, "dmn")) == ValidationSettings("MAP", patience=3)
    patient = resolve_training({"variants": {"dmn": {"validation": {"patience": 5}}}}, "dmn")
    assert validation_settings(patient) == ValidationSettings("MAP", patience=5)
    assert "validation" not in resolve_training({"variants": {"dmn": {"validation": None}}}, "dmn")
    shared = {"training": {"validation": {"measure": "MRR", "dev_fraction": 0.2}}}
    assert validation_settings(resolve_training(shared, "pointwise")) == ValidationSettings(
        "MRR", dev_fraction=0.2
    )
    assert (
        study_dev_fraction(
            {"training": {"validation": {"dev_fraction": 0.2}}}, ["pointwise", "dmn"]
        )
        == 0.2
    )
    with pytest.raises(
        ConfigError,
        match=r"variants\.dmn\.validation\.dev_fraction: 0\.3 differs from the study's 0\.0",
    ):
        study_dev_fraction({"variants": {"dmn": {"validation": {"dev_fraction": 0.3}}}}, ["dmn"])


def test_an_unknown_measure_or_an_empty_dev_stops_before_training(toy, tmp_path):
    with pytest.raises(
        ConfigError,
        match=r"training\.validation\.measure: 'MAPP' is not a measure of the scoring 'default'",
    ):
        train_model(
            toy_cell("pointwise", toy["bert"], validation={"measure": "MAPP"}),
            toy["examples"],
            QUERIES,
            CORPUS,
            tmp_path / "m",
            dev=_dev(),
        )
    empty = DevSet([], candidates(), TRUE, default_scoring(), "fold3")
    with pytest.raises(
        ConfigError, match=r"fold3 has no dev queries.*training\.validation\.dev_fraction"
    ):
        train_model(_cell(toy, 2), toy["examples"], QUERIES, CORPUS, tmp_path / "m", dev=empty)
    unjudged = DevSet(["q1"], candidates(), {"q1": {"p1": 0}}, default_scoring(), "fold0")
    with pytest.raises(ConfigError, match="counts none of its 1 dev queries"):
        train_model(_cell(toy, 2), toy["examples"], QUERIES, CORPUS, tmp_path / "m", dev=unjudged)
    assert not (tmp_path / "m").exists()


def test_a_lite_variant_validates_from_its_features(toy, tmp_path):
    cell = toy_cell(
        "bert_lite", toy["bert"], epochs=2, learning_rate=1e-2, validation={"measure": "MRR"}
    )
    triplets = write_examples(tmp_path / "triplets.parquet", "bert_lite")
    stats = train_model(
        cell, triplets, QUERIES, CORPUS, tmp_path / "lite", progress=False, dev=_dev(TRUE)
    )
    assert [h["epoch"] for h in stats["validation"]["history"]] == [1, 2]
    assert stats["validation"]["chosen_epoch"] == stats["validation"]["best_epoch"]


def _write_inputs(work: Path, qids: list[str]) -> dict[str, Path]:
    qrels = {q: {positive(q): 1} for q in qids}
    paths = {
        "qrels": work / "qrels.txt",
        "split": work / "split.json",
        "candidates": work / "candidates.run",
        "folds": work / "folds.json",
    }
    write_qrels(paths["qrels"], qrels)
    write_json(paths["split"], {})
    write_run(
        paths["candidates"],
        {q: {pid: 4.0 - i for i, pid in enumerate([positive(q), *negatives(q)])} for q in qids},
        tag="toy",
    )
    return paths


def test_dev_fraction_holds_out_a_seeded_disjoint_part_that_sample_never_uses(tmp_path):
    qids = [f"q{i}" for i in range(1, 9)]
    paths = _write_inputs(tmp_path, qids)
    protocol = {"negatives_per_positive": 2, "relevance_threshold": 1}

    def split(out: Path, **extra) -> list:
        spec = json.dumps({"protocol": {"split": "cv", "folds": 2}, "seed": 7, **extra})
        assert (
            main(
                [
                    "split",
                    "--dataset",
                    "toy",
                    "--qrels",
                    str(paths["qrels"]),
                    "--split-file",
                    str(paths["split"]),
                    "--out",
                    str(out),
                    "--spec",
                    spec,
                ]
            )
            == 0
        )
        return read_folds(out)

    plain, held, again = (
        split(tmp_path / "plain.json"),
        split(paths["folds"], dev_fraction=0.25),
        split(tmp_path / "again.json", dev_fraction=0.25),
    )
    assert held == again and held.meta == {"dev_fraction": 0.25, "dev_seed": 7}
    for before, fold in zip(plain.folds, held.folds, strict=True):
        assert before.dev == [] and len(fold.dev) == math.ceil(0.25 * len(before.train)) == 1
        assert fold.test == before.test and sorted(fold.train + fold.dev) == before.train
        assert not set(fold.dev) & set(fold.train) and not set(fold.dev) & set(fold.test)
    # Seeded: other seeds hold out other queries (of twenty), the same seed the same ones.
    many = kfold([f"q{i:02d}" for i in range(40)], 2, seed=1)
    choices = {tuple(hold_out_dev(many, 0.25, seed).folds[0].dev) for seed in range(5)}
    assert len(choices) > 1 and hold_out_dev(many, 0.25, 3) == hold_out_dev(many, 0.25, 3)
    assert hold_out_dev(many, 0.0, 3) == many

    for k, fold in enumerate(held.folds):
        out = {name: tmp_path / f"{name}{k}.parquet" for name in ("pointwise", "triplets")}
        spec = json.dumps({"protocol": protocol, "seed": 7})
        assert (
            main(
                [
                    "sample",
                    "--candidates",
                    str(paths["candidates"]),
                    "--qrels",
                    str(paths["qrels"]),
                    "--folds",
                    str(paths["folds"]),
                    "--fold",
                    str(k),
                    "--out-pointwise",
                    str(out["pointwise"]),
                    "--out-triplets",
                    str(out["triplets"]),
                    "--spec",
                    spec,
                ]
            )
            == 0
        )
        used = set(pd.read_parquet(out["pointwise"])["qid"]) | set(
            pd.read_parquet(out["triplets"])["qid"]
        )
        assert used == set(fold.train) and not used & set(fold.dev)


def test_the_train_step_reads_the_dev_set_of_its_fold(toy, tmp_path):
    paths = _write_inputs(tmp_path, list(QIDS))
    write_json(
        paths["folds"],
        {
            "dataset": "toy",
            "kind": "cv",
            "seed": 1,
            "folds": [{"name": "fold0", "train": QIDS[:6], "dev": QIDS[6:], "test": []}],
        },
    )
    (tmp_path / "queries.tsv").write_text("".join(f"{q}\t{t}\n" for q, t in QUERIES.items()))
    pd.DataFrame({"pid": list(CORPUS), "text": list(CORPUS.values())}).to_parquet(
        tmp_path / "corpus.parquet", index=False
    )
    cell = {**_cell(toy, 2), "scoring": default_scoring().as_dict()}
    cell["training"].pop("eval_batch_size")  # as the train rule passes it: a run option
    command = [
        "train",
        "--examples",
        str(toy["examples"]),
        "--queries",
        str(tmp_path / "queries.tsv"),
        "--corpus",
        str(tmp_path / "corpus.parquet"),
        "--out-dir",
        str(tmp_path / "model"),
        "--spec",
        model_spec(cell),
    ]
    assert main(command) == 2  # validation on, no dev inputs: a clear error
    dev = [
        "--candidates",
        str(paths["candidates"]),
        "--qrels",
        str(paths["qrels"]),
        "--folds",
        str(paths["folds"]),
        "--fold",
        "0",
        "--eval-batch-size",
        "4",
    ]
    assert main(command + dev) == 0
    selection = json.loads((tmp_path / "model" / "train_stats.json").read_text())["validation"]
    assert (
        selection["dev_queries"] == 2
        and selection["fold"] == "fold0"
        and len(selection["history"]) == 2
    )


def test_the_dev_curve_goes_to_mlflow_with_the_epoch_as_step():
    stats = {
        "epochs": 3,
        "validation": {
            "history": [
                {"epoch": e, "step": 8 * e, "MAP": 0.1 * e, "P@1": 0.5, "queries": 4}
                for e in (1, 2)
            ],
            "best_epoch": 2,
            "chosen_epoch": 2,
            "epochs_trained": 2,
            "best_score": 0.2,
            "measure": "MAP",
        },
    }
    points = validation_metrics(stats)
    assert [(n, s) for n, _, s in points if n == "dev.MAP"] == [("dev.MAP", 1), ("dev.MAP", 2)]
    assert ("dev.P_at_1", 0.5, 2) in points and ("dev.chosen_epoch", 2.0, 0) in points
    assert validation_metrics({"epochs": 3}) == []


@pytest.mark.integration
def test_the_workflow_passes_dev_inputs_only_to_jobs_that_validate(repo, tmp_path):
    for name in ("Snakefile", "envs", "params.yaml", "workflow", "config", "studies"):
        source = repo / name
        (shutil.copytree if source.is_dir() else shutil.copy)(source, tmp_path / name)
    config = {
        "study": "v",
        "datasets": ["sample"],
        "grid": {"variant": ["pointwise", "bertsel"], "max_length": [64]},
        "protocol": {"sample": {"folds": 2}},
    }

    def dry_run(extra: dict) -> subprocess.CompletedProcess:
        (tmp_path / "config/v.yaml").write_text(yaml.safe_dump({**config, **extra}))
        command = [
            "snakemake",
            "--cores",
            "1",
            "--dry-run",
            "--printshellcmds",
            "--configfile",
            "config/v.yaml",
        ]
        return subprocess.run(
            command, cwd=tmp_path, env=tool_env(), capture_output=True, text=True, timeout=300
        )

    refused = dry_run({})  # bertsel's preset validates; sample's CV folds have no dev
    assert (
        refused.returncode != 0
        and "variants.bertsel.validation: null" in refused.stdout + refused.stderr
    )
    assert "training.validation.dev_fraction" in refused.stdout + refused.stderr
    result = dry_run({"training": {"validation": {"dev_fraction": 0.2}}})
    assert result.returncode == 0, result.stderr[-3000:]
    commands = [
        line
        for line in result.stdout.splitlines()
        if "reranklab train" in line or "reranklab split" in line
    ]
    trains = {
        variant: [c for c in commands if f"/{variant}-L64/" in c]
        for variant in ("pointwise", "bertsel")
    }
    assert all(
        "--folds results/splits/sample/folds.json --fold" in c and '"scoring"' in c
        for c in trains["bertsel"]
    )
    assert not any(
        "--folds" in c or '"scoring"' in c or '"validation"' in c for c in trains["pointwise"]
    )
    assert any('"dev_fraction": 0.2' in c for c in commands if "reranklab split" in c)
