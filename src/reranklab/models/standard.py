"""A cross-encoder as a standard ``*ForSequenceClassification`` checkpoint, one logit per pair.

``BertForSequenceClassification`` computes ``classifier(dropout(pooler_output))``: exactly what
:class:`~reranklab.models.reranker.CrossEncoderReranker` computes on a BERT encoder with a
pooler. Its checkpoint is therefore the fine-tuned encoder's weights under the class's
``base_model_prefix`` (``bert.``) plus ``classifier.weight`` / ``classifier.bias``, with
``num_labels: 1`` and the head folded to the single logit a run holds:

* a two-way head (``p_relevant``) ranks by the margin ``l1 - l0 = (w1 - w0)·x + (b1 - b0)``, so
  the classifier is the one row ``w1 - w0`` with bias ``b1 - b0`` (its logit *is* the margin);
* a scalar head (``logit``, ``sigmoid``) is kept as it is (the run holds the logit).

``config.json`` also carries the ``sentence_transformers`` key that sentence-transformers'
``CrossEncoder`` reads (v4 and later: ``activation_fn``), set to ``Identity`` so ``predict``
returns the raw logit instead of its sigmoid, and the saved tokenizer's ``model_max_length`` is
the model's max length, which ``CrossEncoder`` truncates to. reranklab's own loader
(``AutoModel``) reads the same file: it takes the ``bert.`` weights and ignores the classifier
(the exact head stays in ``head.safetensors``).
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import save_file

from reranklab.io.json_io import read_json, write_json
from reranklab.models.encoder import save_tokenizer

# Model types whose *ForSequenceClassification is `classifier(dropout(pooler_output))`, the
# cross-encoder's computation. Others (RoBERTa's dense+tanh head on the hidden state, DistilBERT's
# pre-classifier, ELECTRA's head) compute something else: they keep reranklab's own layout.
SUPPORTED_MODEL_TYPES = frozenset({"bert"})
ST_ACTIVATION = "torch.nn.modules.linear.Identity"
LABEL = "relevance"
# Written into tokenizer_config.json by a tokenizer loaded from a local folder: how it was
# loaded here, not a setting of the tokenizer, and wrong on the hub.
_LOADING_KEYS = ("is_local", "local_files_only")


def checkpoint_problem(encoder: Any) -> str | None:
    """Why ``encoder`` + a linear head on its pooled [CLS] is no ``*ForSequenceClassification``.

    Returns:
        ``None`` when it is one; else the reason, for messages and model cards.

    Example:
        >>> from reranklab.models.tiny import tiny_encoder
        >>> encoder, _ = tiny_encoder(["who"])
        >>> checkpoint_problem(encoder) is None
        True
        >>> encoder.pooler = None
        >>> checkpoint_problem(encoder)
        'its encoder has no pooler (the head reads the [CLS] hidden state, not the pooled output)'
    """
    model_type = getattr(encoder.config, "model_type", None)
    if model_type not in SUPPORTED_MODEL_TYPES:
        return (
            f"its encoder is a {model_type!r} model, whose sequence-classification head is not a"
            f" linear layer on the pooled [CLS] (supported: {', '.join(sorted(SUPPORTED_MODEL_TYPES))})"
        )
    if getattr(encoder, "pooler", None) is None:
        return "its encoder has no pooler (the head reads the [CLS] hidden state, not the pooled output)"
    return None


def architecture_name(encoder: Any) -> str:
    """The ``*ForSequenceClassification`` class name of ``encoder``'s model type.

    Example:
        >>> from reranklab.models.tiny import tiny_encoder
        >>> architecture_name(tiny_encoder(["who"])[0])
        'BertForSequenceClassification'
    """
    from transformers.models.auto.modeling_auto import (
        MODEL_FOR_SEQUENCE_CLASSIFICATION_MAPPING_NAMES,
    )

    return MODEL_FOR_SEQUENCE_CLASSIFICATION_MAPPING_NAMES[encoder.config.model_type]


def single_logit(
    weight: torch.Tensor, bias: torch.Tensor, score: str
) -> tuple[torch.Tensor, torch.Tensor]:
    """The one-output head whose logit is the ranking score of the head ``(weight, bias)``.

    Args:
        weight: ``[k, H]``; bias: ``[k]``.
        score: the head kind (``p_relevant``: two outputs, ranked by ``l1 - l0``; ``logit``
            and ``sigmoid``: one output, ranked by it).

    Returns:
        ``([1, H], [1])`` in ``weight``'s dtype (the difference is taken in float64).

    Raises:
        ValueError: an unknown head kind, or a head of the wrong size for it.

    Example:
        >>> w, b = single_logit(torch.tensor([[1.0, 2.0], [4.0, 3.0]]), torch.tensor([0.5, 2.0]), "p_relevant")
        >>> w.tolist(), b.tolist()
        ([[3.0, 1.0]], [1.5])
    """
    outputs = {"p_relevant": 2, "logit": 1, "sigmoid": 1}.get(score)
    if outputs is None:
        raise ValueError(f"no single-logit form for the head kind {score!r}")
    if weight.shape[0] != outputs or bias.shape != (outputs,):
        raise ValueError(f"a {score!r} head has {outputs} output(s), not {weight.shape[0]}")
    weight, bias = weight.detach(), bias.detach()
    if outputs == 1:
        return weight.clone(), bias.clone()
    w, b = weight.double(), bias.double()
    return (w[1] - w[0]).unsqueeze(0).to(weight.dtype), (b[1:] - b[:1]).to(bias.dtype)


def save_sequence_classification(
    directory: str | Path,
    encoder: Any,
    tokenizer: Any,
    weight: torch.Tensor,
    bias: torch.Tensor,
    *,
    max_length: int,
) -> str:
    """Write ``config.json``, ``model.safetensors`` and the tokenizer of a one-logit classifier.

    Args:
        directory: the folder (created if missing).
        encoder: a supported encoder (see :func:`checkpoint_problem`).
        tokenizer: its tokenizer (saved with ``model_max_length = max_length``).
        weight, bias: the classifier, ``[1, H]`` and ``[1]`` (see :func:`single_logit`).
        max_length: the length the model was trained and re-ranks at.

    Returns:
        The architecture written (``BertForSequenceClassification``).

    Raises:
        ValueError: the encoder is not supported (the reason of :func:`checkpoint_problem`).

    Example:
        >>> import tempfile
        >>> from transformers import AutoModelForSequenceClassification
        >>> from reranklab.models.tiny import tiny_encoder
        >>> encoder, tokenizer = tiny_encoder(["who"])
        >>> out = Path(tempfile.mkdtemp())
        >>> save_sequence_classification(out, encoder, tokenizer, torch.ones(1, 32), torch.zeros(1), max_length=16)
        'BertForSequenceClassification'
        >>> AutoModelForSequenceClassification.from_pretrained(out).classifier.weight.sum().item()
        32.0
    """
    problem = checkpoint_problem(encoder)
    if problem is not None:
        raise ValueError(f"cannot write a sequence-classification checkpoint: {problem}")
    import transformers

    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    name = architecture_name(encoder)
    prefix = getattr(transformers, name).base_model_prefix
    state = {
        f"{prefix}.{key}": tensor.detach().cpu().contiguous()
        for key, tensor in encoder.state_dict().items()
    }
    state["classifier.weight"] = weight.detach().cpu().reshape(1, -1).contiguous()
    state["classifier.bias"] = bias.detach().cpu().reshape(1).contiguous()
    save_file(state, str(out / "model.safetensors"), metadata={"format": "pt"})

    config = copy.deepcopy(encoder.config)
    config.architectures = [name]
    config.num_labels = 1
    config.id2label = {0: LABEL}
    config.label2id = {LABEL: 0}
    # sentence-transformers' CrossEncoder (v4+) reads this; Identity: predict() = the raw logit.
    config.sentence_transformers = {"activation_fn": ST_ACTIVATION}
    config.save_pretrained(out)

    save_tokenizer(tokenizer, out)
    set_tokenizer_max_length(out, max_length)
    return name


def set_tokenizer_max_length(directory: Path, max_length: int) -> None:
    """Make ``directory``'s saved tokenizer truncate at ``max_length`` by default.

    ``CrossEncoder`` (and ``tokenizer(q, p, truncation=True)``) cut pairs at the tokenizer's
    ``model_max_length``. The keys a local load leaves in ``tokenizer_config.json``
    (``local_files_only``, ``is_local``) are dropped.
    """
    path = directory / "tokenizer_config.json"
    config = read_json(path) if path.is_file() else {}
    for key in _LOADING_KEYS:
        config.pop(key, None)
    config["model_max_length"] = int(max_length)
    write_json(path, config)


def standard_architecture(directory: str | Path) -> str | None:
    """The ``*ForSequenceClassification`` a saved model directory loads as, if any.

    It is one when its ``config.json`` names such an architecture with one label and carries
    the ``sentence_transformers`` key that :func:`save_sequence_classification` writes.

    Example:
        >>> import tempfile
        >>> standard_architecture(tempfile.mkdtemp()) is None
        True
    """
    path = Path(directory) / "config.json"
    if not path.is_file():
        return None
    config = read_json(path)
    architectures = config.get("architectures") or []
    if (
        architectures
        and str(architectures[0]).endswith("ForSequenceClassification")
        and len(config.get("id2label") or {}) == 1
        and isinstance(config.get("sentence_transformers"), dict)
    ):
        return str(architectures[0])
    return None
