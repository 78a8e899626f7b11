"""``reranklab bench-data`` measures what it says, on small synthetic files (no timing asserted)."""

from __future__ import annotations

import json
import subprocess
import sys

from reranklab.bench.data import bench_corpus, bench_extract, wanted_pids


def test_corpus_bench_reads_the_same_passages_both_ways(tmp_path):
    report = bench_corpus(passages=30_000, wanted=300, work_dir=tmp_path, row_group=5_000)
    assert (report["passages"], report["wanted"]) == (30_000, 300)
    assert report["full"]["seconds"] > 0 and report["subset"]["seconds"] > 0
    assert (
        report["full"]["peak_mib"] > report["subset"]["peak_mib"] >= 0
    )  # a child process measures each
    assert len(wanted_pids(30_000, 300)) == 300 and wanted_pids(30_000, 300) == wanted_pids(
        30_000, 300
    )


def test_extract_bench_checks_every_member(tmp_path):
    report = bench_extract(members=3, member_mib=0.2, work_dir=tmp_path)
    assert report["members"] == 3 and report["ratio"] > 0


def test_bench_data_cli_prints_json(tmp_path):
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "reranklab.cli",
            "bench-data",
            "extract",
            "--members",
            "2",
            "--member-mib",
            "0.1",
            "--work-dir",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    report = json.loads(out.stdout)
    assert report["bench"] == "extract" and report["members"] == 2
    assert list(tmp_path.iterdir()) == []  # synthetic files removed


def test_index_bench_measures_both_sides_and_they_agree(tmp_path):
    from reranklab.bench.scale import bench_index, format_index_report

    report = bench_index([1_500, 3_000], queries=30, depth=50, work_dir=tmp_path, vocabulary=5_000)
    steps = {(r["passages"], r["side"], r["step"]) for r in report["rows"]}
    assert steps == {
        (n, side, step)
        for n in (1_500, 3_000)
        for side in ("reranklab", "bm25s")
        for step in ("index", "retrieve")
    } | {(n, "reranklab", "retrieve (command)") for n in (1_500, 3_000)}
    measured = [r for r in report["rows"] if r["step"] != "retrieve (command)"]
    assert all("failed" not in r and r["peak_mib"] > 0 and r["wall_s"] >= 0 for r in measured)
    # `reranklab retrieve` end to end, as a user runs it: the in-process search's run, byte for byte.
    commands = [r for r in report["rows"] if r["step"] == "retrieve (command)"]
    assert all(r["same_run"] and r["wall_s"] > 0 for r in commands), commands
    # Same top-k scores rank by rank: the streamed index is bm25s' index.
    assert report["same_scores"] == {"1500": 1.0, "3000": 1.0}
    assert {"index_peak_kib_per_passage", "search_cpu_ms_per_query_per_million"} <= set(
        report["growth"]["reranklab"]
    )
    assert report["extrapolation"]["passages"] == 8_841_823
    table = format_index_report(report)
    assert "| 3,000 | reranklab | retrieve |" in table and "extrapolation" in table
    assert "| 3,000 | reranklab | retrieve (command) |" in table


def test_synthetic_text_is_seeded_and_zipf_like():
    from collections import Counter

    import numpy as np

    from reranklab.bench.scale import TextModel

    model = TextModel(vocabulary=10_000, seed=0)
    a = model.passage_texts(np.random.default_rng(3), 200)
    assert a == model.passage_texts(np.random.default_rng(3), 200)
    counts = Counter(" ".join(a).replace(".", "").split()).most_common()
    # the commonest words are stop words, and the 10th is ~10x rarer than the 1st or so
    assert counts[0][1] > 4 * counts[9][1] and len(counts) > 1_000
