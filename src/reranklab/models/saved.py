"""The on-disk layout every saved re-ranker shares, and the helpers that write and read it.

A saved model is a directory holding ``reranker.json`` (variant, head settings, max length,
encoder; :data:`META_FILE`) and its tensors as safetensors files: ``head.safetensors`` for a head
on an encoder, other names for other parts (the chunked pooling, the word baselines' weights).
A fine-tuned encoder and its tokenizer are written next to them with ``save_pretrained``, or,
for a cross-encoder that is one (:func:`save_classifier_model`), as a standard one-logit
``*ForSequenceClassification`` checkpoint (:mod:`reranklab.models.standard`), which
:func:`load_encoder_model` reads the same way (``AutoModel`` takes the encoder's weights).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file
from torch import nn

from reranklab.errors import FormatError
from reranklab.io.atomic import current_umask
from reranklab.io.json_io import read_json, write_json
from reranklab.models.encoder import damaged_weights, load_encoder, save_tokenizer
from reranklab.models.standard import save_sequence_classification

FORMAT_VERSION = 1
HEAD_FILE = "head.safetensors"
META_FILE = "reranker.json"

ModuleT = TypeVar("ModuleT", bound=nn.Module)


def save_tensors(module: nn.Module, path: Path) -> None:
    """Write ``module``'s parameters and buffers to the safetensors file ``path`` (on CPU)."""
    state = {
        name: tensor.detach().cpu().contiguous() for name, tensor in module.state_dict().items()
    }
    save_file(state, str(path), metadata={"format": "pt"})
    os.chmod(path, 0o666 & ~current_umask())  # safetensors makes it 0600


def load_tensors(module: nn.Module, path: Path, what: str = "the head's weights") -> None:
    """Load the safetensors file ``path`` into ``module`` (names and shapes must match).

    Raises:
        FormatError: naming ``path`` when it is missing or does not fit ``module``.
    """
    if not path.is_file():
        raise FormatError(path, None, f"{what} are missing")
    try:
        state = load_file(str(path))
    except (SafetensorError, OSError) as exc:
        raise FormatError(
            path, None, f"{what} cannot be read: not a complete safetensors file ({exc})"
        ) from None
    try:
        module.load_state_dict(state)
    except RuntimeError as exc:
        raise FormatError(
            path, None, f"{what} do not fit the model's description ({exc})"
        ) from None


def save_head(head: nn.Module, directory: Path) -> None:
    """Write ``head``'s parameters to ``directory/head.safetensors``."""
    save_tensors(head, directory / HEAD_FILE)


def load_head(head: nn.Module, directory: Path) -> None:
    """Load ``directory/head.safetensors`` into ``head``."""
    load_tensors(head, directory / HEAD_FILE)


def variant_meta(model: Any) -> dict[str, str]:
    """What ``reranker.json`` says a model is: ``{"variant": <registered name>}`` (which loads
    it), plus ``"alias"`` for a model trained for an alias of that variant (which its card names;
    the trainer sets ``model.alias``, :func:`reranklab.models.registry.load_model` restores it).

    Example:
        >>> from types import SimpleNamespace
        >>> variant_meta(SimpleNamespace(variant="bertsel")), variant_meta(SimpleNamespace(variant="bertsel", alias="bertsel_epoch5"))
        ({'variant': 'bertsel'}, {'variant': 'bertsel', 'alias': 'bertsel_epoch5'})
    """
    alias = getattr(model, "alias", None)
    return {"variant": str(model.variant), **({"alias": str(alias)} if alias else {})}


def write_meta(directory: Path, meta: dict[str, Any]) -> None:
    """Write ``reranker.json`` (with the format version first) atomically."""
    write_json(directory / META_FILE, {"format_version": FORMAT_VERSION, **meta})


def read_meta(directory: Path) -> dict[str, Any]:
    """``reranker.json`` of a saved model directory (FormatError when it is missing)."""
    path = directory / META_FILE
    if not path.is_file():
        raise FormatError(path, None, "not a saved re-ranker (reranker.json is missing)")
    return read_json(path)


