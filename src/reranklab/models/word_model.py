"""What the static-word-vector baselines (QA-LSTM, K-NRM) share: vocabulary, inputs, saving.

A :class:`StaticWordRanker` owns a frozen embedding matrix (:mod:`reranklab.models.word_vectors`)
and maps a batch of padded query and passage token ids to one value per pair. Its vocabulary
is built by the first featurization of a fresh model (the training job), from every query and
passage text of the collection, and saved with the model; re-ranking reuses it.

A saved model is a directory::

    model.safetensors      # all parameters, the frozen embedding matrix included
    vocab.txt              # the vocabulary, one token per line (row i = line i)
    tokenizer files        # only with the encoder's word pieces as tokens
    reranker.json          # variant, architecture settings, vector source, max_length
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import torch
from safetensors.torch import load_file
from torch import nn

from reranklab.errors import ConfigError, FormatError
from reranklab.features.types import KeyedPairs, distinct_pairs, ragged
from reranklab.io.atomic import atomic_write_text
from reranklab.models.encoder import save_tokenizer
from reranklab.models.saved import (
    META_FILE,
    read_meta,
    ready,
    save_tensors,
    variant_meta,
    write_meta,
)
from reranklab.models.word_vectors import (
    PAD,
    UNK,
    collection_tokens,
    encoder_matrix,
    glove_dimension,
    glove_matrix,
    word_tokens,
)

WEIGHTS_FILE = "model.safetensors"
VOCAB_FILE = "vocab.txt"


def vector_source(encoder: str, training: Mapping[str, Any]) -> dict[str, str]:
    """``{"kind": "glove", "path": …}`` when ``training.embeddings_path`` is set, else the encoder's."""
    path = training.get("embeddings_path")
    if path:
        return {"kind": "glove", "path": str(path)}
    return {"kind": "encoder", "encoder": encoder}


def source_dimension(source: Mapping[str, str]) -> tuple[int, Any]:
    """``(vector size, HF tokenizer or None)`` of a vector source, without loading encoder weights."""
    if source["kind"] == "glove":
        return glove_dimension(source["path"]), None
    from transformers import AutoConfig, AutoTokenizer

    from reranklab.models.encoder import is_local, quiet_transformers, resolve_encoder

    quiet_transformers()
    resolved = resolve_encoder(source["encoder"])
    common = {"local_files_only": True} if is_local(resolved) else {}
    try:
        config = AutoConfig.from_pretrained(resolved, **common)
        tokenizer = AutoTokenizer.from_pretrained(resolved, **common)
    except OSError as exc:
        raise ConfigError(
            f"training.encoder: cannot load {source['encoder']!r} for its embedding matrix ({exc})"
        ) from None
    return int(config.hidden_size), tokenizer


