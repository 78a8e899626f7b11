"""A write killed mid-way (SIGKILL: nothing of it runs) leaves no temporary file for good:
the next write of the same output removes it, a live writer's is left alone, and the
temporaries are as readable as the result (not mkstemp's 0600) and ignored by DVC and git."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

from reranklab.io.atomic import atomic_directory, atomic_path, atomic_write_text

REPO = Path(__file__).resolve().parents[1]

# A child that starts writing ``target`` and is killed (or waits) inside the write.
_WRITER = textwrap.dedent(
    """
    import os, signal, sys
    from pathlib import Path
    from reranklab.io.atomic import atomic_directory, atomic_path
    target, how, kind = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
    os.umask(0o022)
    with (atomic_path(target) if kind == "file" else atomic_directory(target)) as tmp:
        if kind == "file":
            tmp.write_text("half of it")
        else:
            (tmp / "part.txt").write_text("half of it")
        print(tmp, flush=True)
        if how == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
        sys.stdin.readline()  # "wait": a live writer, until the test lets it go
    """
)


def _writer(target: Path, how: str, kind: str = "file") -> tuple[subprocess.Popen[str], Path]:
    child = subprocess.Popen(
        [sys.executable, "-c", _WRITER, str(target), how, kind],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    return child, Path(child.stdout.readline().strip())


def test_a_killed_write_leaves_a_temporary_that_the_next_write_removes(tmp_path):
    target = tmp_path / "bm25.run"
    child, tmp = _writer(target, "kill")
    assert child.wait() == -signal.SIGKILL
    assert tmp.is_file() and tmp.name.startswith(".bm25.run.") and tmp.name.endswith(".tmp")
    assert tmp.stat().st_mode & 0o777 == 0o644  # the umask's mode, not mkstemp's 0600
    atomic_write_text(target, "all of it\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bm25.run"]
    assert target.read_text() == "all of it\n"


def test_a_killed_directory_write_is_removed_by_the_next_one(tmp_path):
    target = tmp_path / "fold0"
    child, tmp = _writer(target, "kill", kind="dir")
    assert child.wait() == -signal.SIGKILL
    assert tmp.is_dir()
    with atomic_directory(target) as new:
        (new / "reranker.json").write_text("{}")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fold0"]


def test_a_live_writers_temporary_is_left_alone(tmp_path):
    target = tmp_path / "sample.parquet"
    child, live = _writer(target, "wait")
    try:
        atomic_write_text(target, "mine\n")
        assert live.is_file()  # still being written by the child: not removed
    finally:
        assert child.stdin is not None
        child.stdin.write("\n")
        child.stdin.close()
        assert child.wait() == 0
    assert not live.exists() and target.read_text() == "half of it"


def test_other_outputs_temporaries_are_not_touched(tmp_path):
    other = tmp_path / ".bm25.run.gz.abcd1234.tmp"
    other.write_text("x")
    os.utime(other, (0, 0))
    atomic_write_text(tmp_path / "bm25.run", "y\n")
    assert other.exists()


def test_temporaries_get_the_umasks_mode(tmp_path):
    old = os.umask(0o027)
    try:
        with atomic_path(tmp_path / "x.txt") as tmp:
            assert tmp.stat().st_mode & 0o777 == 0o640
    finally:
        os.umask(old)


def test_dvc_and_git_ignore_the_temporaries(tmp_path):
    from dvc.fs import LocalFileSystem
    from dvc.ignore import DvcIgnorePatterns

    outputs = {"results/runs": "bm25.run", "raw/wikiqa": "WikiQA.tsv"}
    names = [f"{folder}/.{output}.k2j_9x0a.tmp" for folder, output in outputs.items()]
    dvc = DvcIgnorePatterns.from_file(str(REPO / ".dvcignore"), LocalFileSystem(), ".dvcignore")
    for folder, output in outputs.items():
        assert dvc.matches(str(REPO / folder), f".{output}.k2j_9x0a.tmp")
        assert not dvc.matches(str(REPO / folder), output)  # the output itself is tracked
    # git: its own check, on a repository whose .gitignore is the project's.
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / ".gitignore").write_text((REPO / ".gitignore").read_text())
    out = subprocess.run(
        ["git", "check-ignore", "--no-index", *names], cwd=tmp_path, capture_output=True, text=True
    )
    assert out.stdout.split() == names, out.stderr
