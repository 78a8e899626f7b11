"""A bi-encoder: query and passage encoded apart, pooled, compared by cosine similarity.

The way sentence-transformers uses an encoder such as ``all-MiniLM-L6-v2`` (the packaged
MiniLM was trained so): each text is encoded alone, its token vectors are averaged over the
attention mask (``pooling: mean``; ``cls`` takes the first token's vector), and a (query,
passage) pair scores the cosine of the two vectors, written to runs in float64. Unlike a
cross-encoder it needs no head, so the pre-trained encoder ranks before any fine-tuning
(zero-shot). A saved model is a directory::

    config.json, model.safetensors, tokenizer files   # the encoder (save_pretrained)
    reranker.json                                      # variant, pooling, lengths, encoder

Inputs (:class:`BiEncoderFeatures`): each pair's query and passage as separate token sequences
(tokenised once per distinct text), plus the distinct query and passage ids of each row, which
the in-batch-negatives loss uses to leave out in-batch "negatives" that are in fact relevant.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from reranklab.features.types import EncodedPairs, KeyedPairs, distinct_pairs
from reranklab.models.encoder import encoder_inputs, load_encoder, save_tokenizer
from reranklab.models.saved import read_meta, ready, variant_meta, write_meta

Pooling = Literal["mean", "cls"]
CACHED_VECTORS = 50_000  # texts whose vectors a scoring session keeps (~75 MB at 384 dimensions)


def pool(hidden: torch.Tensor, attention_mask: torch.Tensor, pooling: str) -> torch.Tensor:
    """Sentence vectors ``[B, H]`` of token vectors ``[B, T, H]``.

    ``mean``: the average over the real tokens (sentence-transformers' mean pooling); ``cls``:
    the first token's vector.

    Example:
        >>> hidden = torch.tensor([[[1.0, 0.0], [3.0, 2.0], [9.0, 9.0]]])
        >>> pool(hidden, torch.tensor([[1, 1, 0]]), "mean").tolist(), pool(hidden, torch.tensor([[1, 1, 0]]), "cls").tolist()
        ([[2.0, 1.0]], [[1.0, 0.0]])
    """
    if pooling == "cls":
        return hidden[:, 0]
    if pooling != "mean":
        raise ValueError(f"unknown pooling {pooling!r} (known: mean, cls)")
    mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
    return (hidden * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1e-9)


class BiEncoder(nn.Module):
    """One encoder for queries and passages; a pair scores the cosine of their pooled vectors.

    Args:
        encoder: a transformers ``AutoModel``.
        tokenizer: its tokenizer (saved with the model).
        variant: the registered variant name (written to ``reranker.json``).
        max_length: word pieces of a passage (the cell's max length).
        query_max_length: word pieces of a query (``None`` = ``max_length``).
        pooling: ``mean`` or ``cls``.
        encoder_name: the ``training.encoder`` it was built from (provenance only).

    Example:
        >>> from reranklab.models.tiny import tiny_encoder
        >>> model = BiEncoder(*tiny_encoder(["who", "me"]), variant="biencoder", max_length=16)
        >>> features = bi_encoder_features(model, [("q1", "p1")], {"q1": "who"}, {"p1": "me"}, progress=False)
        >>> scores = model.score(features.batch([0]))
        >>> scores.dtype, bool(-1.0 <= scores[0] <= 1.0)
        (torch.float64, True)
    """

    def __init__(
        self,
        encoder: nn.Module,
        tokenizer: Any,
        *,
        variant: str,
        max_length: int,
        query_max_length: int | None = None,
        pooling: str = "mean",
        encoder_name: str | None = None,
    ) -> None:
        super().__init__()
        if pooling not in ("mean", "cls"):
            raise ValueError(f"unknown pooling {pooling!r} (known: mean, cls)")
        self.encoder = encoder
        self.tokenizer = tokenizer
        self.variant = variant
        self.max_length = int(max_length)
        self.query_max_length = int(query_max_length or max_length)
        self.pooling = pooling
        self.encoder_name = encoder_name
        # What the featurizer reads (as a cross-encoder's ``inputs``), saved in reranker.json.
        self.inputs = {"query_max_length": self.query_max_length}
        # Scoring: the vectors of texts already encoded (a query has many candidates; a passage
        # may be several queries' candidate), by their word pieces; emptied whenever the model
        # leaves eval mode or enters it, since the weights may have changed.
        self._vectors: dict[bytes, torch.Tensor] = {}

    @classmethod
    def from_encoder(cls, encoder: str, **kwargs: Any) -> BiEncoder:
        """A bi-encoder on the pre-trained ``encoder`` (see :func:`load_encoder`)."""
        model, tokenizer = load_encoder(encoder)
        return cls(model, tokenizer, encoder_name=encoder, **kwargs)

    @property
    def device(self) -> torch.device:
        return next(self.encoder.parameters()).device

    def embed(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        """Unit-length sentence vectors ``[B, H]`` (float32) of padded single texts."""
        outputs = self.encoder(**encoder_inputs(self.encoder, input_ids, attention_mask, None))
        pooled = pool(outputs.last_hidden_state, attention_mask, self.pooling)
        return F.normalize(pooled.float(), dim=-1)

    def train(self, mode: bool = True) -> BiEncoder:
        self._vectors.clear()
        return super().train(mode)

    def _embed_once(self, inputs: Mapping[str, torch.Tensor]) -> torch.Tensor:
        # embed(), each distinct text (by its word pieces) computed once while the weights stay.
        ids, mask = inputs["input_ids"], inputs["attention_mask"]
        keys = [row[m.bool()].cpu().numpy().tobytes() for row, m in zip(ids, mask, strict=True)]
        first: dict[bytes, int] = {}
        for i, key in enumerate(keys):
            if key not in self._vectors:
                first.setdefault(key, i)
        if first:
            if len(self._vectors) + len(first) > CACHED_VECTORS:
                self._vectors.clear()  # bounded memory; only repeats since are computed again
                first = {key: keys.index(key) for key in dict.fromkeys(keys)}
            rows = torch.tensor(list(first.values()), device=ids.device)
            width = int(mask[rows].sum(dim=1).max())
            vectors = self.embed(ids[rows, :width], mask[rows, :width])
            self._vectors.update(zip(first, vectors, strict=True))
        return torch.stack([self._vectors[key] for key in keys])

    def forward(
        self,
        query: Mapping[str, torch.Tensor],
        passage: Mapping[str, torch.Tensor],
        query_id: torch.Tensor | None = None,
        passage_id: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Cosine similarities ``[B, 1]`` of the rows' (query, passage) pairs.

        Without gradients (scoring) each distinct text is encoded once per eval session.
        """
        if self.training or torch.is_grad_enabled():
            q = self.embed(query["input_ids"], query["attention_mask"])
            p = self.embed(passage["input_ids"], passage["attention_mask"])
        else:
            q, p = self._embed_once(query), self._embed_once(passage)
        return (q * p).sum(dim=-1, keepdim=True)

    def score(self, features: Mapping[str, Any]) -> torch.Tensor:
        """Ranking scores ``[B]``: the raw cosines, float64."""
        return self(**features)[:, 0].double()

    def save(self, directory: str | Path) -> Path:
        """Write the encoder, the tokenizer and ``reranker.json`` into ``directory``."""
        out = Path(directory)
        out.mkdir(parents=True, exist_ok=True)
        self.encoder.save_pretrained(out)
        save_tokenizer(self.tokenizer, out)
        write_meta(
            out,
            {
                **variant_meta(self),
                "max_length": self.max_length,
                "query_max_length": self.query_max_length,
                "pooling": self.pooling,
                "similarity": "cosine",
                "encoder": self.encoder_name,
            },
        )
        return out


def load_bi_encoder(directory: str | Path, device: torch.device | str | None = None) -> BiEncoder:
    """Restore a model written by :meth:`BiEncoder.save`, offline, in eval mode.

    Raises:
        FormatError: ``reranker.json`` is missing or incomplete.

    Example:
        >>> import tempfile
        >>> from reranklab.models.tiny import tiny_encoder
        >>> saved = BiEncoder(*tiny_encoder(["who"]), variant="biencoder", max_length=16).save(tempfile.mkdtemp())
        >>> model = load_bi_encoder(saved)
        >>> model.pooling, model.query_max_length, model.training
        ('mean', 16, False)
    """
    from reranklab.errors import FormatError
    from reranklab.models.saved import META_FILE

    path = Path(directory)
    meta = read_meta(path)
    try:
        encoder, tokenizer = load_encoder(str(path.resolve()))
        model = BiEncoder(
            encoder,
            tokenizer,
            variant=meta["variant"],
            max_length=int(meta["max_length"]),
            query_max_length=int(meta["query_max_length"]),
            pooling=meta["pooling"],
            encoder_name=meta.get("encoder"),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise FormatError(
            path / META_FILE, None, f"incomplete or invalid bi-encoder description ({exc!r})"
        ) from None
    return ready(model, device)


@dataclass(frozen=True)
class BiEncoderFeatures(KeyedPairs):
    """Distinct (qid, pid) pairs as separately tokenised queries and passages.

    Args:
        queries: the distinct queries' word pieces.
        passages: the distinct passages' word pieces.
        query_row: ``[n]`` each pair's row in ``queries``.
        passage_row: ``[n]`` each pair's row in ``passages``.
        pad_token_id: the tokenizer's pad id.
    """

    queries: EncodedPairs
    passages: EncodedPairs
    query_row: np.ndarray
    passage_row: np.ndarray
    pad_token_id: int = 0

    @property
    def lengths(self) -> np.ndarray:
        """A pair's cost: its query's and its passage's word pieces."""
        return self.queries.lengths[self.query_row] + self.passages.lengths[self.passage_row]

    def batch(
        self, rows: Sequence[int] | np.ndarray, pad_to_multiple_of: int | None = None
    ) -> dict[str, Any]:
        """``{"query": inputs, "passage": inputs, "query_id": [B], "passage_id": [B]}`` of ``rows``."""
        rows = np.asarray(rows, dtype=np.int64)
        query_rows, passage_rows = self.query_row[rows], self.passage_row[rows]
        return {
            "query": self.queries.pad(query_rows, self.pad_token_id, pad_to_multiple_of),
            "passage": self.passages.pad(passage_rows, self.pad_token_id, pad_to_multiple_of),
            "query_id": torch.from_numpy(query_rows.copy()),
            "passage_id": torch.from_numpy(passage_rows.copy()),
        }

    def summary(self) -> dict[str, Any]:
        return {
            "distinct_queries": len(self.queries),
            "distinct_passages": len(self.passages),
            "passages_at_max_length": self.passages.at_max_length(),
            "queries_at_max_length": self.queries.at_max_length(),
        }


def _tokenise(tokenizer: Any, texts: list[str], max_length: int) -> EncodedPairs:
    # [CLS] text [SEP], cut at max_length; padding is done per batch later.
    ids = tokenizer(texts, truncation=True, max_length=max_length)["input_ids"] if texts else []
    return EncodedPairs.from_pieces(ids, None, max_length)


def bi_encoder_features(
    model: Any,
    id_pairs: Iterable[tuple[str, str]],
    queries: Mapping[str, str],
    corpus: Mapping[str, str],
    *,
    progress: bool = True,
) -> BiEncoderFeatures:
    """The ``featurize`` hook of the bi-encoder: each distinct query and passage tokenised once.

    Args:
        model: a :class:`BiEncoder` (its tokenizer, ``max_length`` and ``query_max_length``).
        id_pairs: ``(qid, pid)`` pairs, duplicates allowed.
        queries, corpus: ``{qid: text}``, ``{pid: text}``.
        progress: unused (tokenising distinct texts takes seconds).

    Raises:
        ReranklabError: a qid or pid has no text.

    Example:
        >>> from types import SimpleNamespace
        >>> from reranklab.models.tiny import tiny_tokenizer
        >>> model = SimpleNamespace(tokenizer=tiny_tokenizer(["who", "me", "you"]), max_length=16, query_max_length=8)
        >>> f = bi_encoder_features(model, [("q1", "p1"), ("q1", "p2")], {"q1": "who"}, {"p1": "me", "p2": "you"})
        >>> len(f), f.summary()["distinct_queries"], f.batch([1])["passage_id"].tolist()
        (2, 1, [1])
    """
    position = distinct_pairs(id_pairs, queries, corpus)
    keys = list(position)
    qids = list(dict.fromkeys(qid for qid, _ in keys))
    pids = list(dict.fromkeys(pid for _, pid in keys))
    query_index = {qid: i for i, qid in enumerate(qids)}
    passage_index = {pid: i for i, pid in enumerate(pids)}
    tokenizer = model.tokenizer
    return BiEncoderFeatures(
        keys,
        position,
        queries=_tokenise(tokenizer, [queries[q] for q in qids], int(model.query_max_length)),
        passages=_tokenise(tokenizer, [corpus[p] for p in pids], int(model.max_length)),
        query_row=np.asarray([query_index[q] for q, _ in keys], dtype=np.int64),
        passage_row=np.asarray([passage_index[p] for _, p in keys], dtype=np.int64),
        pad_token_id=int(tokenizer.pad_token_id or 0),
    )