class StaticWordRanker(nn.Module):
    """Base of the rankers on frozen word vectors.

    Subclasses define ``arch`` (the name in ``reranklab.json``), :meth:`options` (their
    settings, the constructor's keyword arguments) and ``forward(query_ids, query_mask,
    passage_ids, passage_mask) -> [B]`` (what the loss compares) and may override
    :meth:`score` (ranking scores).

    Args:
        dim: the vector size.
        variant: the registered variant name.
        max_length: tokens kept of a query and of a passage (each).
        source: where the vectors come from (:func:`vector_source`).
        tokenizer: the encoder's tokenizer when ``source`` is the encoder.
    """

    arch: ClassVar[str]

    def __init__(
        self,
        dim: int,
        *,
        variant: str,
        max_length: int,
        source: Mapping[str, str],
        tokenizer: Any = None,
    ) -> None:
        super().__init__()
        self.variant = variant
        self.max_length = int(max_length)
        self.source = dict(source)
        self.tokenizer = tokenizer
        self.vocabulary: dict[str, int] | None = None
        self.unknown_vectors = 0
        self.embedding = nn.Embedding(2, int(dim), padding_idx=0)
        self.embedding.weight.requires_grad_(False)
        with torch.no_grad():
            self.embedding.weight.zero_()

    @property
    def device(self) -> torch.device:
        return self.embedding.weight.device

    def options(self) -> dict[str, Any]:
        raise NotImplementedError

    def tokenize(self, text: str) -> list[str]:
        if self.source["kind"] == "glove":
            return word_tokens(text)
        return self.tokenizer.tokenize(text)

    def set_vocabulary(
        self, tokens: Sequence[str], matrix: np.ndarray, unknown_vectors: int = 0
    ) -> None:
        """Install the vocabulary ``[PAD], [UNK], *tokens`` and its frozen ``matrix``."""
        if matrix.shape != (len(tokens) + 2, self.embedding.embedding_dim):
            raise ValueError(
                f"matrix {matrix.shape} does not fit {len(tokens)} tokens + 2 of size {self.embedding.embedding_dim}"
            )
        self.vocabulary = {token: row for row, token in enumerate([PAD, UNK, *tokens])}
        self.unknown_vectors = int(unknown_vectors)
        weights = torch.from_numpy(np.ascontiguousarray(matrix, dtype=np.float32)).to(self.device)
        self.embedding = nn.Embedding.from_pretrained(weights, freeze=True, padding_idx=0)

    def build_vocabulary(self, texts: Iterable[str], *, progress: bool = True) -> None:
        """The vocabulary of ``texts`` with vectors from the model's source."""
        tokens = collection_tokens(texts, self.tokenize, progress=progress)
        if self.source["kind"] == "glove":
            matrix, missing = glove_matrix(tokens, self.source["path"], progress=progress)
        else:
            from reranklab.models.encoder import load_encoder

            encoder, tokenizer = load_encoder(self.source["encoder"])
            matrix, missing = encoder_matrix(tokens, encoder, tokenizer), 0
        self.set_vocabulary(tokens, matrix, missing)

    def token_ids(self, text: str) -> np.ndarray:
        """Vocabulary rows of the first ``max_length`` tokens of ``text`` (unknown tokens: row 1)."""
        assert self.vocabulary is not None
        get = self.vocabulary.get
        return np.fromiter(
            (get(t, 1) for t in self.tokenize(text)[: self.max_length]), dtype=np.int64
        )

    def score(self, features: Mapping[str, torch.Tensor]) -> torch.Tensor:
        """Ranking scores ``[B]`` (float64); by default the model's output. A subclass whose
        output saturates (K-NRM's tanh) ranks by the value before the saturating function."""
        return self(**features).double()

    def save(self, directory: str | Path) -> Path:
        if self.vocabulary is None:
            raise ValueError("the model has no vocabulary yet (featurize its training pairs first)")
        out = Path(directory)
        out.mkdir(parents=True, exist_ok=True)
        save_tensors(self, out / WEIGHTS_FILE)
        atomic_write_text(out / VOCAB_FILE, "\n".join(self.vocabulary) + "\n")
        if self.tokenizer is not None:
            save_tokenizer(self.tokenizer, out)
        meta = {
            **variant_meta(self),
            "arch": self.arch,
            "options": self.options(),
            "dim": self.embedding.embedding_dim,
            "max_length": self.max_length,
            "source": self.source,
            "vocabulary": len(self.vocabulary),
            "unknown_vectors": self.unknown_vectors,
        }
        write_meta(out, meta)
        return out

    @classmethod
    def load(
        cls, directory: str | Path, device: torch.device | str | None = None
    ) -> StaticWordRanker:
        """Restore a model written by :meth:`save`, in eval mode."""
        path = Path(directory)
        meta = read_meta(path)
        try:
            tokenizer = None
            if meta["source"]["kind"] == "encoder":
                from transformers import AutoTokenizer

                tokenizer = AutoTokenizer.from_pretrained(
                    str(path.resolve()), local_files_only=True
                )
            model = cls(
                int(meta["dim"]),
                variant=meta["variant"],
                max_length=int(meta["max_length"]),
                source=meta["source"],
                tokenizer=tokenizer,
                **meta["options"],
            )
        except (KeyError, TypeError, ValueError, OSError) as exc:
            raise FormatError(
                path / META_FILE,
                None,
                f"incomplete or invalid {cls.__name__} description ({exc!r})",
            ) from None
        vocab_path = path / VOCAB_FILE
        if not vocab_path.is_file():
            raise FormatError(vocab_path, None, "the vocabulary is missing")
        tokens = vocab_path.read_text(encoding="utf-8").split("\n")[:-1]
        state = load_file(str(path / WEIGHTS_FILE))
        matrix = state["embedding.weight"].numpy()
        if len(tokens) != len(matrix) or tokens[:2] != [PAD, UNK]:
            raise FormatError(
                vocab_path, None, f"{len(tokens)} tokens for {len(matrix)} embedding rows"
            )
        model.set_vocabulary(tokens[2:], matrix, int(meta.get("unknown_vectors", 0)))
        try:
            model.load_state_dict(state)
        except RuntimeError as exc:
            raise FormatError(
                path / WEIGHTS_FILE, None, f"the weights do not fit the description ({exc})"
            ) from None
        return ready(model, device)


