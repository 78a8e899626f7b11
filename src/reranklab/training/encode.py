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
from reranklab.models.encoder import select_device, set_threads
from reranklab.models.registry import get_variant
from reranklab.training.batching import collator_for

log = logging.getLogger(__name__)


def fold_pairs(
    example_kind: str,
    examples_path: Path,
    candidates: Mapping[str, Mapping[str, float]],
    test_qids: Sequence[str],
) -> list[tuple[str, str]]:
    """The distinct (qid, pid) pairs of a fold: its training examples', then its test candidates'.

    Example:
        >>> pairs = fold_pairs("triplet", Path("results/samples/sample/fold0/triplets.parquet"),
        ...                    read_run("results/first_stage/sample/candidates.run"), folds.fold(0).test)  # doctest: +SKIP
    """
    from reranklab.training.trainer import read_examples

    collator_cls = collator_for(example_kind)
    columns = read_examples(examples_path, collator_cls.columns)
    keys = collator_cls.pair_keys(columns)
    keys += [(qid, pid) for qid in dict.fromkeys(test_qids) for pid in candidates.get(qid, {})]
    return list(dict.fromkeys(keys))


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
        cell: ``variant``, ``max_length`` and ``training`` (``encoder``, ``device``,
            ``eval_batch_size``) of the resolved cell.
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

    Example:
        >>> meta = encode_fold(cell, Path("results/samples/sample/fold0/triplets.parquet"), run,
        ...                    folds.fold(0).test, queries, corpus, Path("results/cache/sample/dmn_lite-L128/fold0"))  # doctest: +SKIP
        >>> meta["pairs"]  # doctest: +SKIP
        1140
    """
    started = time.perf_counter()
    spec = get_variant(cell["variant"])
    if not spec.needs_cache:
        raise ConfigError(f"variant {spec.name!r} has no encode step (only variants on a frozen, cached encoder do)")
    training = dict(cell["training"])
    set_threads(int(training.get("threads") or 0) or int(threads or 0))
    device = select_device(str(training.get("device", "auto")))
    keys = fold_pairs(spec.example_kind, Path(examples_path), candidates, test_qids)
    model = spec.build(training["encoder"], training, int(cell["max_length"]))
    meta = dict(spec.encode(model, keys, queries, corpus, Path(out_dir), device=device, progress=progress))
    meta["seconds"] = time.perf_counter() - started
    log.info("encoded %d pairs of %s with the frozen %s in %.1f s", len(keys), spec.name, training["encoder"], meta["seconds"])
    return meta
