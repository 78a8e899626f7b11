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
