"""The variant registry: each re-ranker variant registers a :class:`VariantSpec` by name.

The DAG, the training loop and the evaluation only ever look variants up here, so adding a
variant is adding a module (and importing it in :func:`_load_builtin`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from reranklab.errors import ConfigError

ExampleKind = Literal["pointwise", "triplet"]


@dataclass(frozen=True)
class VariantSpec:
    """A registered re-ranker variant.

    Args:
        name: the name used in ``params.yaml: grid.variant``.
        example_kind: which sampled examples it trains on: ``pointwise`` (qid, pid, label)
            or ``triplet`` (qid, positive pid, negative pid).
        description: one line for ``reranklab variants`` and the report.
        build: ``build(encoder, training, max_length)`` returns a fresh, trainable model.
        defaults: the paper's training settings; the user's ``training`` block overrides them.
        loss: ``loss(model, training)`` returns the training loss, an ``nn.Module`` whose
            ``forward(batch)`` takes a batch of the collator of ``example_kind`` and returns
            a scalar (see :mod:`reranklab.models.losses`).
    """

    name: str
    example_kind: ExampleKind
    description: str
    build: Callable[..., Any]
    defaults: dict[str, Any] = field(default_factory=dict)
    loss: Callable[..., Any] | None = None


_VARIANTS: dict[str, VariantSpec] = {}


def register_variant(spec: VariantSpec) -> VariantSpec:
    if spec.name in _VARIANTS:
        raise ValueError(f"variant {spec.name!r} registered twice")
    _VARIANTS[spec.name] = spec
    return spec


def get_variant(name: str) -> VariantSpec:
    _load_builtin()
    try:
        return _VARIANTS[name]
    except KeyError:
        raise ConfigError(f"unknown variant {name!r}; known variants: {', '.join(sorted(_VARIANTS))}") from None


def variant_names() -> list[str]:
    _load_builtin()
    return sorted(_VARIANTS)


def _load_builtin() -> None:
    # Importing the variant modules registers them.
    from reranklab.models.variants import bertlets, pointwise  # noqa: F401
