"""Re-rank first-stage candidates with a saved re-ranker.

Every (query, candidate) pair is featurized once by the model's variant (``featurize`` hook;
by default tokenised), scored in batches sorted by length (dynamic padding, so short pairs are
not padded to ``max_length``) under ``torch.inference_mode``, and the scores are put back in
the candidates' order. A score is the model's raw, ranking-equivalent value in float64 (the
margin ``l1 - l0`` of a two-way head, the logit of a sigmoid head, the raw output of the
others: ``model.score``), never a probability, which saturates at 1.0 and ties a confident
model's top candidates. Ties are left to the run writer (:func:`reranklab.io.rank_order`).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from tqdm.auto import tqdm

from reranklab.features.batch import length_sorted_batches, to_device
from reranklab.features.cache import feature_cache_scope
from reranklab.features.packing import packed_if_supported
from reranklab.features.types import PairFeatures
from reranklab.models.encoder import select_device, set_threads
from reranklab.models.registry import get_variant, load_model
from reranklab.progress import Status
from reranklab.training.precision import Precision, resolve_precision

log = logging.getLogger(__name__)


def score_features(
    model: Any,
    features: PairFeatures,
    batch_size: int,
    *,
    progress: bool = True,
    desc: str = "re-rank",
    precision: Precision | None = None,
    packing: bool = False,
) -> np.ndarray:
    """Raw scores of every pair of ``features`` (``float64``, in row order), longest batches first.

    Args:
        model: a re-ranker (its ``device`` is used; ``model.score(inputs)`` gives the scores).
        features: what the variant's featurizer returned.
        batch_size: pairs per forward pass.
        precision: autocast of the forward pass (``None`` = fp32).
        packing: pack each batch's pairs into rows (``training.packing``) when the model
            reads packed inputs (:func:`~reranklab.features.packing.packed_if_supported`).

    Example:
        >>> from reranklab.models.reranker import CrossEncoderReranker
        >>> from reranklab.models.tiny import tiny_encoder
        >>> model = CrossEncoderReranker(*tiny_encoder(["who", "me", "you"]), variant="pointwise", num_outputs=2,
        ...     score="p_relevant", max_length=16)
        >>> features = get_variant("pointwise").featurizer()(model, [("q1", "p1"), ("q1", "p2")], {"q1": "who"},
        ...     {"p1": "me", "p2": "you"}, progress=False)
        >>> scores = score_features(model, features, batch_size=1, progress=False)
        >>> scores.shape, scores.dtype
        ((2,), dtype('float64'))
    """
    if batch_size < 1:
        raise ValueError("batch_size must be at least 1")
    scores = np.zeros(len(features), dtype=np.float64)
    features = packed_if_supported(model, features, packing)
    device = model.device
    multiple = 8 if device.type == "cuda" else None
    was_training = model.training
    model.eval()
    batches = length_sorted_batches(features.lengths, batch_size)
    status = Status(desc, len(features), unit="pairs", rate_unit="pairs", enabled=progress)
    try:
        with torch.inference_mode():
            for rows in tqdm(
                batches,
                desc=desc,
                unit="batch",
                disable=not progress or not batches,
                mininterval=1.0,
            ):
                inputs = to_device(features.batch(rows, multiple), device)
                with precision.autocast() if precision is not None else contextlib.nullcontext():
                    scores[rows] = model.score(inputs).double().cpu().numpy()
                status.update(len(rows))
    finally:
        model.train(was_training)
    status.close()
    return scores


def candidate_pids(candidates: Mapping[str, Mapping[str, float]], qids: Iterable[str]) -> set[str]:
    """The passage ids of the candidates of ``qids`` (what a re-ranking job reads of the corpus).

    Example:
        >>> sorted(candidate_pids({"q1": {"p1": 2.0, "p2": 1.0}, "q2": {"p3": 1.0}}, ["q1"]))
        ['p1', 'p2']
    """
    return {pid for qid in qids for pid in candidates.get(qid, {})}


def rerank_with_model(
    model: Any,
    candidates: Mapping[str, Mapping[str, float]],
    qids: Sequence[str],
    queries: Mapping[str, str],
    corpus: Mapping[str, str],
    batch_size: int,
    *,
    progress: bool = True,
    precision: str = "auto",
    feature_cache: str | Path | None = None,
    dataset: str | None = None,
    frozen_features: str | Path | None = None,
    packing: bool = False,
) -> dict[str, dict[str, float]]:
    """:func:`rerank` with a model already loaded (and placed on its device)."""
    wanted = list(dict.fromkeys(qids))
    missing = [qid for qid in wanted if not candidates.get(qid)]
    if missing:
        log.warning(
            "%d of %d queries have no candidates to re-rank (e.g. %s)",
            len(missing),
            len(wanted),
            missing[0],
        )
    keys = [(qid, pid) for qid in wanted for pid in candidates.get(qid, {})]
    was_training = model.training
    model.eval()  # featurizers see the model as it will score (e.g. no dropout in cached features)
    try:
        with feature_cache_scope(feature_cache, dataset):
            spec = get_variant(model.variant)
            index = spec.featurizer()(
                model,
                keys,
                queries,
                corpus,
                progress=progress,
                **spec.featurize_options(frozen_features),
            )
    finally:
        model.train(was_training)
    scores = score_features(
        model,
        index,
        batch_size,
        progress=progress,
        precision=resolve_precision(precision, model.device),
        packing=packing,
    )
    run: dict[str, dict[str, float]] = {}
    for qid, pid in keys:
        run.setdefault(qid, {})[pid] = float(scores[index[qid, pid]])
    return run


def rerank(
    model_dir: Path,
    candidates: Mapping[str, Mapping[str, float]],
    qids: Sequence[str],
    queries: Mapping[str, str],
    corpus: Mapping[str, str],
    batch_size: int,
    device: str = "auto",
    threads: int = 0,
    progress: bool = True,
    precision: str = "auto",
    feature_cache: str | Path | None = None,
    dataset: str | None = None,
    frozen_features: str | Path | None = None,
    packing: bool = False,
    compile_model: bool = False,
) -> dict[str, dict[str, float]]:
    """Score every candidate passage of each query in ``qids`` with the model in ``model_dir``.

    Args:
        model_dir: a directory written by :func:`reranklab.training.trainer.train_model`.
        candidates: the first-stage run ``{qid: {pid: score}}`` (its scores are ignored).
        qids: the queries to re-rank (e.g. a fold's test queries); others are skipped.
        queries: ``{qid: text}``.
        corpus: ``{pid: text}``.
        batch_size: pairs per forward pass (``training.eval_batch_size``).
        device: ``auto``, ``cpu``, ``cuda`` or ``cuda:N``.
        threads: torch CPU threads (0 = torch's default).
        progress: show tqdm bars.
        precision: ``training.precision`` (autocast of the forward pass; ``auto`` = bf16 on
            GPUs that have it, fp32 on CPU).
        feature_cache: ``training.feature_cache``: tokenised pairs shared with the other jobs
            of ``dataset`` (``None`` = tokenise here).
        dataset: the dataset (the cache's folder).
        frozen_features: the fold's frozen-feature cache of ``reranklab encode``, for variants
            that read one (``VariantSpec.needs_cache``).
        packing: ``training.packing`` (packed batches where the model reads them).
        compile_model: ``training.compile`` (the encoders through ``torch.compile``).

    Returns:
        The re-ranked run ``{qid: {pid: score}}``, higher = more relevant; each score is the
        model's raw float64 value (margin or logit, not a probability: see the module's
        docstring); queries without candidates are absent.

    Example:
        >>> import tempfile
        >>> from reranklab.models.reranker import CrossEncoderReranker
        >>> from reranklab.models.tiny import tiny_encoder
        >>> model_dir = CrossEncoderReranker(*tiny_encoder(["who", "me", "you"]), variant="pointwise", num_outputs=2,
        ...     score="p_relevant", max_length=16).save(tempfile.mkdtemp())
        >>> run = rerank(model_dir, {"q1": {"p1": 9.0, "p2": 8.0}, "q2": {"p1": 1.0}}, ["q1"], {"q1": "who"},
        ...     {"p1": "me", "p2": "you"}, batch_size=8, device="cpu", progress=False)
        >>> list(run), sorted(run["q1"])
        (['q1'], ['p1', 'p2'])
    """
    set_threads(threads)
    model = load_model(model_dir, device=select_device(device))
    if compile_model:
        from reranklab.training.compile import compile_encoders

        compile_encoders(model)
    return rerank_with_model(
        model,
        candidates,
        qids,
        queries,
        corpus,
        batch_size,
        progress=progress,
        precision=precision,
        feature_cache=feature_cache,
        dataset=dataset,
        frozen_features=frozen_features,
        packing=packing,
    )
