"""QA-LSTM with attention (Tan et al. 2016), on frozen word vectors.

A BiLSTM shared by question and answer encodes both; the question vector ``o_q`` is the
max (or mean) pooling of its states; each answer state is weighted by an attention on the
question, ``m(t) = tanh(W_am h_a(t) + W_qm o_q)``, ``s(t) = softmax_t(w_msᵀ m(t))``,
``h̃_a(t) = s(t) h_a(t)``, and pooled the same way into ``o_a``. The output is
``cos(o_q, o_a)``, trained with the hinge ``max(0, m − cos+ + cos−)``; dropout 0.5 on the LSTM
states. The ranking score, what a run holds, is that cosine (computed in fp32, as float64).
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from reranklab.models.word_model import StaticWordRanker

POOLINGS = ("max", "avg")


def masked_pool(states: torch.Tensor, mask: torch.Tensor, pooling: str) -> torch.Tensor:
    """Max or mean over the valid steps of ``states`` ``[B, T, D]`` (``mask`` ``[B, T]``).

    Example:
        >>> x = torch.tensor([[[1.0], [5.0], [9.0]]])
        >>> masked_pool(x, torch.tensor([[True, True, False]]), "max").item(), masked_pool(x, torch.tensor([[True, True, False]]), "avg").item()
        (5.0, 3.0)
    """
    valid = mask.unsqueeze(-1)
    if pooling == "max":
        pooled = states.masked_fill(~valid, float("-inf")).max(dim=1).values
        # A row without any valid step pools to zeros, not -inf.
        return torch.where(torch.isfinite(pooled), pooled, torch.zeros_like(pooled))
    total = (states * valid.to(states.dtype)).sum(dim=1)
    return total / valid.sum(dim=1).clamp(min=1).to(states.dtype)


class QALSTM(StaticWordRanker):
    """QA-LSTM with answer attention on the question.

    Args:
        dim: word vector size.
        hidden: LSTM size per direction (256; states are ``2 * hidden``).
        pooling: ``max`` or ``avg``.
        attention: weight the answer states by the question (the attentive QA-LSTM).
        dropout: on the LSTM states (0.5).
        **kwargs: see :class:`~reranklab.models.word_model.StaticWordRanker`.

    Example:
        >>> model = QALSTM(8, hidden=4, variant="qa_lstm", max_length=16, source={"kind": "glove", "path": "-"})
        >>> ids, mask = torch.zeros(2, 3, dtype=torch.long), torch.ones(2, 3, dtype=torch.bool)
        >>> model(query_ids=ids, query_mask=mask, passage_ids=ids, passage_mask=mask).shape
        torch.Size([2])
    """

    arch = "qa_lstm"

    def __init__(
        self,
        dim: int,
        *,
        hidden: int = 256,
        pooling: str = "max",
        attention: bool = True,
        dropout: float = 0.5,
        **kwargs: Any,
    ) -> None:
        super().__init__(dim, **kwargs)
        if pooling not in POOLINGS:
            raise ValueError(f"pooling must be one of {', '.join(POOLINGS)}, got {pooling!r}")
        self.hidden = int(hidden)
        self.pooling = pooling
        self.attention = bool(attention)
        self.lstm = nn.LSTM(dim, hidden, batch_first=True, bidirectional=True)
        self.dropout = nn.Dropout(float(dropout))
        if self.attention:
            self.w_am = nn.Linear(2 * hidden, 2 * hidden, bias=False)
            self.w_qm = nn.Linear(2 * hidden, 2 * hidden, bias=False)
            self.w_ms = nn.Linear(2 * hidden, 1, bias=False)

    def options(self) -> dict[str, Any]:
        return {
            "hidden": self.hidden,
            "pooling": self.pooling,
            "attention": self.attention,
            "dropout": self.dropout.p,
        }

    def encode(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """BiLSTM states ``[B, T, 2 * hidden]`` (zero at padding) of token rows ``ids``."""
        lengths = mask.sum(dim=1).clamp(min=1).cpu()
        packed = pack_padded_sequence(
            self.embedding(ids), lengths, batch_first=True, enforce_sorted=False
        )
        states, _ = pad_packed_sequence(
            self.lstm(packed)[0], batch_first=True, total_length=ids.shape[1]
        )
        return self.dropout(states)

    def forward(
        self,
        query_ids: torch.Tensor,
        query_mask: torch.Tensor,
        passage_ids: torch.Tensor,
        passage_mask: torch.Tensor,
    ) -> torch.Tensor:
        """``cos(o_q, o_a)`` ``[B]``."""
        query_mask, passage_mask = query_mask.bool(), passage_mask.bool()
        question = masked_pool(self.encode(query_ids, query_mask), query_mask, self.pooling)
        answer = self.encode(passage_ids, passage_mask)
        if self.attention:
            m = torch.tanh(self.w_am(answer) + self.w_qm(question).unsqueeze(1))
            logits = self.w_ms(m).squeeze(-1).masked_fill(~passage_mask, float("-inf"))
            weights = torch.softmax(logits, dim=1).nan_to_num(0.0)
            answer = answer * weights.unsqueeze(-1)
        answer = masked_pool(answer, passage_mask, self.pooling)
        # The cosine in fp32 even under bf16/fp16 autocast: it is the ranking score.
        with torch.autocast(device_type=question.device.type, enabled=False):
            return F.cosine_similarity(question.float(), answer.float(), dim=-1, eps=1e-8)
