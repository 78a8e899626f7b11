"""The pairs ``reranklab bench`` runs on: a real collection prepared and retrieved as the DAG does."""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reranklab.errors import ConfigError

log = logging.getLogger(__name__)


@dataclass
class BenchData:
    """A prepared collection and its first-stage candidates."""

    name: str
    queries: dict[str, str]
    corpus: dict[str, str]
    qrels: dict[str, dict[str, int]]
    candidates: dict[str, dict[str, float]]
    protocol: dict[str, Any]


@dataclass(frozen=True)
class RerankTask:
    """What every side of the re-ranking benchmark scores (the engine, the naive loop, the peers).

    Args:
        cell: the benchmark's cell (:func:`reranklab.bench.engines.bench_cell`).
        candidates: the first-stage candidates of each query.
        qids: the queries to score, in order.
        data: the collection the texts come from.
        progress: show progress bars.
    """

    cell: Mapping[str, Any]
    candidates: Mapping[str, Mapping[str, float]]
    qids: list[str]
    data: BenchData
    progress: bool = False

    def keys(self) -> list[tuple[str, str]]:
        """Every (query, candidate) pair, query by query, in candidate order."""
        return [(q, p) for q in self.qids for p in self.candidates[q]]

    def run_of(self, scores: Iterable[float]) -> dict[str, dict[str, float]]:
        """The run of ``scores`` given in :meth:`keys` order."""
        run: dict[str, dict[str, float]] = {}
        for (qid, pid), score in zip(self.keys(), scores, strict=True):
            run.setdefault(qid, {})[pid] = float(score)
        return run


@dataclass(frozen=True)
class TrainTask:
    """What every side of the training benchmark trains on for one epoch.

    Args:
        cell: the benchmark's cell (:func:`reranklab.bench.engines.bench_cell`).
        columns: the training examples by column (``qid``, ``pid``, ``label`` or a triplet's).
        data: the collection the texts come from.
        progress: show progress bars.
    """

    cell: Mapping[str, Any]
    columns: Mapping[str, list[Any]]
    data: BenchData
    progress: bool = False


def load_bench_data(
    dataset: str,
    work_dir: Path,
    mirror: str | None = None,
    data_dir: str | Path | None = None,
    progress: bool = False,
) -> BenchData:
    """Queries, corpus, qrels and first-stage candidates of ``dataset``, as the DAG makes them.

    Args:
        dataset: a registered dataset.
        work_dir: scratch folder (raw files, prepared files, BM25 index).
        mirror: mirror folder for the raw files (wins over env ``RERANKLAB_MIRROR``).
        data_dir: a prepared folder (``results/data/<dataset>``) to use instead of preparing.
        progress: download progress bar.

    Example:
        >>> import tempfile
        >>> data = load_bench_data("sample", Path(tempfile.mkdtemp()))  # the shipped collection, BM25
        >>> len(data.queries), len(data.corpus), data.protocol["first_stage"]
        (100, 1000, 'bm25')
    """
    from reranklab.config import resolve_protocol, schema_defaults
    from reranklab.data import get_dataset
    from reranklab.data.download import fetch_dataset, resolve_mirror
    from reranklab.io import read_corpus, read_qrels, read_queries, read_run
    from reranklab.retrieval import get_backend, inject_relevant, pool_candidates

    protocol = resolve_protocol({}, dataset)
    if data_dir is None:
        spec = get_dataset(dataset)
        raw = work_dir / "raw"
        fetch_dataset(spec, raw, resolve_mirror(mirror), progress=progress)
        data_dir = work_dir / "data"
        spec.prepare(raw, data_dir, protocol.get("options"))
    data_dir = Path(data_dir)
    queries = read_queries(data_dir / "queries.tsv")
    corpus = read_corpus(data_dir / "corpus.parquet")
    qrels = read_qrels(data_dir / "qrels.txt")
    depth = protocol.get("depth")
    if protocol["first_stage"] == "bm25":
        backend = get_backend(schema_defaults()["retrieval"])
        backend.build(data_dir / "corpus.parquet", work_dir / "index")
        candidates = backend.search(work_dir / "index", queries, int(depth))
    else:
        candidates = pool_candidates(read_run(data_dir / "pool.run"), list(queries), depth)
    if protocol.get("inject_relevant") and depth:
        candidates, _ = inject_relevant(
            candidates, qrels, int(depth), int(protocol["relevance_threshold"]), list(queries)
        )
    return BenchData(dataset, queries, corpus, qrels, candidates, protocol)


