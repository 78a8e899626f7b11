"""K-NRM (Xiong et al. 2017): kernel pooling of a query-passage translation matrix.

``M_ij = cos(q_i, d_j)`` of frozen word vectors; 11 RBF kernels
``K_k(M_i) = Σ_j exp(−(M_ij − μ_k)² / 2σ_k²)`` — the exact-match kernel ``μ = 1, σ = 10⁻³`` and
ten soft-match kernels ``μ ∈ {0.9, 0.7, …, −0.9}, σ = 0.1`` — give the features
``φ_k = Σ_i log K_k(M_i)`` (× 0.01, as the authors' code), and ``f = tanh(wᵀφ + b)``; trained
with the hinge ``max(0, 1 − f+ + f−)``. The ranking score, what a run holds, is the float64
``wᵀφ + b`` (same order as ``f``, without tanh's saturation ties).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from reranklab.models.word_model import StaticWordRanker

MUS = (1.0, 0.9, 0.7, 0.5, 0.3, 0.1, -0.1, -0.3, -0.5, -0.7, -0.9)
SIGMAS = (1e-3,) + (0.1,) * 10
LOG_SCALE = 0.01


def kernel_pooling(
    matrix: torch.Tensor,
    query_mask: torch.Tensor,
    passage_mask: torch.Tensor,
    mus: torch.Tensor,
    sigmas: torch.Tensor,
) -> torch.Tensor:
    """Soft-TF features ``φ [B, K]`` of translation matrices ``[B, Lq, Ld]``.

    Example:
        >>> m = torch.tensor([[[1.0, 0.0]]])  # one query word: an exact match and an unrelated word
        >>> phi = kernel_pooling(m, torch.ones(1, 1, dtype=torch.bool), torch.ones(1, 2, dtype=torch.bool),
        ...                      torch.tensor([1.0]), torch.tensor([1e-3]))
        >>> round(phi.item(), 6)  # 0.01 * log(1 + e^(-1/(2e-6)))
        0.0
    """
    diff = matrix.unsqueeze(-1) - mus
    kernels = torch.exp(-(diff**2) / (2 * sigmas**2)) * passage_mask[:, None, :, None].to(
        matrix.dtype
    )
    per_query_word = torch.log(kernels.sum(dim=2).clamp(min=1e-10)) * LOG_SCALE
    return (per_query_word * query_mask.unsqueeze(-1).to(matrix.dtype)).sum(dim=1)


class KNRM(StaticWordRanker):
    """K-NRM on frozen word vectors (11 kernels, one linear layer: 12 trainable parameters).

    Example:
        >>> model = KNRM(8, variant="knrm", max_length=16, source={"kind": "glove", "path": "-"})
        >>> ids, mask = torch.zeros(2, 3, dtype=torch.long), torch.ones(2, 3, dtype=torch.bool)
        >>> model(query_ids=ids, query_mask=mask, passage_ids=ids, passage_mask=mask).shape
        torch.Size([2])
    """

    arch = "knrm"

    def __init__(self, dim: int, **kwargs: Any) -> None:
        super().__init__(dim, **kwargs)
        self.register_buffer("mus", torch.tensor(MUS), persistent=False)
        self.register_buffer("sigmas", torch.tensor(SIGMAS), persistent=False)
        self.dense = nn.Linear(len(MUS), 1)

    def options(self) -> dict[str, Any]:
        return {}

    def features(
        self,
        query_ids: torch.Tensor,
        query_mask: torch.Tensor,
        passage_ids: torch.Tensor,
        passage_mask: torch.Tensor,
    ) -> torch.Tensor:
        """Kernel features ``φ [B, 11]``."""
        query = F.normalize(self.embedding(query_ids), dim=-1, eps=1e-10)
        passage = F.normalize(self.embedding(passage_ids), dim=-1, eps=1e-10)
        matrix = query @ passage.transpose(1, 2)
        return kernel_pooling(matrix, query_mask.bool(), passage_mask.bool(), self.mus, self.sigmas)

    def logits(self, **inputs: torch.Tensor) -> torch.Tensor:
        """``wᵀφ + b`` ``[B]``, in fp32 even under bf16/fp16 autocast."""
        # Half-precision cosines would miss the exact-match kernel (σ = 1e-3, but cos(x, x) in
        # bf16 is only within ~4e-3 of 1), and a half-precision logit would tie close scores.
        with torch.autocast(device_type=self.device.type, enabled=False):
            return self.dense(self.features(**inputs)).squeeze(-1)

    def forward(self, **inputs: torch.Tensor) -> torch.Tensor:
        """``f = tanh(wᵀφ + b)`` ``[B]``."""
        return torch.tanh(self.logits(**inputs))

    def score(self, features: Mapping[str, torch.Tensor]) -> torch.Tensor:
        """Ranking scores ``[B]`` (float64): ``wᵀφ + b``, the order of ``f`` without tanh's
        saturation (``tanh(x) == 1.0`` in float32 for ``x`` above ~9)."""
        return self.logits(**features).double()