def save_encoder_model(
    directory: str | Path, encoder: Any, tokenizer: Any, head: nn.Module, meta: dict[str, Any]
) -> Path:
    """Write a fine-tuned encoder, its tokenizer, its head and ``reranker.json`` to ``directory``.

    Example:
        >>> import tempfile
        >>> from reranklab.models.tiny import tiny_encoder
        >>> encoder, tokenizer = tiny_encoder(["who"])
        >>> out = save_encoder_model(tempfile.mkdtemp(), encoder, tokenizer, nn.Linear(32, 1),
        ...     {"variant": "pointwise", "max_length": 128})
        >>> sorted(p.name for p in out.iterdir())
        ['config.json', 'head.safetensors', 'model.safetensors', 'reranker.json', 'tokenizer.json', 'tokenizer_config.json']
    """
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    encoder.save_pretrained(out)
    save_tokenizer(tokenizer, out)
    save_head(head, out)
    write_meta(out, meta)
    return out


def save_classifier_model(
    directory: str | Path,
    encoder: Any,
    tokenizer: Any,
    head: nn.Module,
    meta: dict[str, Any],
    classifier: tuple[torch.Tensor, torch.Tensor],
) -> Path:
    """As :func:`save_encoder_model`, with the encoder written as a one-logit classifier.

    ``config.json``, ``model.safetensors`` and the tokenizer are a standard
    ``*ForSequenceClassification`` checkpoint whose classifier is ``classifier`` (weight
    ``[1, H]``, bias ``[1]``: the head folded to the ranking score); ``head.safetensors`` and
    ``reranker.json`` are written as for every model, so reranklab loads it unchanged.

    Raises:
        ValueError: the encoder has no such checkpoint
            (:func:`~reranklab.models.standard.checkpoint_problem`).

    Example:
        >>> import tempfile
        >>> from reranklab.models.tiny import tiny_encoder
        >>> encoder, tokenizer = tiny_encoder(["who"])
        >>> head = nn.Linear(32, 1)
        >>> out = save_classifier_model(tempfile.mkdtemp(), encoder, tokenizer, head,
        ...     {"variant": "bertlets", "max_length": 16}, (head.weight, head.bias))
        >>> read_json(out / "config.json")["architectures"], load_encoder(str(out))[0].config.hidden_size
        (['BertForSequenceClassification'], 32)
    """
    out = Path(directory)
    save_sequence_classification(
        out, encoder, tokenizer, *classifier, max_length=int(meta["max_length"])
    )
    save_head(head, out)
    write_meta(out, meta)
    return out


def load_encoder_model(
    directory: str | Path,
    build: Callable[[Any, Any, dict[str, Any]], ModuleT],
    what: str,
    device: torch.device | str | None = None,
) -> ModuleT:
    """Restore what :func:`save_encoder_model` wrote: the encoder and tokenizer (offline), the
    model ``build(encoder, tokenizer, meta)`` makes around them, its head's weights; eval mode.

    Raises:
        FormatError: naming ``reranker.json`` when ``build`` finds it incomplete (``what`` says
            which kind of model), or ``head.safetensors`` when it is missing or does not fit.

    Example:
        >>> import tempfile
        >>> from reranklab.models.tiny import tiny_encoder
        >>> class Scorer(nn.Module):
        ...     def __init__(self, encoder, tokenizer, meta):
        ...         super().__init__()
        ...         self.encoder, self.tokenizer, self.head = encoder, tokenizer, nn.Linear(32, 1)
        >>> encoder, tokenizer = tiny_encoder(["who"])
        >>> out = save_encoder_model(tempfile.mkdtemp(), encoder, tokenizer, nn.Linear(32, 1), {"variant": "x"})
        >>> model = load_encoder_model(out, Scorer, "scorer")
        >>> type(model).__name__, model.training
        ('Scorer', False)
    """
    path = Path(directory)
    meta = read_meta(path)
    damaged = damaged_weights(path)
    if damaged is not None:  # the saved model's own weights: name them, not training.encoder
        raise FormatError(damaged[0], None, damaged[1])
    try:
        encoder, tokenizer = load_encoder(str(path.resolve()))
        model = build(encoder, tokenizer, meta)
    except (KeyError, TypeError, ValueError) as exc:
        raise FormatError(
            path / META_FILE, None, f"incomplete or invalid {what} description ({exc!r})"
        ) from None
    load_head(model.head, path)
    return ready(model, device)


def ready(model: ModuleT, device: torch.device | str | None) -> ModuleT:
    """A loaded model in eval mode, moved to ``device`` when one is given."""
    model.eval()
    if device is not None:
        model.to(device)
    return model
