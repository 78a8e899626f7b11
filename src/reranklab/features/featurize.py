"""The default ``featurize`` hook: each distinct (qid, pid) pair as one tokenised sequence.

:func:`token_features` is what a variant without its own hook uses (training, validation and
re-ranking alike); :func:`encode_id_pairs` is its core, also used with a text transform
(MarkedBERT's marking). Both tokenise through the model step's feature cache when one is open
(:func:`~reranklab.features.cache.feature_cache_scope`), so variants are cached without
knowing it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from reranklab.features.cache import encode_cached
from reranklab.features.types import PairIndex, distinct_pairs


def encode_id_pairs(
    tokenizer: Any,
    id_pairs: Iterable[tuple[str, str]],
    queries: Mapping[str, str],
    corpus: Mapping[str, str],
    max_length: int,
    *,
    query_max_length: int | None = None,
    transform: Callable[[str, str], tuple[str, str]] | None = None,
    desc: str = "tokenise",
    progress: bool = True,
) -> PairIndex:
    """Tokenise each distinct ``(qid, pid)`` pair once (a pair in many triplets costs one).

    Args:
        tokenizer: a transformers tokenizer.
        id_pairs: ``(qid, pid)`` pairs, duplicates allowed.
        queries: ``{qid: text}``.
        corpus: ``{pid: text}``.
        max_length, query_max_length: see :func:`~reranklab.features.tokenize.encode_text_pairs`.
        transform: ``(query text, passage text) -> (query text, passage text)`` applied to
            each pair before tokenising (e.g. MarkedBERT's marking); ``None`` = the texts as is.
        desc: progress bar label.
        progress: show a tqdm bar.

    Raises:
        ReranklabError: a qid or pid has no text.

    Example:
        >>> from reranklab.models.tiny import tiny_tokenizer
        >>> tokenizer = tiny_tokenizer(["who", "me"])
        >>> index = encode_id_pairs(tokenizer, [("q1", "p1"), ("q1", "p1")], {"q1": "who"}, {"p1": "me"}, 16, progress=False)
        >>> len(index.encoded), index["q1", "p1"]
        (1, 0)
    """
    position = distinct_pairs(id_pairs, queries, corpus)
    keys = list(position)
    texts = [(queries[qid], corpus[pid]) for qid, pid in keys]
    if transform is not None:
        texts = [transform(query, passage) for query, passage in texts]
    encoded = encode_cached(
        tokenizer,
        texts,
        max_length,
        query_max_length=query_max_length,
        desc=desc,
        progress=progress,
    )
    return PairIndex(keys, position, encoded, int(tokenizer.pad_token_id or 0))


def token_features(
    model: Any,
    id_pairs: Iterable[tuple[str, str]],
    queries: Mapping[str, str],
    corpus: Mapping[str, str],
    *,
    transform: Callable[[str, str], tuple[str, str]] | None = None,
    progress: bool = True,
    desc: str = "tokenise",
) -> PairIndex:
    """The default ``featurize`` hook: one ``[CLS] q [SEP] p [SEP]`` sequence per pair.

    Uses the model's tokenizer, ``model.max_length`` and ``model.inputs["query_max_length"]``
    (when the model has it), so training and re-ranking tokenise the same way.

    Args:
        model: a re-ranker with ``tokenizer`` and ``max_length``.
        id_pairs, queries, corpus: see :func:`encode_id_pairs`.
        transform: text preprocessing of each pair (see :func:`encode_id_pairs`).
        progress: show a tqdm bar.
        desc: progress bar label.

    Example:
        >>> from types import SimpleNamespace
        >>> from reranklab.models.tiny import tiny_tokenizer
        >>> model = SimpleNamespace(tokenizer=tiny_tokenizer(["who", "me", "you"]), max_length=16)
        >>> features = token_features(model, [("q1", "p1"), ("q1", "p2")], {"q1": "who"}, {"p1": "me", "p2": "you"}, progress=False)
        >>> features.batch([features["q1", "p2"]])["input_ids"].shape
        torch.Size([1, 5])
    """
    inputs = getattr(model, "inputs", None) or {}
    return encode_id_pairs(
        model.tokenizer,
        id_pairs,
        queries,
        corpus,
        int(model.max_length),
        query_max_length=inputs.get("query_max_length"),
        transform=transform,
        desc=desc,
        progress=progress,
    )
