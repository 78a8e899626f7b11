"""Each canonical format round-trips, and malformed lines are named by file and line."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from reranklab.errors import FormatError
from reranklab.io import (
    Fold,
    Folds,
    atomic_path,
    atomic_write_text,
    read_corpus,
    read_folds,
    read_qrels,
    read_queries,
    read_run,
    tie_key,
    write_corpus,
    write_folds,
    write_qrels,
    write_queries,
    write_run,
)


def test_qrels_round_trip(tmp_path):
    qrels = {"q1": {"p1": 2, "p2": 0}, "q2": {"p3": 1}}
    write_qrels(tmp_path / "qrels.txt", qrels)
    assert read_qrels(tmp_path / "qrels.txt") == qrels
    assert (tmp_path / "qrels.txt").read_text().splitlines()[0] == "q1 0 p1 2"


def test_qrels_accept_mixed_whitespace_and_reject_float_grades(tmp_path):
    path = tmp_path / "q.txt"
    path.write_text("q1\tQ0 p1  3\nq1 0 p2 1.5\n")
    with pytest.raises(FormatError, match=r"q\.txt:2: relevance grade '1\.5'"):
        read_qrels(path)


def test_run_round_trip_orders_by_score_then_tie_key(tmp_path):
    run = {"q1": {"b": 1.0, "a": 1.0, "c": 2.5}, "q0": {"x": -1.0}}
    write_run(tmp_path / "r.run", run, tag="t")
    lines = (tmp_path / "r.run").read_text().splitlines()
    tied = sorted("ab", key=lambda pid: tie_key("q1", pid))
    assert lines == [
        "q0 Q0 x 1 -1.0 t",
        "q1 Q0 c 1 2.5 t",
        f"q1 Q0 {tied[0]} 2 1.0 t",
        f"q1 Q0 {tied[1]} 3 1.0 t",
    ]
    assert read_run(tmp_path / "r.run") == run


def test_run_scores_round_trip_as_float64(tmp_path):
    # Logits of a confident model differ far past 8 significant digits; .8g would merge them.
    scores = [37.00000000000001, 37.0, 1 - 1e-12, 1 - 2e-12, 1e-300, -0.1 + 1e-17, 0.1 + 0.2]
    run = {"q": {f"p{i}": s for i, s in enumerate(scores)}}
    write_run(tmp_path / "r.run", run)
    assert read_run(tmp_path / "r.run") == run
    assert len({line.split()[4] for line in (tmp_path / "r.run").read_text().splitlines()}) == len(
        set(scores)
    )


def test_tie_key_is_stable_across_processes():
    # blake2b of the text, not Python's salted hash(): the same value in every process.
    code = "from reranklab.io import tie_key; print(tie_key('Q1', 'D1-0'), tie_key('Q1', 'D1-0', seed=7))"
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONHASHSEED": "123"},
    )
    assert out.stdout.split() == [str(tie_key("Q1", "D1-0")), str(tie_key("Q1", "D1-0", seed=7))]


def test_run_depth_and_qids(tmp_path):
    run = {"q1": {"a": 3.0, "b": 2.0, "c": 1.0}, "q2": {"d": 1.0}}
    write_run(tmp_path / "r.run", run, depth=2, qids=["q1"])
    assert read_run(tmp_path / "r.run") == {"q1": {"a": 3.0, "b": 2.0}}


def test_run_malformed_line(tmp_path):
    path = tmp_path / "bad.run"
    path.write_text("q1 Q0 a 1 2.0 t\nq1 Q0 b 2 t\n")
    with pytest.raises(FormatError, match=r"bad\.run:2: expected 6 fields"):
        read_run(path)


def test_queries_round_trip_and_whitespace_cleaning(tmp_path):
    write_queries(tmp_path / "q.tsv", {"1": "how do\tI  bake\nbread?", "2": "why"})
    assert read_queries(tmp_path / "q.tsv") == {"1": "how do I bake bread?", "2": "why"}


def test_queries_duplicate_id(tmp_path):
    path = tmp_path / "q.tsv"
    path.write_text("1\ta\n1\tb\n")
    with pytest.raises(FormatError, match=r"q\.tsv:2: duplicate query id"):
        read_queries(path)


@pytest.mark.parametrize("suffix", [".parquet", ".jsonl"])
def test_corpus_round_trip(tmp_path, suffix):
    corpus = {"p1": "first passage", "p0": "zweite Passage, ünïcode"}
    assert write_corpus(tmp_path / f"c{suffix}", corpus) == 2
    assert read_corpus(tmp_path / f"c{suffix}") == corpus
    assert list(read_corpus(tmp_path / f"c{suffix}")) == ["p1", "p0"]


@pytest.mark.parametrize("suffix", [".parquet", ".jsonl"])
def test_reading_only_the_passages_a_job_names(tmp_path, suffix):
    import pyarrow as pa
    import pyarrow.parquet as pq

    corpus = {f"p{i}": f"passage number {i}" for i in range(200_000)}
    path = tmp_path / f"c{suffix}"
    if suffix == ".parquet":  # several row groups and read batches, as a streamed prepare writes
        pq.write_table(
            pa.table({"pid": list(corpus), "text": list(corpus.values())}),
            path,
            row_group_size=30_000,
        )
    else:
        write_corpus(path, corpus)
    wanted = {"p0", "p65537", "p199999", "absent"}
    assert read_corpus(path, wanted) == {pid: corpus[pid] for pid in ("p0", "p65537", "p199999")}
    assert read_corpus(path, set()) == {}


def test_a_parquet_file_without_the_corpus_columns_is_named(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"id": ["a"], "body": ["x"]}), tmp_path / "c.parquet")
    for pids in (None, {"a"}):
        with pytest.raises(FormatError, match=r"c\.parquet.*columns pid, text"):
            read_corpus(tmp_path / "c.parquet", pids)


def test_corpus_jsonl_malformed(tmp_path):
    path = tmp_path / "c.jsonl"
    path.write_text('{"pid": "a", "text": "x"}\n{"pid": "b"}\n')
    with pytest.raises(FormatError, match=r"c\.jsonl:2"):
        read_corpus(path)


def test_folds_round_trip(tmp_path):
    folds = Folds(
        "d", "cv", [Fold("fold0", ["a"], [], ["b"]), Fold("fold1", ["b"], [], ["a"])], seed=3
    )
    write_folds(tmp_path / "f.json", folds)
    assert read_folds(tmp_path / "f.json") == folds


def test_atomic_path_leaves_nothing_on_error(tmp_path):
    target = tmp_path / "out.txt"
    target.write_text("old")
    with pytest.raises(RuntimeError), atomic_path(target) as tmp:
        tmp.write_text("half")
        raise RuntimeError("killed")
    assert target.read_text() == "old"
    assert list(tmp_path.iterdir()) == [target]


def test_atomic_directory_replaces_the_whole_directory_or_nothing(tmp_path):
    from reranklab.io.atomic import atomic_directory

    target = tmp_path / "models" / "fold0"
    target.mkdir(parents=True)
    (target / "old.bin").write_text("old")
    with pytest.raises(RuntimeError), atomic_directory(target) as tmp:
        (tmp / "new.bin").write_text("half")
        raise RuntimeError("killed while saving")
    assert sorted(p.name for p in target.iterdir()) == ["old.bin"]
    with atomic_directory(target) as tmp:
        (tmp / "new.bin").write_text("new")
    assert sorted(p.name for p in target.iterdir()) == ["new.bin"]
    assert sorted(p.name for p in target.parent.iterdir()) == ["fold0"]  # no temporary left behind
    umask = os.umask(0)
    os.umask(umask)
    assert target.stat().st_mode & 0o777 == 0o777 & ~umask  # not mkdtemp's private 0700


@pytest.mark.parametrize("umask", [0o022, 0o002, 0o077])
def test_atomic_writes_honour_the_umask(tmp_path, umask):
    # mkstemp makes 0600 files; a result written atomically must get 0666 & ~umask like open().
    old = os.umask(umask)
    try:
        atomic_write_text(tmp_path / "a.txt", "x")
        write_run(tmp_path / "r.run", {"q": {"p": 1.0}})
        with open(tmp_path / "plain.txt", "w") as handle:
            handle.write("x")
    finally:
        os.umask(old)
    expected = (tmp_path / "plain.txt").stat().st_mode & 0o777
    assert expected == 0o666 & ~umask
    assert (tmp_path / "a.txt").stat().st_mode & 0o777 == expected
    assert (tmp_path / "r.run").stat().st_mode & 0o777 == expected


def test_a_file_that_is_not_utf8_is_named_with_its_line(tmp_path):
    run = tmp_path / "latin1.run"
    run.write_bytes("q1 Q0 d1 1 2.0 t\nq1 Q0 caf\xe9 2 1.0 t\n".encode("latin-1"))
    with pytest.raises(
        FormatError, match=r"latin1\.run:2: not valid UTF-8 \(byte 0xe9 at column 10"
    ):
        read_run(run)
    binary = tmp_path / "model.bin"
    binary.write_bytes(b"\x80\x02\x95 a pickle, not text\n")
    for reader in (read_run, read_qrels, read_queries):
        with pytest.raises(
            FormatError, match=r"model\.bin:1: not valid UTF-8 \(byte 0x80 at column 1"
        ):
            reader(binary)


def test_a_garbled_corpus_parquet_is_named(tmp_path):
    path = tmp_path / "corpus.parquet"
    write_corpus(path, {f"p{i}": f"passage number {i} " * 20 for i in range(200)})
    data = bytearray(path.read_bytes())
    middle = len(data) // 2
    data[middle : middle + 64] = b"\xff" * 64  # inside the column chunks, not the footer
    path.write_bytes(bytes(data))
    for pids in (None, {"p1"}):
        with pytest.raises(FormatError, match=r"corpus\.parquet: not a readable corpus Parquet"):
            read_corpus(path, pids)
    with pytest.raises(FileNotFoundError):
        read_corpus(tmp_path / "missing.parquet")


def test_a_full_disk_names_the_file_being_written(tmp_path):
    target = tmp_path / "runs" / "fold0.run"
    full = r"No space left on device: '.*fold0\.run'"
    with pytest.raises(OSError, match=full), atomic_path(target):
        raise OSError(28, "No space left on device")
    assert not target.exists() and not list(target.parent.iterdir())


def test_a_saved_folder_honours_the_umask_not_its_writers_private_modes(tmp_path):
    """safetensors writes 0600 files and mkdtemp makes 0700 folders: a model folder saved
    through atomic_directory (and a checkpoint) gets the umask's modes like every result."""
    from reranklab.io.atomic import atomic_directory

    old = os.umask(0o022)
    try:
        with atomic_directory(tmp_path / "model") as tmp:
            (tmp / "sub").mkdir(mode=0o700)
            for path in (tmp / "model.safetensors", tmp / "sub" / "head.safetensors"):
                path.write_bytes(b"x")
                path.chmod(0o600)
    finally:
        os.umask(old)
    model = tmp_path / "model"
    modes = {p.relative_to(model).as_posix(): p.stat().st_mode & 0o777 for p in model.rglob("*")}
    assert modes == {"model.safetensors": 0o644, "sub": 0o755, "sub/head.safetensors": 0o644}
    assert model.stat().st_mode & 0o777 == 0o755