def tile_data(data: BenchData, copies: int) -> BenchData:
    """``data`` with each query ``copies`` times: copy ``k`` > 0 of query ``q`` is ``q~k``.

    The copies share the passages, judgements and candidates of their query, so a small
    shipped collection gives as many pairs as a GPU needs to be timed, with its own texts
    and lengths (throughput depends on the lengths, not on which pair is which).

    Example:
        >>> data = BenchData("x", {"q": "why"}, {"p": "so"}, {"q": {"p": 1}}, {"q": {"p": 0.0}}, {})
        >>> tiled = tile_data(data, 3)
        >>> list(tiled.queries), tiled.candidates["q~2"]
        (['q', 'q~1', 'q~2'], {'p': 0.0})
    """
    if copies <= 1:
        return data

    def tiled(mapping: dict[str, Any]) -> dict[str, Any]:
        return {
            (qid if k == 0 else f"{qid}~{k}"): value
            for qid, value in mapping.items()
            for k in range(copies)
        }

    return BenchData(
        data.name,
        tiled(data.queries),
        data.corpus,
        tiled(data.qrels),
        tiled(data.candidates),
        data.protocol,
    )


def training_examples(
    data: BenchData, example_kind: str, pairs: int, seed: int
) -> dict[str, list[Any]]:
    """A seeded random subset of the dataset's training examples holding about ``pairs`` pairs.

    The examples are sampled as the DAG's ``sample`` step does (every judged query, the
    protocol's negatives per positive), so the pair lengths are the study's.

    Raises:
        ConfigError: ``example_kind`` has no sampled examples (only pointwise and triplet).
    """
    import numpy as np

    from reranklab.features.batch import collator_for
    from reranklab.sampling import sample_examples

    collator = collator_for(example_kind)
    examples = sample_examples(
        list(data.qrels),
        data.candidates,
        data.qrels,
        data.protocol["negatives_per_positive"],
        int(data.protocol["relevance_threshold"]),
        seed,
    )
    frame = examples.pointwise if example_kind == "pointwise" else examples.triplets
    if list(frame.columns) != list(collator.columns):
        raise ConfigError(f"bench: no sampled examples of kind {example_kind!r}")
    wanted = max(1, math.ceil(pairs / collator.pairs_per_example))
    if len(frame) < wanted:
        log.warning(
            "bench: %s has %d %s examples (%d pairs); asked for %d pairs",
            data.name,
            len(frame),
            example_kind,
            len(frame) * collator.pairs_per_example,
            pairs,
        )
    rows = np.random.default_rng(seed).permutation(len(frame))[:wanted]
    chosen = frame.iloc[np.sort(rows)]
    return {
        name: (
            chosen[name].astype(int).tolist()
            if name == "label"
            else chosen[name].astype(str).tolist()
        )
        for name in collator.columns
    }


def rerank_pairs(
    data: BenchData, pairs: int, seed: int
) -> tuple[dict[str, dict[str, float]], list[str]]:
    """Whole candidate lists of seeded random queries until about ``pairs`` pairs.

    Returns:
        ``(candidates of the chosen queries, their qids)``.
    """
    import numpy as np

    qids = [q for q in data.candidates if data.candidates[q]]
    order = np.random.default_rng(seed).permutation(len(qids))
    chosen: list[str] = []
    total = 0
    for i in order.tolist():
        if total >= pairs:
            break
        chosen.append(qids[i])
        total += len(data.candidates[qids[i]])
    if total < pairs:
        log.warning("bench: %s has %d candidate pairs; asked for %d", data.name, total, pairs)
    return {q: data.candidates[q] for q in chosen}, chosen
