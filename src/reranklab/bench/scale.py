"""``reranklab bench-data index``: BM25 indexing and retrieval at scale, reranklab against bm25s.

On seeded synthetic corpora that resemble text (passages of ~60 words drawn from a Zipf-like
distribution over a vocabulary of English stop words and millions of made-up words, so the
vocabulary keeps growing with the corpus as a real one does), it measures four steps, each in
a child process of its own (peak memory only grows):

* **reranklab index**: what ``reranklab index`` runs (the corpus streamed in chunks, a
  memory-mapped bm25s index);
* **reranklab retrieve**: what ``reranklab retrieve`` runs (the index memory-mapped, bm25s'
  numba backend on ``--threads`` cores for large jobs, the run written streamed);
* **bm25s index** / **bm25s retrieve**: bm25s used directly, as its README shows: the corpus
  read whole, ``bm25s.tokenize``, ``BM25(method="lucene").index``, ``save``; then ``load``
  (in memory), ``retrieve`` with the default numpy backend.

Per step: wall and CPU seconds (all threads), peak RSS (``VmHWM``: memory-mapped pages that
were touched count too), index size on disk, and for retrieval the queries per second of the
search itself (after a one-query warm-up that compiles numba's kernels, timed apart). Both
sides' top-``depth`` scores are compared rank by rank (equal whatever the tie order).

Never call this from a timed test: it measures, it does not check.

Example (skipped as a doctest: it writes corpora and runs child processes;
``tests/test_bench_data.py`` runs it small):
    >>> report = bench_index([100_000], queries=1000, depth=1000, work_dir=Path("/tmp/b"))  # doctest: +SKIP
    >>> print(format_index_report(report))  # doctest: +SKIP
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from reranklab.bench.memory import cpu_seconds, peak_rss_kib
from reranklab.retrieval.streamed_index import BM25S_ANALYSIS

# bm25s' own analysis and exact lengths on both sides, so the two indexes must be equal.
SETTINGS = {"backend": "bm25s", "k1": 0.9, "b": 0.4, **BM25S_ANALYSIS}
MSMARCO_PASSAGES = 8_841_823
MSMARCO_DEV_QUERIES = 6_980
VOCABULARY = 3_000_000  # made-up words: a corpus of millions of passages meets most of them
ZIPF_SHIFT = 2.7  # Zipf-Mandelbrot: p(rank) ~ 1 / (rank + 2.7), as word counts of English text
SYLLABLES = [c + v for c in "bcdfghjklmnprstvwz" for v in "aeiou"]
ROW_GROUP = 20_000  # as ``prepare`` writes corpora (reranklab.data._streaming)


class TextModel:
    """Seeded word sampler: stop words first, then made-up words, ranks drawn Zipf-like.

    Example:
        >>> model = TextModel(vocabulary=1000, seed=0)
        >>> len(model.passage_texts(np.random.default_rng(0), 3)[0].split()) >= 45
        True
    """

    def __init__(self, vocabulary: int = VOCABULARY, seed: int = 0) -> None:
        from bm25s.stopwords import STOPWORDS_EN

        rng = np.random.default_rng(seed)
        stop = sorted(set(STOPWORDS_EN))
        rng.shuffle(stop)
        made_up = [self._word(rank + len(SYLLABLES)) for rank in range(vocabulary - len(stop))]
        self.words = np.array(stop + made_up, dtype=object)
        weights = 1.0 / (np.arange(len(self.words)) + ZIPF_SHIFT)
        self.cdf = np.cumsum(weights) / weights.sum()

    @staticmethod
    def _word(number: int) -> str:
        # Distinct numbers give distinct words; common (small) numbers give short words.
        out = []
        while number:
            number, digit = divmod(number, len(SYLLABLES))
            out.append(SYLLABLES[digit])
        return "".join(out)

    def sample(self, rng: np.random.Generator, count: int) -> np.ndarray:
        """``count`` words."""
        ranks = np.searchsorted(self.cdf, rng.random(count), side="right")
        return self.words[np.minimum(ranks, len(self.words) - 1)]

    def passage_texts(
        self, rng: np.random.Generator, count: int, low: int = 45, high: int = 76
    ) -> list[str]:
        """``count`` texts of ``low`` to ``high - 1`` words (mean ~60)."""
        lengths = rng.integers(low, high, size=count)
        words = self.sample(rng, int(lengths.sum())).tolist()
        out, start = [], 0
        for length in lengths.tolist():
            out.append(" ".join(words[start : start + length]) + ".")
            start += length
        return out


def write_text_corpus(path: Path, passages: int, model: TextModel, seed: int = 0) -> None:
    """A ``corpus.parquet`` of ``passages`` synthetic passages (pids ``0``, ``1``, ...)."""
    rng = np.random.default_rng(seed)
    schema = pa.schema([("pid", pa.string()), ("text", pa.string())])
    with pq.ParquetWriter(path, schema) as writer:
        for start in range(0, passages, ROW_GROUP):
            stop = min(start + ROW_GROUP, passages)
            texts = model.passage_texts(rng, stop - start)
            pids = [str(i) for i in range(start, stop)]
            writer.write_table(pa.table({"pid": pids, "text": texts}, schema=schema))


def synthetic_queries(count: int, model: TextModel, seed: int = 1) -> dict[str, str]:
    """``count`` queries of 2 to 10 words (mean 6, as MS MARCO's), stop words included."""
    rng = np.random.default_rng(seed)
    texts = model.passage_texts(rng, count, low=2, high=11)
    return {f"q{i}": text.rstrip(".") for i, text in enumerate(texts)}


# -- the steps, each run in a child process ----------------------------------------------------


def _disk_mib(path: Path) -> float:
    files = [path] if path.is_file() else [p for p in path.rglob("*") if p.is_file()]
    return round(sum(p.stat().st_size for p in files) / 2**20, 1)


def _ours_index(spec: dict[str, Any]) -> dict[str, Any]:
    from reranklab.retrieval import get_backend

    stats = get_backend(SETTINGS).build(Path(spec["corpus"]), Path(spec["index"]))
    return {"vocabulary": stats["vocabulary"], "index_mib": _disk_mib(Path(spec["index"]))}


def _ours_retrieve(spec: dict[str, Any]) -> dict[str, Any]:
    from reranklab.io import read_queries
    from reranklab.retrieval import get_backend
    from reranklab.retrieval.bm25s_backend import choose_scorer

    queries = read_queries(spec["queries"])
    backend = get_backend(SETTINGS)
    backend.threads = spec["threads"]
    # What `reranklab retrieve` would pick for this job, fixed so the warm-up compiles it.
    backend.scorer = choose_scorer("auto", len(queries), spec["passages"])
    started = time.perf_counter()
    first = next(iter(queries))
    backend.search(Path(spec["index"]), {first: queries[first]}, spec["depth"])
    warm_up = time.perf_counter() - started
    cpu, started = cpu_seconds(), time.perf_counter()
    stats = backend.search_to_file(
        Path(spec["index"]), queries, spec["depth"], Path(spec["run"]), "bm25"
    )
    return {
        "scorer": backend.scorer,
        "warm_up_s": round(warm_up, 2),
        "search_s": round(time.perf_counter() - started, 2),
        "search_cpu_s": round(cpu_seconds() - cpu, 2),
        "scoring_s": stats["scoring_s"],
        "open_s": stats["open_s"],
        "candidates": stats["candidates"],
    }


def _stemmer() -> Any:
    import Stemmer

    return Stemmer.Stemmer(SETTINGS["stemmer"])


def _bm25s_index(spec: dict[str, Any]) -> dict[str, Any]:
    import bm25s

    table = pq.read_table(spec["corpus"], columns=["pid", "text"])
    pids = table.column("pid").to_pylist()
    texts = table.column("text").to_pylist()
    del table
    tokens = bm25s.tokenize(
        texts, stopwords=SETTINGS["stopwords"], stemmer=_stemmer(), show_progress=False
    )
    del texts
    model = bm25s.BM25(method="lucene", k1=SETTINGS["k1"], b=SETTINGS["b"])
    model.index(tokens, show_progress=False)
    index = Path(spec["index"])
    model.save(str(index), show_progress=False)
    (index / "pids.json").write_text(json.dumps(pids), encoding="utf-8")
    vocabulary = sum(1 for term in tokens.vocab if term)  # index() adds the empty term
    return {"vocabulary": vocabulary, "index_mib": _disk_mib(index)}


def _bm25s_retrieve(spec: dict[str, Any]) -> dict[str, Any]:
    import bm25s

    from reranklab.io import read_queries

    index = Path(spec["index"])
    model = bm25s.BM25.load(str(index), show_progress=False)
    pids = json.loads((index / "pids.json").read_text(encoding="utf-8"))
    queries = read_queries(spec["queries"])
    qids = sorted(queries)
    cpu, started = cpu_seconds(), time.perf_counter()
    tokens = bm25s.tokenize(
        [queries[q] for q in qids],
        stopwords=SETTINGS["stopwords"],
        stemmer=_stemmer(),
        return_ids=False,
        show_progress=False,
    )
    scoring = time.perf_counter()
    docs, scores = model.retrieve(tokens, k=spec["depth"], show_progress=False)
    scoring = time.perf_counter() - scoring
    with open(spec["run"], "w", encoding="utf-8") as out:
        for row, qid in enumerate(qids):
            for rank, (doc, score) in enumerate(zip(docs[row], scores[row], strict=True), 1):
                if score > 0:
                    out.write(f"{qid} Q0 {pids[int(doc)]} {rank} {float(score)!r} bm25s\n")
    return {
        "scorer": "numpy",
        "warm_up_s": 0.0,
        "search_s": round(time.perf_counter() - started, 2),
        "search_cpu_s": round(cpu_seconds() - cpu, 2),
        "scoring_s": round(scoring, 3),
        "candidates": int(np.count_nonzero(scores > 0)),
    }


STEPS = {
    ("reranklab", "index"): _ours_index,
    ("reranklab", "retrieve"): _ours_retrieve,
    ("bm25s", "index"): _bm25s_index,
    ("bm25s", "retrieve"): _bm25s_retrieve,
}


def _step_main(spec: dict[str, Any]) -> None:
    """In the child: run one step and print its measures as one JSON line."""
    import bm25s  # noqa: F401  (imports and interpreter are the baseline, not the step)

    import reranklab.retrieval  # noqa: F401

    baseline_kib = peak_rss_kib()
    cpu, started = cpu_seconds(), time.perf_counter()
    result = STEPS[(spec["side"], spec["step"])](spec)
    result.update(
        wall_s=round(time.perf_counter() - started, 2),
        cpu_s=round(cpu_seconds() - cpu, 2),
        peak_mib=round(peak_rss_kib() / 1024, 1),
        baseline_mib=round(baseline_kib / 1024, 1),
    )
    print(json.dumps(result))


def run_step(spec: dict[str, Any]) -> dict[str, Any]:
    """Run one step in a fresh interpreter; a step that dies (out of memory) is reported so."""
    proc = subprocess.run(
        [sys.executable, "-m", "reranklab.bench.scale", "_step", json.dumps(spec)],
        capture_output=True,
        text=True,
        env={**os.environ, "TQDM_DISABLE": "1"},
    )
    row = {k: spec[k] for k in ("passages", "side", "step")}
    if proc.returncode != 0:
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        reason = "killed (out of memory?)" if proc.returncode in (-9, 137) else tail
        return {**row, "failed": f"exit {proc.returncode}: {reason}"}
    return {**row, **json.loads(proc.stdout.strip().splitlines()[-1])}


def run_command(spec: dict[str, Any]) -> dict[str, Any]:
    """``reranklab retrieve`` end to end, as the ``retrieve`` rule runs it, in a fresh process:
    interpreter start, imports, opening the index, the search, the run and its first-stage
    record written (wall seconds of the whole command, measured from outside it)."""
    from reranklab.settings.job import RetrieveSpec

    work = Path(spec["run"]).parent
    qrels = work / "qrels-empty.txt"
    qrels.write_text("")  # the record's recall needs judgements; none here
    job = RetrieveSpec(
        protocol={"first_stage": "bm25", "depth": spec["depth"]}, retrieval=dict(SETTINGS)
    )
    out = work / f"command-{spec['passages']}.run"
    command = [
        *[sys.executable, "-m", "reranklab.cli", "retrieve"],
        *["--queries", spec["queries"], "--qrels", str(qrels), "--pool", str(qrels)],
        *["--index-dir", spec["index"], "--out", str(out)],
        *["--out-record", str(work / f"command-{spec['passages']}.json")],
        *["--threads", str(spec["threads"]), "--spec", job.to_json()],
    ]
    row = {"passages": spec["passages"], "side": spec["side"], "step": "retrieve (command)"}
    started = time.perf_counter()
    proc = subprocess.run(
        command, capture_output=True, text=True, env={**os.environ, "TQDM_DISABLE": "1"}
    )
    wall = round(time.perf_counter() - started, 2)
    if proc.returncode != 0:
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return {**row, "failed": f"exit {proc.returncode}: {tail}"}
    same = out.read_bytes() == Path(spec["run"]).read_bytes()
    out.unlink()
    return {**row, "wall_s": wall, "same_run": same}


def _same_scores(ours: Path, theirs: Path) -> float:
    """Share of queries whose top-k scores are equal rank by rank (the tie order aside)."""
    from reranklab.io import rank_order, read_run

    a, b = read_run(ours), read_run(theirs)
    qids = set(a) | set(b)
    same = sum(
        [s for _, s in rank_order(a.get(q, {}), q)] == [s for _, s in rank_order(b.get(q, {}), q)]
        for q in qids
    )
    return round(same / max(1, len(qids)), 4)


def bench_index(
    sizes: Sequence[int],
    queries: int,
    depth: int,
    work_dir: Path,
    threads: int = 0,
    sides: Sequence[str] = ("reranklab", "bm25s"),
    vocabulary: int = VOCABULARY,
    seed: int = 0,
) -> dict[str, Any]:
    """Index and search synthetic corpora of each size with each side; see the module doc.

    Returns:
        ``{"queries", "depth", "threads", "rows": [one per (size, side, step)], "same_scores":
        {size: share}, "growth": ..., "extrapolation": ...}`` (see :func:`extrapolate`).
    """
    from reranklab.io import write_queries

    model = TextModel(vocabulary, seed)
    query_file = work_dir / "queries.tsv"
    write_queries(query_file, synthetic_queries(queries, model, seed + 1))
    rows: list[dict[str, Any]] = []
    same: dict[str, float] = {}
    for passages in sizes:
        corpus = work_dir / f"corpus-{passages}.parquet"
        if not corpus.exists():
            write_text_corpus(corpus, passages, model, seed)
        for side in sides:
            common = {
                "passages": passages,
                "side": side,
                "corpus": str(corpus),
                "index": str(work_dir / f"{side}-{passages}"),
                "queries": str(query_file),
                "run": str(work_dir / f"{side}-{passages}.run"),
                "depth": depth,
                "threads": threads,
            }
            indexed = run_step({**common, "step": "index"})
            rows.append(indexed)
            if "failed" not in indexed:
                rows.append(run_step({**common, "step": "retrieve"}))
                if side == "reranklab":
                    rows.append(run_command(common))
        runs = [work_dir / f"{side}-{passages}.run" for side in ("reranklab", "bm25s")]
        if all(run.exists() for run in runs):
            same[str(passages)] = _same_scores(*runs)
        corpus.unlink()
    cores = threads or len(os.sched_getaffinity(0))
    return {
        "queries": queries,
        "depth": depth,
        "threads": cores,
        "rows": rows,
        "same_scores": same,
        **extrapolate(rows, queries),
    }


def extrapolate(
    rows: Sequence[dict[str, Any]],
    queries: int,
    target_passages: int = MSMARCO_PASSAGES,
    target_queries: int = MSMARCO_DEV_QUERIES,
) -> dict[str, Any]:
    """Growth per passage between the two largest sizes measured, and what it gives for MS MARCO.

    Index: peak RSS and disk grow linearly in passages (the slope between the two largest
    corpora, added to the largest's). Retrieval, measured on the largest corpus searched: the
    scoring time (bm25s' ``retrieve``: every passage's score accumulated and scanned for the
    top k) grows with passages x queries, the rest (tokenising, ranking ties, writing the
    run) with queries; the one-off warm-up (numba's compilation) is added once.

    Example:
        >>> rows = [
        ...     {"passages": 1_000, "side": "x", "step": "index", "peak_mib": 100.0, "index_mib": 1.0,
        ...      "cpu_s": 1.0},
        ...     {"passages": 2_000, "side": "x", "step": "index", "peak_mib": 150.0, "index_mib": 2.0,
        ...      "cpu_s": 2.0},
        ... ]
        >>> extrapolate(rows, 10, target_passages=4_000)["growth"]["x"]["index_peak_kib_per_passage"]
        51.2
    """
    growth: dict[str, dict[str, float]] = {}
    projected: dict[str, dict[str, float]] = {}
    for side in sorted({row["side"] for row in rows}):
        done = {
            (row["step"], row["passages"]): row
            for row in rows
            if row["side"] == side and "failed" not in row
        }
        indexed = sorted(n for step, n in done if step == "index")
        g: dict[str, float] = {}
        p: dict[str, float] = {}
        if len(indexed) >= 2:
            small, large = done[("index", indexed[-2])], done[("index", indexed[-1])]
            extra = large["passages"] - small["passages"]
            slope = (large["peak_mib"] - small["peak_mib"]) * 1024 / extra
            g["index_peak_kib_per_passage"] = round(slope, 3)
            g["index_disk_bytes_per_passage"] = round(
                (large["index_mib"] - small["index_mib"]) * 2**20 / extra, 1
            )
            g["index_cpu_s_per_million"] = round((large["cpu_s"] - small["cpu_s"]) * 1e6 / extra, 1)
            more = target_passages - large["passages"]
            p["index_peak_gib"] = round((large["peak_mib"] + slope * more / 1024) / 1024, 2)
            p["index_disk_gib"] = round(
                (large["index_mib"] * 2**20 + g["index_disk_bytes_per_passage"] * more) / 2**30, 2
            )
            p["index_cpu_min"] = round(
                (large["cpu_s"] + g["index_cpu_s_per_million"] * more / 1e6) / 60, 1
            )
        searched = sorted(n for step, n in done if step == "retrieve")
        if searched:
            row = done[("retrieve", searched[-1])]
            # Scoring (bm25s: accumulate every passage's score, scan them for the top k) grows
            # with passages x queries; the rest (tokenising, ranking ties, writing) with queries.
            per_query_million = 1e6 / row["passages"] / queries
            g["scoring_ms_per_query_per_million"] = round(
                row["scoring_s"] * 1e3 * per_query_million, 3
            )
            g["other_ms_per_query"] = round((row["search_s"] - row["scoring_s"]) * 1e3 / queries, 3)
            g["search_cpu_ms_per_query_per_million"] = round(
                row["search_cpu_s"] * 1e3 * per_query_million, 3
            )
            wall = (
                g["scoring_ms_per_query_per_million"] * target_passages / 1e6 * target_queries
                + g["other_ms_per_query"] * target_queries
            ) / 1e3 + row["warm_up_s"]
            p["search_wall_min"] = round(wall / 60, 1)
            scoring_share = row["scoring_s"] / max(row["search_s"], 1e-9)
            cpu = row["search_cpu_s"] / queries * target_queries
            p["search_cpu_min"] = round(
                cpu * (scoring_share * target_passages / row["passages"] + 1 - scoring_share) / 60,
                1,
            )
            if len(searched) >= 2:
                small = done[("retrieve", searched[-2])]
                slope = (row["peak_mib"] - small["peak_mib"]) / (
                    row["passages"] - small["passages"]
                )
                g["retrieve_peak_kib_per_passage"] = round(slope * 1024, 3)
                p["retrieve_peak_gib"] = round(
                    (row["peak_mib"] + slope * (target_passages - row["passages"])) / 1024, 2
                )
        growth[side], projected[side] = g, p
    return {
        "growth": growth,
        "extrapolation": {
            "passages": target_passages,
            "queries": target_queries,
            **projected,
        },
    }


def format_index_report(report: dict[str, Any]) -> str:
    """The table ``reranklab bench-data index`` prints."""
    head = (
        f"BM25 at scale: {report['queries']} queries, top-{report['depth']}, "
        f"{report['threads']} threads for reranklab retrieve"
    )
    cols = ("passages", "side", "step", "wall s", "CPU s", "peak MiB", "q/s", "index MiB", "note")
    lines = [head, "", "| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for row in report["rows"]:
        if "failed" in row:
            cells = [f"{row['passages']:,}", row["side"], row["step"], *["-"] * 5, row["failed"]]
        elif row["step"] == "retrieve (command)":
            same = "the same run file" if row["same_run"] else "a DIFFERENT run file"
            note = f"end to end, a fresh process as the rule runs it; {same}"
            cells = [f"{row['passages']:,}", row["side"], row["step"], f"{row['wall_s']:.1f}"]
            cells += ["", "", "", "", note]
        else:
            qps = (
                f"{report['queries'] / row['search_s']:,.0f}"
                if row["step"] == "retrieve" and row["search_s"] > 0
                else ""
            )
            note = (
                f"{row['scorer']}; warm-up {row['warm_up_s']} s"
                + (
                    f"; open {row['open_s']} s, scoring {row['scoring_s']} s"
                    if "open_s" in row
                    else ""
                )
                if row["step"] == "retrieve"
                else f"vocabulary {row['vocabulary']:,}"
            )
            cells = [
                f"{row['passages']:,}",
                row["side"],
                row["step"],
                f"{row['wall_s']:.1f}",
                f"{row['cpu_s']:.1f}",
                f"{row['peak_mib']:,.0f}",
                qps,
                f"{row['index_mib']:,.0f}" if "index_mib" in row else "",
                note,
            ]
        lines.append("| " + " | ".join(cells) + " |")
    if report["same_scores"]:
        lines += ["", "same top-k scores, rank by rank: " + json.dumps(report["same_scores"])]
    lines += ["", "growth: " + json.dumps(report["growth"])]
    lines += ["extrapolation: " + json.dumps(report["extrapolation"])]
    return "\n".join(lines)


def command(args: argparse.Namespace) -> None:
    """Run ``reranklab bench-data index``: the table, or ``--json``."""
    sizes = [int(s.replace("_", "")) for s in args.sizes.split(",") if s]
    sides = ("reranklab", "bm25s") if args.sides == "both" else (args.sides,)
    if args.work_dir is not None:
        Path(args.work_dir).mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=args.work_dir) as tmp:
        report = bench_index(
            sizes, args.queries, args.depth, Path(tmp), args.threads, sides, args.vocabulary
        )
    if args.json:
        print(json.dumps({"bench": "index", **report}, indent=2))
    else:
        print(format_index_report(report))


if __name__ == "__main__" and len(sys.argv) == 3 and sys.argv[1] == "_step":
    _step_main(json.loads(sys.argv[2]))
