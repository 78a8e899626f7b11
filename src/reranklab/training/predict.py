"""A saved re-ranker of any variant, ready to score (query, passage) text pairs: ``reranklab.load``.

:func:`load` restores the model with its variant's loader and wraps it in a :class:`Reranker`,
whose :meth:`~Reranker.predict` runs the same code as the ``rerank`` step
(:func:`reranklab.training.inference.rerank_with_model`: the variant's featurizer, with its
query cut, marking, chunking or word vocabulary; length-sorted batches; the same precision), so
its scores are the raw float64 values a run file of that model holds.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from reranklab.io.trec import rank_order
from reranklab.models.encoder import select_device
from reranklab.models.registry import load_model
from reranklab.training.inference import rerank_with_model


class Reranker:
    """A loaded re-ranker: ``predict`` scores text pairs, ``score`` one query's passages,
    ``rank`` orders them, ``rerank`` re-scores a first-stage run.

    Args:
        model: a loaded re-ranker (what :func:`reranklab.models.registry.load_model` returns).
        directory: the folder it was loaded from (for messages).

    Example:
        >>> import tempfile
        >>> from reranklab.models.reranker import CrossEncoderReranker
        >>> from reranklab.models.tiny import tiny_encoder
        >>> saved = CrossEncoderReranker(*tiny_encoder(["who", "me", "you"]), variant="pointwise",
        ...     num_outputs=2, score="p_relevant", max_length=16).save(tempfile.mkdtemp())
        >>> reranker = load(saved, device="cpu")
        >>> reranker.variant, reranker.predict([("who", "me"), ("who", "you")]).shape
        ('pointwise', (2,))
    """

    def __init__(self, model: Any, directory: str | Path | None = None) -> None:
        self.model = model
        self.directory = None if directory is None else Path(directory)

    @property
    def variant(self) -> str:
        """The registered variant of the model."""
        return str(self.model.variant)

    @property
    def max_length(self) -> int:
        """Word pieces (or tokens) per pair the model was trained and scores at."""
        return int(self.model.max_length)

    def __repr__(self) -> str:
        return f"Reranker(variant={self.variant!r}, max_length={self.max_length}, directory={str(self.directory)!r})"

    def predict(
        self,
        pairs: Sequence[tuple[str, str]],
        *,
        batch_size: int = 32,
        precision: str = "auto",
        packing: bool = False,
        progress: bool = False,
    ) -> np.ndarray:
        """The ranking scores of ``(query, passage)`` text pairs, in their order.

        Args:
            pairs: ``(query text, passage text)`` pairs; duplicates are scored once.
            batch_size: pairs per forward pass.
            precision: as ``training.precision`` (``auto``: bf16 autocast on a GPU that has
                it, fp32 on CPU; ``fp32`` for full precision anywhere).
            packing: pack short pairs into shared rows (as ``training.packing``; the same
                scores to float rounding, less compute on pairs of mixed lengths).
            progress: show progress bars.

        Returns:
            ``float64 [len(pairs)]``, higher = more relevant: the raw score a run holds (the
            margin of a two-way head, a logit), never a probability.

        Raises:
            ValueError: a pair is not two strings (naming its index).
        """
        queries: dict[str, str] = {}
        passages: dict[str, str] = {}
        keys: list[tuple[str, str]] = []
        qid_of: dict[str, str] = {}
        pid_of: dict[str, str] = {}
        for i, pair in enumerate(pairs):
            if (
                not isinstance(pair, tuple | list)
                or len(pair) != 2
                or not all(isinstance(text, str) for text in pair)
            ):
                raise ValueError(f"pairs[{i}] is not a (query, passage) pair of strings: {pair!r}")
            query, passage = pair
            # Ids stand for texts: the featurizer works on ids, each distinct pair once.
            qid = qid_of.setdefault(query, f"q{len(qid_of)}")
            pid = pid_of.setdefault(passage, f"p{len(pid_of)}")
            queries[qid], passages[pid] = query, passage
            keys.append((qid, pid))
        if not keys:
            return np.zeros(0, dtype=np.float64)
        candidates: dict[str, dict[str, float]] = {}
        for qid, pid in keys:
            candidates.setdefault(qid, {})[pid] = 0.0
        run = rerank_with_model(
            self.model,
            candidates,
            list(candidates),
            queries,
            passages,
            batch_size,
            progress=progress,
            precision=precision,
            packing=packing,
        )
        return np.array([run[qid][pid] for qid, pid in keys], dtype=np.float64)

    def rank(
        self, query: str, passages: Sequence[str], *, top_k: int | None = None, **options: Any
    ) -> list[dict[str, Any]]:
        """``passages`` ordered by score for ``query``: ``[{"corpus_id": i, "score": s}, ...]``.

        Equal scores keep the passages' order (not reranklab's seeded tie order of run files,
        which needs ids). ``options`` go to :meth:`predict`.

        Example:
            >>> import tempfile
            >>> from reranklab.models.reranker import CrossEncoderReranker
            >>> from reranklab.models.tiny import tiny_encoder
            >>> saved = CrossEncoderReranker(*tiny_encoder(["who", "me", "you"]), variant="bertlets",
            ...     num_outputs=1, score="logit", max_length=16).save(tempfile.mkdtemp())
            >>> ranked = load(saved, device="cpu").rank("who", ["me", "you", "me you"], top_k=2)
            >>> len(ranked), sorted(ranked[0])
            (2, ['corpus_id', 'score'])
        """
        scores = self.predict([(query, passage) for passage in passages], **options)
        order = sorted(range(len(scores)), key=lambda i: -scores[i])
        return [{"corpus_id": i, "score": float(scores[i])} for i in order[:top_k]]

    def score(self, query: str, passages: Sequence[str], **options: Any) -> np.ndarray:
        """The scores of ``passages`` for ``query``, in their order (:meth:`predict`'s)."""
        return self.predict([(query, passage) for passage in passages], **options)

    def rerank(
        self,
        run: Mapping[str, Mapping[str, float]],
        queries: Mapping[str, str],
        corpus: Mapping[str, str],
        *,
        depth: int | None = None,
        batch_size: int = 32,
        precision: str = "auto",
        progress: bool = False,
    ) -> dict[str, dict[str, float]]:
        """Re-score a first-stage run: each query's top ``depth`` candidates (all by default),
        ordered by the run's scores with ties in reranklab's seeded order, never by id.

        Args:
            run: ``{qid: {pid: score}}`` (a TREC run as :func:`reranklab.io.read_run` gives it).
            queries: ``{qid: text}``.
            corpus: ``{pid: text}``.
            depth: candidates re-scored per query.

        Returns:
            ``{qid: {pid: score}}``: the model's raw scores, as the ``rerank`` step writes them
            (:func:`reranklab.io.write_run` writes it with full-precision scores).

        Raises:
            ValueError: a query or passage of the run has no text.

        Example:
            >>> import tempfile
            >>> from reranklab.models.reranker import CrossEncoderReranker
            >>> from reranklab.models.tiny import tiny_encoder
            >>> saved = CrossEncoderReranker(*tiny_encoder(["who", "me", "you"]), variant="bertlets",
            ...     num_outputs=1, score="logit", max_length=16).save(tempfile.mkdtemp())
            >>> run = {"q1": {"p1": 12.0, "p2": 11.0, "p3": 3.0}}
            >>> out = load(saved, device="cpu").rerank(run, {"q1": "who"},
            ...     {"p1": "me", "p2": "you", "p3": "me you"}, depth=2)
            >>> sorted(out["q1"])
            ['p1', 'p2']
        """
        candidates: dict[str, dict[str, float]] = {}
        for qid, scores in run.items():
            if qid not in queries:
                raise ValueError(f"run query {qid!r} has no text in queries")
            ranked = rank_order(dict(scores), str(qid))[:depth]
            missing = [pid for pid, _ in ranked if pid not in corpus]
            if missing:
                raise ValueError(f"run query {qid!r}: passage {missing[0]!r} has no text in corpus")
            candidates[str(qid)] = {pid: float(score) for pid, score in ranked}
        return rerank_with_model(
            self.model,
            candidates,
            list(candidates),
            queries,
            corpus,
            batch_size,
            progress=progress,
            precision=precision,
        )


def load(directory: str | Path, device: str | None = "auto") -> Reranker:
    """Load the re-ranker saved in ``directory`` (any variant), ready to score text pairs.

    Args:
        directory: a model folder written by reranklab (``results/models/<dataset>/<cell>/
            fold<k>``) or by ``reranklab export``.
        device: ``auto`` (CUDA when available), ``cpu``, ``cuda`` or ``cuda:N``.

    Returns:
        A :class:`Reranker` in eval mode on ``device``.

    Raises:
        FormatError: the folder holds no saved re-ranker (naming its ``reranker.json``) or its
            files do not fit.
        ConfigError: an unknown variant or device.

    Example:
        >>> load("/nonexistent")
        Traceback (most recent call last):
        ...
        reranklab.errors.FormatError: /nonexistent/reranker.json: not a saved re-ranker (reranker.json is missing)
    """
    path = Path(directory)
    model = load_model(path, device=select_device(device or "cpu"))
    return Reranker(model, path)
