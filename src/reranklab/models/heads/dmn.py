"""The dynamic memory network head of BERT-DMN (Kumar et al. 2016's DMN on BERT features).

Inputs are the encoder's vectors of one (query, passage) pair, split back into the query's
word pieces and the passage's sentences (each the mean of its word pieces), plus [CLS]:

1. input module: a GRU over the sentence vectors gives one fact ``s_t`` per sentence;
2. question module: a GRU over the query word-piece vectors; its last state is ``Q``;
3. episodic memory: ``m⁰ = Q``; in each of ``episodes`` passes a gate
   ``g_t = σ(w₂ᵀ tanh(W₁ z_t + b₁) + b₂)`` with
   ``z_t = [s_t; m; Q; s_t∘Q; s_t∘m; |s_t−Q|; |s_t−m|]`` drives an attention GRU
   ``h_t = g_t · GRU(s_t, h_{t−1}) + (1 − g_t) · h_{t−1}``; its last state ``e`` updates the
   memory ``m ← GRU(e, m)``;
4. answer module: ``a = σ(W[c; Q; m] + b)`` with ``c`` the [CLS] vector.

The head returns the logit ``W[c; Q; m] + b``; ``a`` is its sigmoid.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence


def last_states(
    gru: nn.GRU, inputs: torch.Tensor, mask: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Run ``gru`` over the valid steps of each row; return (all states, last valid state).

    Rows without a valid step are run over one zero step (their state is the GRU's response
    to nothing), so every row has a defined last state.

    Args:
        gru: a ``batch_first`` single-direction GRU.
        inputs: ``[B, T, D]``.
        mask: ``[B, T]`` booleans, valid steps first.

    Returns:
        ``([B, T, hidden]`` states, zero at padded steps; ``[B, hidden]`` last states).
    """
    lengths = mask.sum(dim=1).clamp(min=1)
    inputs = inputs * mask.unsqueeze(-1).to(inputs.dtype)
    packed = pack_padded_sequence(inputs, lengths.cpu(), batch_first=True, enforce_sorted=False)
    output, last = gru(packed)
    states, _ = nn.utils.rnn.pad_packed_sequence(
        output, batch_first=True, total_length=inputs.shape[1]
    )
    return states, last[-1]


class AttentionGate(nn.Module):
    """``g = σ(w₂ᵀ tanh(W₁ z + b₁) + b₂)``, ``z = [s; m; Q; s∘Q; s∘m; |s−Q|; |s−m|]``.

    Args:
        hidden: size of facts, memory and question vectors.
    """

    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.inner = nn.Linear(7 * hidden, hidden)
        self.outer = nn.Linear(hidden, 1)

    def forward(
        self, facts: torch.Tensor, memory: torch.Tensor, question: torch.Tensor
    ) -> torch.Tensor:
        """Gates ``[B, T]`` of facts ``[B, T, h]`` given memory and question ``[B, h]``."""
        m = memory.unsqueeze(1).expand_as(facts)
        q = question.unsqueeze(1).expand_as(facts)
        z = torch.cat(
            [facts, m, q, facts * q, facts * m, (facts - q).abs(), (facts - m).abs()], dim=-1
        )
        return torch.sigmoid(self.outer(torch.tanh(self.inner(z)))).squeeze(-1)


class EpisodicMemory(nn.Module):
    """``episodes`` passes of gated attention over the facts, each updating the memory.

    Args:
        hidden: size of facts, memory and question.
        episodes: number of passes (4 in BERT-DMN).
    """

    def __init__(self, hidden: int, episodes: int = 4) -> None:
        super().__init__()
        if episodes < 1:
            raise ValueError("episodes must be at least 1")
        self.episodes = int(episodes)
        self.gate = AttentionGate(hidden)
        self.attention_gru = nn.GRUCell(hidden, hidden)
        self.memory_gru = nn.GRUCell(hidden, hidden)

    def forward(
        self, facts: torch.Tensor, fact_mask: torch.Tensor, question: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """The final memory ``[B, h]`` and the gates of every episode ``[episodes, B, T]``."""
        memory = question
        valid = fact_mask.to(facts.dtype)
        all_gates = []
        for _ in range(self.episodes):
            # Padded facts get gate 0, so the episode state passes over them unchanged.
            gates = self.gate(facts, memory, question) * valid
            state = torch.zeros_like(question)
            for t in range(facts.shape[1]):
                g = gates[:, t : t + 1]
                state = g * self.attention_gru(facts[:, t], state) + (1.0 - g) * state
            memory = self.memory_gru(state, memory)
            all_gates.append(gates)
        return memory, torch.stack(all_gates)


class DynamicMemoryHead(nn.Module):
    """BERT-DMN's head: input and question GRUs, episodic memory, answer layer.

    Args:
        input_size: the encoder's hidden size (size of [CLS], query and sentence vectors).
        hidden: GRU and memory size (256 in BERT-DMN).
        episodes: memory passes (4).
        dropout: dropout on the encoder features and before the answer layer (0.1).

    Example:
        >>> head = DynamicMemoryHead(32, hidden=16)
        >>> cls, query, sentences = torch.zeros(2, 32), torch.zeros(2, 5, 32), torch.zeros(2, 3, 32)
        >>> qmask, smask = torch.ones(2, 5, dtype=torch.bool), torch.ones(2, 3, dtype=torch.bool)
        >>> head(cls, query, qmask, sentences, smask).shape
        torch.Size([2])
    """

    def __init__(
        self, input_size: int, hidden: int = 256, episodes: int = 4, dropout: float = 0.1
    ) -> None:
        super().__init__()
        self.input_size = int(input_size)
        self.hidden = int(hidden)
        self.dropout = nn.Dropout(float(dropout))
        self.input_gru = nn.GRU(input_size, hidden, batch_first=True)
        self.question_gru = nn.GRU(input_size, hidden, batch_first=True)
        self.memory = EpisodicMemory(hidden, episodes)
        self.answer = nn.Linear(input_size + 2 * hidden, 1)

    def config(self) -> dict[str, float | int]:
        return {
            "input_size": self.input_size,
            "hidden": self.hidden,
            "episodes": self.memory.episodes,
            "dropout": self.dropout.p,
        }

    def forward(
        self,
        cls: torch.Tensor,
        query: torch.Tensor,
        query_mask: torch.Tensor,
        sentences: torch.Tensor,
        sentence_mask: torch.Tensor,
        return_gates: bool = False,
    ) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
        """Logits ``[B]`` (``a = σ(logit)``).

        Args:
            cls: ``[B, H]`` [CLS] vectors.
            query: ``[B, Tq, H]`` query word-piece vectors; ``query_mask`` ``[B, Tq]``.
            sentences: ``[B, S, H]`` sentence vectors; ``sentence_mask`` ``[B, S]``.
            return_gates: also return the attention gates ``[episodes, B, S]``.
        """
        query_mask = query_mask.bool()
        sentence_mask = sentence_mask.bool()
        facts, _ = last_states(self.input_gru, self.dropout(sentences), sentence_mask)
        _, question = last_states(self.question_gru, self.dropout(query), query_mask)
        memory, gates = self.memory(facts, sentence_mask, question)
        logits = self.answer(self.dropout(torch.cat([cls, question, memory], dim=-1))).squeeze(-1)
        return (logits, gates) if return_gates else logits
