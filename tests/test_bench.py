"""``reranklab bench`` runs both engines on the same pairs and model (no timing is asserted)."""

from __future__ import annotations

import json

import pytest

from reranklab.bench import BenchSettings, format_report, peak_bf16_tflops, run_bench
from reranklab.cli import main


@pytest.fixture(scope="module")
def train_report(tiny_bert):
    settings = BenchSettings(
        "train",
        "pointwise",
        128,  # longer than any sampled pair, so dynamic padding shows
        device="cpu",
        encoder=str(tiny_bert),
        pairs=40,
        batch_size=8,
        seed=3,
    )
    return run_bench(settings, progress=False)


def test_bench_train_runs_both_engines_on_the_same_pairs(train_report, tiny_bert):
    report = train_report
    engine, baseline = report["engine"], report["baseline"]
    assert (report["mode"], report["variant"], report["dataset"], report["device"]) == (
        "train",
        "pointwise",
        "sample",
        "cpu",
    )
    assert report["examples"] == 40 and engine["pairs"] == baseline["pairs"] == 40
    assert engine["steps"] == baseline["steps"] == 5
    # The same word pieces: the baseline pads every pair to max length, the engine per batch.
    assert engine["tokens"] == baseline["tokens"] > 0
    assert baseline["padded_tokens"] == 40 * 128
    assert engine["tokens"] <= engine["padded_tokens"] < baseline["padded_tokens"]
    assert engine["precision"] == "fp32" and engine["accumulation_steps"] == 1
    for row in (engine, baseline):
        assert (
            row["pairs_per_s"] > 0 and row["seconds"] > 0 and row["mfu"] is None
        )  # no peak on CPU
    assert (
        report["ratio"] == pytest.approx(engine["pairs_per_s"] / baseline["pairs_per_s"])
        and report["ratio"] > 0
    )
    assert 0 < report["ratio_with_tokenisation"] <= report["ratio"]
    assert report["parameters"] > report["non_embedding_parameters"] > 0
    text = format_report(report)
    assert "engine" in text and "baseline" in text and f"{report['ratio']:.2f}x" in text
    json.dumps(report)


def test_bench_rerank_scores_agree_between_the_engines(tiny_bert):
    settings = BenchSettings(
        "rerank",
        "bertlets",
        64,
        device="cpu",
        encoder=str(tiny_bert),
        pairs=45,
        batch_size=8,
        eval_batch_size=16,
    )
    report = run_bench(settings, progress=False)
    engine, baseline = report["engine"], report["baseline"]
    # Whole candidate lists (BM25 top-30 of sample) until at least 45 pairs: two queries.
    assert report["queries"] == 2 and engine["pairs"] == baseline["pairs"] == 60
    assert (engine["batch_size"], baseline["batch_size"]) == (16, 8)
    assert engine["tokens"] == baseline["tokens"] and baseline["padded_tokens"] == 60 * 64
    assert report["max_score_difference"] < 1e-4  # same model, same word pieces, other padding
    assert report["ratio"] > 0


def test_bench_command_line_writes_json(tiny_bert, tmp_path, capsys):
    out = tmp_path / "bench.json"
    code = main(
        [
            "bench",
            "rerank",
            "--variant",
            "pointwise",
            "--max-length",
            "32",
            "--device",
            "cpu",
            "--encoder",
            str(tiny_bert),
            "--pairs",
            "10",
            "--batch-size",
            "4",
            "--json",
            str(out),
        ]
    )
    assert code == 0
    printed = capsys.readouterr().out
    assert "ratio (engine / baseline pairs/s)" in printed
    report = json.loads(out.read_text())
    assert report["engine"]["pairs"] == report["baseline"]["pairs"] == 30
    assert report["settings"]["max_length"] == 32
    code = main(
        [
            "bench",
            "train",
            "--variant",
            "nope",
            "--max-length",
            "32",
            "--device",
            "cpu",
            "--encoder",
            str(tiny_bert),
        ]
    )
    assert code == 2 and "unknown variant 'nope'" in capsys.readouterr().err


def test_peak_table():
    assert peak_bf16_tflops("NVIDIA H100 80GB HBM3") == 989.4
    assert peak_bf16_tflops("NVIDIA H200") == 989.4
    assert peak_bf16_tflops("NVIDIA A100-SXM4-80GB") == 312.0
    assert peak_bf16_tflops("NVIDIA L4") == 121.0
    assert peak_bf16_tflops("NVIDIA L40S") == 362.05
    assert peak_bf16_tflops("Tesla T4") is None  # no bf16 tensor cores


def test_bench_measures_the_peers_on_the_same_checkpoint(tiny_bert):
    pytest.importorskip("accelerate", reason="the Trainer peer needs accelerate")
    pytest.importorskip("datasets", reason="the CrossEncoder peer needs datasets")
    settings = BenchSettings(
        "rerank",
        "pointwise",
        64,
        device="cpu",
        encoder=str(tiny_bert),
        pairs=30,
        eval_batch_size=8,
        against=("trainer", "crossencoder"),
    )
    report = run_bench(settings, progress=False)
    assert sorted(report["peers"]) == ["crossencoder", "trainer"]
    for name, peer in report["peers"].items():
        assert (
            peer["pairs"] == report["engine"]["pairs"]
            and peer["tokens"] == report["engine"]["tokens"]
        )
        # The same standard checkpoint and word pieces: the same scores as the engine's.
        assert report["peer_max_score_difference"][name] < 1e-5
        assert report["ratios"][name] == pytest.approx(
            report["engine"]["pairs_per_s"] / peer["pairs_per_s"]
        )
    assert "ratio (engine / crossencoder pairs/s)" in format_report(report)