def _pad(
    flat: np.ndarray, offsets: np.ndarray, rows: np.ndarray
) -> tuple[torch.Tensor, torch.Tensor]:
    lengths = offsets[rows + 1] - offsets[rows]
    width = max(int(lengths.max()) if len(rows) else 0, 1)
    ids = np.zeros((len(rows), width), dtype=np.int64)
    for k, (start, length) in enumerate(zip(offsets[rows].tolist(), lengths.tolist(), strict=True)):
        ids[k, :length] = flat[start : start + length]
    mask = np.arange(width)[None, :] < lengths[:, None]
    return torch.from_numpy(ids), torch.from_numpy(mask)


@dataclass(frozen=True)
class WordPairFeatures(KeyedPairs):
    """The :class:`~reranklab.features.types.PairFeatures` of the word-vector baselines.

    ``batch(rows)`` gives ``query_ids [B, Lq]``, ``query_mask``, ``passage_ids [B, Lp]``,
    ``passage_mask`` (row 0 = padding; ``Lq, Lp >= 1``).
    """

    query: tuple[np.ndarray, np.ndarray]
    passage: tuple[np.ndarray, np.ndarray]
    max_length: int
    unknown_tokens: int = 0

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.query[1]) + np.diff(self.passage[1])

    def batch(
        self, rows: Sequence[int] | np.ndarray, pad_to_multiple_of: int | None = None
    ) -> dict[str, Any]:
        rows = np.asarray(rows, dtype=np.int64)
        query_ids, query_mask = _pad(*self.query, rows)
        passage_ids, passage_mask = _pad(*self.passage, rows)
        return {
            "query_ids": query_ids,
            "query_mask": query_mask,
            "passage_ids": passage_ids,
            "passage_mask": passage_mask,
        }

    def summary(self) -> dict[str, Any]:
        return {
            "pairs_at_max_length": int((np.diff(self.passage[1]) >= self.max_length).sum()),
            "tokens_out_of_vocabulary": self.unknown_tokens,
        }


def word_features(
    model: StaticWordRanker,
    id_pairs: Iterable[tuple[str, str]],
    queries: Mapping[str, str],
    corpus: Mapping[str, str],
    *,
    progress: bool = True,
) -> WordPairFeatures:
    """The ``featurize`` hook of the word-vector baselines.

    A fresh model (no vocabulary yet) first builds its vocabulary from every text of
    ``queries`` and ``corpus`` (the collection); then each pair's query and passage become
    token rows, cut to ``model.max_length`` tokens each.

    Example:
        >>> import tempfile
        >>> from reranklab.models.knrm import KNRM
        >>> glove = Path(tempfile.mkdtemp()) / "toy.2d.txt"
        >>> _ = glove.write_text("who 1 0\\nme 0 1\\n")
        >>> model = KNRM(2, variant="knrm", max_length=8, source={"kind": "glove", "path": str(glove)})
        >>> features = word_features(model, [("q1", "p1")], {"q1": "who"}, {"p1": "me"}, progress=False)
        >>> sorted(features.batch([0]))
        ['passage_ids', 'passage_mask', 'query_ids', 'query_mask']
    """
    position = distinct_pairs(id_pairs, queries, corpus)
    keys = list(position)
    if model.vocabulary is None:
        model.build_vocabulary(list(queries.values()) + list(corpus.values()), progress=progress)
    query_rows = {qid: model.token_ids(queries[qid]) for qid in dict.fromkeys(q for q, _ in keys)}
    passage_rows = {pid: model.token_ids(corpus[pid]) for pid in dict.fromkeys(p for _, p in keys)}
    unknown = sum(int((ids == 1).sum()) for ids in [*query_rows.values(), *passage_rows.values()])
    return WordPairFeatures(
        keys,
        position,
        ragged([query_rows[q] for q, _ in keys], np.int64),
        ragged([passage_rows[p] for _, p in keys], np.int64),
        model.max_length,
        unknown,
    )
