"""The ``encode`` step: a frozen encoder's features of one fold's pairs, computed once.

For variants with an ``encode`` hook (:attr:`VariantSpec.needs_cache`, the lite variants), the
pairs the fold's ``train`` job reads (its sampled examples) and the pairs its ``rerank`` job
scores (the test queries' first-stage candidates) go through the frozen encoder once; both jobs
then read the cache instead of running the encoder.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from reranklab.errors import ConfigError
from reranklab.features.batch import collator_for
from reranklab.models.encoder import select_device, set_threads
from reranklab.models.registry import cell_spec
from reranklab.settings.training import training_view

log = logging.getLogger(__name__)


def fold_pairs(
    example_kind: str,
    examples_path: Path,
    candidates: Mapping[str, Mapping[str, float]],
    test_qids: Sequence[str],
) -> tuple[list[tuple[str, str]], int]:
    """The distinct (qid, pid) pairs of a fold: its training examples', then its test
    candidates'; and how many of them are the training examples'.

    Example:
        >>> import tempfile
        >>> import pyarrow as pa, pyarrow.parquet as pq
        >>> examples = Path(tempfile.mkdtemp()) / "triplets.parquet"
        >>> pq.write_table(pa.table({"qid": ["q1"], "pos_pid": ["p1"], "neg_pid": ["p2"]}), examples)
        >>> fold_pairs("triplet", examples, {"q1": {"p1": 1.0}, "q2": {"p1": 2.0, "p3": 1.0}}, ["q2"])
        ([('q1', 'p1'), ('q1', 'p2'), ('q2', 'p1'), ('q2', 'p3')], 2)
    """
    from reranklab.training.plan import read_examples

    collator_cls = collator_for(example_kind)
    columns = read_examples(examples_path, collator_cls.columns)
    training = list(dict.fromkeys(collator_cls.pair_keys(columns)))
    test = [(qid, pid) for qid in dict.fromkeys(test_qids) for pid in candidates.get(qid, {})]
    return list(dict.fromkeys(training + test)), len(training)


def encode_fold(
    cell: Mapping[str, Any],
    examples_path: Path,
    candidates: Mapping[str, Mapping[str, float]],
    test_qids: Sequence[str],
    queries: Mapping[str, str],
    corpus: Mapping[str, str],
    out_dir: Path,
    *,
    threads: int = 0,
    progress: bool = True,
) -> dict[str, Any]:
    """Write the frozen-feature cache of one fold for the cell's variant.

    Args:
        cell: ``variant`` (and an alias's ``base``), ``max_length`` and ``training``
            (``encoder``, ``device``, ``eval_batch_size``) of the resolved cell.
        examples_path: the fold's sampled training examples.
        candidates: the first-stage run.
        test_qids: the fold's test queries.
        queries, corpus: the texts.
        out_dir: the cache directory (replaced atomically).
        threads: torch CPU threads (0 = torch's default).
        progress: show tqdm bars.

    Returns:
        What the variant's ``encode`` hook reports (the cache's ``meta.json``) plus timings.

    Raises:
        ConfigError: the variant precomputes nothing.

    Example (skipped as a doctest: it needs a study's resolved cell and a fold's files;
    ``tests/test_variants_dmn.py`` runs it on a tiny BERT):
        >>> meta = encode_fold(cell, Path("results/samples/sample/fold0/triplets.parquet"), run,
        ...                    folds.fold(0).test, queries, corpus, Path("results/cache/sample/dmn_lite-L128/fold0"))  # doctest: +SKIP
        >>> meta["pairs"]  # doctest: +SKIP
        1140
    """
    started = time.perf_counter()
    spec = cell_spec(cell)
    if not spec.needs_cache:
        raise ConfigError(
            f"variant {spec.name!r} has no encode step (only variants on a frozen, cached encoder do)"
        )
    training = dict(cell["training"])
    settings = training_view(training)
    set_threads(settings.threads or int(threads or 0))
    device = select_device(settings.device)
    keys, training_pairs = fold_pairs(spec.example_kind, Path(examples_path), candidates, test_qids)
    model = spec.build(settings.encoder, training, int(cell["max_length"]))
    meta = dict(
        spec.encode(
            model,
            keys,
            queries,
            corpus,
            Path(out_dir),
            device=device,
            progress=progress,
            training_pairs=training_pairs,
        )
    )
    meta["seconds"] = time.perf_counter() - started
    log.info(
        "encoded %d pairs of %s with the frozen %s in %.1f s",
        len(keys),
        spec.name,
        settings.encoder,
        meta["seconds"],
    )
    return meta
