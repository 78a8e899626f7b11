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


def test_a_log_record_written_while_a_bar_is_drawn_gets_its_own_line():
    import logging

    out = io.StringIO()
    stream = ProgressLines(out, interval=3600)
    handler = logging.StreamHandler(stream)
    logger = logging.getLogger("reranklab.test_logs")
    logger.addHandler(handler)
    logger.propagate = False
    try:
        with tqdm(total=4, desc="train dmn", file=stream, mininterval=0) as bar:
            bar.update(2)
            logger.warning("step 2/4 loss 0.19")
            bar.update(2)
    finally:
        logger.removeHandler(handler)
    lines = out.getvalue().splitlines()
    assert lines[0] == "step 2/4 loss 0.19"
    assert lines[1].startswith("train dmn: 100%") and len(lines) == 2


def test_text_written_in_pieces_stays_one_line():
    out = io.StringIO()
    stream = ProgressLines(out)
    print("partial", end="", file=stream)
    print(" and the rest", file=stream)
    assert out.getvalue() == "partial and the rest\n"
