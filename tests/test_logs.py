"""Rule logs stay readable: tqdm's in-place redraws become whole lines in a log file."""

from __future__ import annotations

import io
import subprocess
import sys

from tqdm import tqdm

from reranklab.logs import ProgressLines


def test_a_bar_leaves_its_final_state_and_log_lines_pass_through():
    out = io.StringIO()
    stream = ProgressLines(out, interval=3600)
    stream.write("12:00:00 INFO train: 552 examples\n")
    for _step in tqdm(range(50), desc="train pointwise", file=stream, mininterval=0):
        pass
    stream.write("12:00:05 INFO saved\n")
    lines = out.getvalue().splitlines()
    assert "\r" not in out.getvalue()
    assert lines[0] == "12:00:00 INFO train: 552 examples"
    assert lines[1].startswith("train pointwise: 100%") and "50/50" in lines[1]
    assert lines[2:] == ["12:00:05 INFO saved"]


def test_a_long_bar_leaves_a_line_per_interval():
    out = io.StringIO()
    stream = ProgressLines(out, interval=0)  # every redraw is due
    for _step in tqdm(range(3), desc="encode", file=stream, mininterval=0):
        pass
    lines = out.getvalue().splitlines()
    assert [line.split(":")[0] for line in lines] == ["encode"] * len(lines)
    assert len(lines) >= 4 and "3/3" in lines[-1]


def test_the_cli_writes_no_carriage_returns_to_a_log_file(tmp_path, repo):
    log = tmp_path / "job.log"
    code = (
        "import sys, tqdm; from reranklab.logs import setup_logging; setup_logging(); "
        "[None for _ in tqdm.tqdm(range(200), desc='bar', mininterval=0)]"
    )
    with open(log, "w") as handle:
        subprocess.run([sys.executable, "-c", code], stderr=handle, check=True, cwd=repo)
    text = log.read_text()
    assert "\r" not in text and text.splitlines()[-1].startswith("bar: 100%")
