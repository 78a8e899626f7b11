"""In-batch negatives (sentence-transformers' MultipleNegativesRankingLoss) for a bi-encoder."""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch import nn


def in_batch_negatives_loss(
    queries: torch.Tensor,
    passages: torch.Tensor,
    scale: float,
    excluded: torch.Tensor | None = None,
) -> torch.Tensor:
    """Mean cross-entropy of each query's own passage among all the batch's passages.

    Row ``i`` of ``queries`` belongs with row ``i`` of ``passages``; every other row of
    ``passages`` (the other positives, then any hard negatives stacked below them) is one of its
    negatives. Logits are ``scale · cos``.

    Args:
        queries: ``[B, H]`` unit query vectors.
        passages: ``[N, H]`` unit passage vectors, ``N >= B``; row ``i < B`` is query ``i``'s.
        scale: the inverse temperature (20 in sentence-transformers).
        excluded: ``[B, N]`` True where a passage must not count as query ``i``'s negative
            (it is relevant to it, or it is its own positive again); never on the diagonal.

    Example:
        >>> q = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
        >>> round(float(in_batch_negatives_loss(q, q, scale=1.0)), 4)  # -log(e / (e + 1))
        0.3133
        >>> excluded = torch.tensor([[False, True], [True, False]])
        >>> float(in_batch_negatives_loss(q, q, scale=1.0, excluded=excluded))
        0.0
    """
    logits = scale * queries.float() @ passages.float().T
    if excluded is not None:
        logits = logits.masked_fill(excluded, float("-inf"))
    target = torch.arange(len(queries), device=logits.device)
    return F.cross_entropy(logits, target)


class InBatchNegativesLoss(nn.Module):
    """MultipleNegativesRankingLoss on (query, positive, negative) triplets of a bi-encoder.

    Each query's positive is scored against every positive and every hard negative of the
    batch (``2B - 1`` negatives). In-batch "negatives" that are in fact relevant to the query
    are left out: another positive of the same query, and any copy of its own positive (a
    passage that is one query's positive may be another's sampled negative).

    Args:
        model: a :class:`~reranklab.models.bi_encoder.BiEncoder` (``embed``).
        scale: inverse temperature of the softmax (sentence-transformers: 20).

    Inputs:
        +-----------------------------------------------------------------------------+
        | batch (from ``TripletCollator`` over ``BiEncoderFeatures``)                  |
        +=============================================================================+
        | ``positive``, ``negative``: ``{"query", "passage", "query_id", "passage_id"}`` |
        +-----------------------------------------------------------------------------+

    References:
        Henderson et al. 2017 (efficient natural language response suggestion); Reimers &
        Gurevych, sentence-transformers' ``MultipleNegativesRankingLoss``.
    """

    def __init__(self, model: nn.Module, scale: float = 20.0) -> None:
        super().__init__()
        self.model = model
        self.scale = float(scale)

    def forward(self, batch: dict[str, Any]) -> torch.Tensor:
        positive, negative = batch["positive"], batch["negative"]
        embed = self.model.embed
        # A triplet's two pairs share their query: it is encoded once.
        queries = embed(positive["query"]["input_ids"], positive["query"]["attention_mask"])
        passages = torch.cat(
            [
                embed(positive["passage"]["input_ids"], positive["passage"]["attention_mask"]),
                embed(negative["passage"]["input_ids"], negative["passage"]["attention_mask"]),
            ]
        )
        return in_batch_negatives_loss(
            queries, passages, self.scale, excluded_pairs(positive, negative)
        )

    def get_config_dict(self) -> dict[str, Any]:
        return {"scale": self.scale, "similarity": "cosine"}


def excluded_pairs(positive: dict[str, Any], negative: dict[str, Any]) -> torch.Tensor:
    """``[B, 2B]`` True where column ``j`` is relevant to row ``i``'s query (``j != i``).

    A positive column is excluded when it is another positive of the same query or the same
    passage as row ``i``'s positive; a negative column when it is row ``i``'s positive passage
    or another positive of row ``i``'s query.

    Example:
        >>> pos = {"query_id": torch.tensor([0, 0, 1]), "passage_id": torch.tensor([5, 6, 7])}
        >>> neg = {"query_id": torch.tensor([0, 0, 1]), "passage_id": torch.tensor([7, 8, 5])}
        >>> excluded_pairs(pos, neg).int().tolist()
        [[0, 1, 0, 0, 0, 1], [1, 0, 0, 0, 0, 1], [0, 0, 0, 1, 0, 0]]
    """
    query, own = positive["query_id"], positive["passage_id"]
    columns = torch.cat([own, negative["passage_id"]])
    # Passages known relevant to row i's query: the positives of the rows with that query.
    same_query = query[:, None] == query[None, :]  # [B, B]
    relevant = (columns[None, None, :] == own[None, :, None]) & same_query[:, :, None]
    excluded = relevant.any(dim=1)  # [B, 2B]
    excluded[torch.arange(len(query)), torch.arange(len(query))] = False
    return excluded