def test_bench_trains_the_peers_on_the_same_pairs(tiny_bert):
    pytest.importorskip("accelerate", reason="the Trainer peer needs accelerate")
    pytest.importorskip("datasets", reason="the CrossEncoder peer needs datasets")
    settings = BenchSettings(
        "train",
        "pointwise",
        64,
        device="cpu",
        encoder=str(tiny_bert),
        pairs=24,
        batch_size=8,
        against=("trainer", "crossencoder"),
    )
    report = run_bench(settings, progress=False)
    for name in ("trainer", "crossencoder"):
        peer = report["peers"][name]
        assert peer["pairs"] == report["engine"]["pairs"] == 24
        assert peer["steps"] == 3 and peer["pairs_per_s"] > 0
    assert json.loads(json.dumps(report, default=str))["peers"]["trainer"]["pairs_per_s"] > 0


def test_bench_refuses_unknown_peers_and_pairwise_variants(tiny_bert):
    from reranklab.errors import ConfigError

    with pytest.raises(ConfigError, match="unknown peer"):
        run_bench(BenchSettings("rerank", "pointwise", 64, encoder=str(tiny_bert), against=("x",)))
    with pytest.raises(ConfigError, match="--variant pointwise"):
        run_bench(
            BenchSettings("train", "bertlets", 64, encoder=str(tiny_bert), against=("trainer",))
        )


# -- bench-suite: runs kept as data, one table written into a Markdown file ------------------


def test_packaged_suites_are_valid():
    from reranklab.bench.suite import load_suite, run_settings, suite_path

    for name in ("gpu", "cpu"):
        suite = load_suite(suite_path(name))
        settings = [run_settings(suite, run) for run in suite["runs"]]
        assert {s.mode for s in settings} == {"train", "rerank"}
        assert any(s.against == ("trainer", "crossencoder") for s in settings)
        assert any(s.packing for s in settings)
    assert {s.device for s in settings} == {"cpu"}


def test_suite_errors_name_the_file_and_the_run(tmp_path):
    from reranklab.bench.suite import load_suite, replace_section, suite_path
    from reranklab.errors import ConfigError

    path = tmp_path / "mine.yaml"
    path.write_text(
        "name: mine\nruns:\n  - {label: ok, mode: train, variant: pointwise, max_length: 32}\n  - {label: bad, mode: train, variant: pointwise, max_length: 32, batch: 4}\n"
    )
    with pytest.raises(
        ConfigError, match=r"mine.yaml: runs\[1\] \(bad\): unknown field\(s\) batch"
    ):
        load_suite(path)
    path.write_text("name: mine\nruns:\n  - {label: short, mode: train}\n")
    with pytest.raises(ConfigError, match=r"runs\[0\] \(short\).*variant"):
        load_suite(path)
    with pytest.raises(ConfigError, match="no suite 'nope'"):
        suite_path("nope")
    with pytest.raises(
        ConfigError, match="README.md: needs one line <!-- bench-suite:mine:start -->"
    ):
        replace_section("no markers\n", "mine", "table\n", "README.md")


def test_suite_command_writes_its_table_between_the_markers(tiny_bert, tmp_path, capsys):
    suite = tmp_path / "tiny.yaml"
    suite.write_text(
        "name: tiny\ntitle: Tiny\n"
        f"defaults: {{variant: pointwise, max_length: 32, device: cpu, encoder: '{tiny_bert}', threads: 1}}\n"
        "runs:\n"
        "  - {label: train, mode: train, pairs: 16, batch_size: 4, against: [trainer]}\n"
        "  - {label: re-rank packed, mode: rerank, pairs: 10, batch_size: 4, packing: true}\n"
    )
    doc = tmp_path / "BENCH.md"
    doc.write_text(
        "# Bench\n\nintro\n<!-- bench-suite:tiny:start -->\nold table\n<!-- bench-suite:tiny:end -->\noutro\n"
    )
    code = main(["bench-suite", str(suite), "--update", str(doc), "--json", str(tmp_path / "json")])
    assert code == 0
    text = doc.read_text()
    assert text.startswith("# Bench\n\nintro\n<!-- bench-suite:tiny:start -->\nTiny: ")
    assert text.endswith("<!-- bench-suite:tiny:end -->\noutro\n") and "old table" not in text
    rows = [line for line in text.splitlines() if line.startswith("| ")]
    assert (
        rows[0].startswith("| run | precision | engine pairs/s |")
        and "HF `Trainer` pairs/s" in rows[0]
    )
    assert rows[1].startswith("| train | fp32 |") and rows[1].endswith("× |")
    assert rows[2].startswith("| re-rank packed | fp32 |") and rows[2].endswith("| – | – |")
    assert sorted(p.name for p in (tmp_path / "json").iterdir()) == [
        "00-train.json",
        "01-re-rank-packed.json",
    ]
    assert json.loads((tmp_path / "json" / "01-re-rank-packed.json").read_text())["settings"][
        "packing"
    ]
    assert "| train | fp32 |" in capsys.readouterr().out
    # Missing markers are found before anything is measured.
    doc.write_text("no markers\n")
    assert main(["bench-suite", str(suite), "--update", str(doc)]) == 2
    assert "bench-suite:tiny:start" in capsys.readouterr().err
