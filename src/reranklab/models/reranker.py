"""The cross-encoder shared by the variants: a pre-trained encoder plus a linear head on [CLS].

``BERT(q, p)`` is the encoder's pooled [CLS] representation (``pooler_output`` when the
encoder has a pooler, as in ``BertForSequenceClassification``; else the last hidden state at
position 0), followed by dropout and a linear layer with as many outputs as the variant needs.
The ranking score (what a run holds) is raw and float64: the margin ``l1 - l0`` of a two-way
head, the logit of a scalar one; never a probability, which saturates to ties at 1.0.
A saved model is a directory::

    config.json, model.safetensors, tokenizer files   # the fine-tuned encoder
    head.safetensors                                   # the linear head
    reranker.json                                      # variant, head config, max_length, inputs
    README.md                                          # the model card (reranklab.models.card)

On a BERT encoder with a pooler the encoder files are a standard one-logit
``BertForSequenceClassification`` (classifier = the head folded to the ranking score:
:mod:`reranklab.models.standard`), so ``AutoModelForSequenceClassification`` and
sentence-transformers' ``CrossEncoder`` load the folder and give the run's scores; otherwise
(another encoder, or a subclass that feeds the head something else, such as the chunked
pooling) they are the encoder's ``save_pretrained``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import torch
from torch import nn

from reranklab.features.packing import block_mask
from reranklab.models.bi_encoder import pool
from reranklab.models.card import facts_from_directory, write_card
from reranklab.models.encoder import encoder_inputs, load_encoder
from reranklab.models.saved import (
    load_encoder_model,
    save_classifier_model,
    save_encoder_model,
    variant_meta,
)
from reranklab.models.standard import checkpoint_problem, single_logit

# Encoders whose packed batches are checked to give the padded logits (tests/test_packing.py).
PACKABLE_ENCODERS = frozenset({"bert"})
# What the head reads: the pooled [CLS] (BERT's), or the mean of the pair's token vectors.
PAIR_POOLINGS = ("cls", "mean")


def _p_relevant(logits: torch.Tensor) -> torch.Tensor:
    # float64: P(relevant) of confident pairs saturates to exactly 1.0 in float32 (logit gap > ~17).
    return logits.double().softmax(dim=-1)[:, 1]


def _sigmoid(logits: torch.Tensor) -> torch.Tensor:
    return logits[:, 0].double().sigmoid()


def _logit(logits: torch.Tensor) -> torch.Tensor:
    return logits[:, 0].double()


def _margin(logits: torch.Tensor) -> torch.Tensor:
    # Cast before subtracting: the difference of two float32 logits rounds in float32.
    logits = logits.double()
    return logits[:, 1] - logits[:, 0]


# The head kinds (the ``score`` of ``reranker.json``) and what their papers read from the logits:
# a probability for ``p_relevant`` and ``sigmoid``. Not what a run holds: probabilities
# saturate (sigmoid(x) == 1.0 in float64 for x > ~37), turning a confident model's top
# candidates into ties. For probabilities (reports, tests), not for ranking.
SCORE_FUNCTIONS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "p_relevant": _p_relevant,  # 2 outputs: softmax probability of the "relevant" class
    "logit": _logit,  # 1 output: the scalar itself
    "sigmoid": _sigmoid,  # 1 output: its sigmoid, a probability (BERTSel)
}

# What a run holds for each head kind: the raw float64 value whose order is the order of
# SCORE_FUNCTIONS' (strictly monotone in it), without its saturation. The names stay those of
# SCORE_FUNCTIONS, so every saved model loads unchanged and now ranks by its raw score.
RANKING_SCORES: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "p_relevant": _margin,  # l1 - l0: softmax(l)[1] = sigmoid(l1 - l0)
    "logit": _logit,
    "sigmoid": _logit,  # the logit z: sigmoid(z) is increasing
}


class CrossEncoderReranker(nn.Module):
    """Encoder + dropout + linear head on the [CLS] representation.

    Args:
        encoder: a transformers ``AutoModel`` (BERT-like encoder).
        tokenizer: its tokenizer (kept with the model so a saved directory is self-contained).
        variant: the registered variant name (written to ``reranker.json``).
        num_outputs: size of the head (2 for point-wise classification, 1 for a scalar score).
        score: the head kind, a key of :data:`SCORE_FUNCTIONS` (``p_relevant``: two-way
            softmax; ``logit``: a scalar; ``sigmoid``: a scalar read as a probability). The
            ranking score is the raw value of :data:`RANKING_SCORES` (margin or logit).
        max_length: input length (query + passage word pieces) the model is trained and used at.
        dropout: dropout before the head; ``None`` uses the encoder's ``classifier_dropout``
            or ``hidden_dropout_prob`` (as ``BertForSequenceClassification`` does).
        encoder_name: the ``training.encoder`` it was built from (provenance only).
        inputs: settings the variant's featurizer reads at training and re-ranking time
            (e.g. ``{"query_max_length": 64}``), saved in ``reranker.json``.

    Example:
        >>> from reranklab.models.tiny import tiny_encoder
        >>> encoder, tokenizer = tiny_encoder(["who", "is", "it", "me", "you"])
        >>> model = CrossEncoderReranker(encoder, tokenizer, variant="pointwise", num_outputs=2,
        ...     score="p_relevant", max_length=16)
        >>> features = tokenizer(["who is it", "who is it"], ["me", "you"], return_tensors="pt")
        >>> model.score(features).shape, model.score(features).dtype
        (torch.Size([2]), torch.float64)
    """

    def __init__(
        self,
        encoder: nn.Module,
        tokenizer: Any,
        *,
        variant: str,
        num_outputs: int,
        score: str,
        max_length: int,
        dropout: float | None = None,
        encoder_name: str | None = None,
        inputs: Mapping[str, Any] | None = None,
        pooling: str = "cls",
    ) -> None:
        super().__init__()
        if pooling not in PAIR_POOLINGS:
            raise ValueError(f"unknown pooling {pooling!r} (known: {', '.join(PAIR_POOLINGS)})")
        if score not in SCORE_FUNCTIONS:
            raise ValueError(
                f"unknown score function {score!r} (known: {', '.join(SCORE_FUNCTIONS)})"
            )
        config = encoder.config
        if dropout is None:
            dropout = getattr(config, "classifier_dropout", None)
        if dropout is None:
            dropout = getattr(config, "hidden_dropout_prob", 0.1)
        self.encoder = encoder
        self.tokenizer = tokenizer
        self.variant = variant
        self.num_outputs = int(num_outputs)
        self.score_function = score
        self.max_length = int(max_length)
        self.encoder_name = encoder_name
        self.inputs = dict(inputs or {})
        self.pair_pooling = pooling
        self.dropout = nn.Dropout(float(dropout))
        self.head = nn.Linear(config.hidden_size, self.num_outputs)
        # BERT's own initialisation of classification heads.
        nn.init.normal_(self.head.weight, mean=0.0, std=getattr(config, "initializer_range", 0.02))
        nn.init.zeros_(self.head.bias)

    @classmethod
    def from_encoder(cls, encoder: str, **kwargs: Any) -> CrossEncoderReranker:
        """A fresh re-ranker on the pre-trained ``encoder`` (see :func:`load_encoder`)."""
        model, tokenizer = load_encoder(encoder)
        return cls(model, tokenizer, encoder_name=encoder, **kwargs)

    @property
    def device(self) -> torch.device:
        return self.head.weight.device

    def head_config(self) -> dict[str, Any]:
        config = {
            "num_outputs": self.num_outputs,
            "score": self.score_function,
            "dropout": self.dropout.p,
            "hidden_size": self.head.in_features,
        }
        # Only when not [CLS]: the files of a [CLS] model stay as they were.
        return (
            config if self.pair_pooling == "cls" else {**config, "pair_pooling": self.pair_pooling}
        )

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        token_type_ids: torch.Tensor | None = None,
        **packed: torch.Tensor,
    ) -> torch.Tensor:
        """Logits ``[B, num_outputs]`` of padded (query, passage) pairs, or of packed ones
        (``packed``: ``position_ids``, ``sequence_ids``, ``cls_index``; see
        :mod:`reranklab.features.packing`)."""
        pooled = self.encode(input_ids, attention_mask, token_type_ids, **packed)
        # The head in fp32 even under bf16/fp16 autocast (training.precision): bf16 logits keep
        # ~3 significant digits and would turn close candidates' scores into ties.
        with torch.autocast(device_type=pooled.device.type, enabled=False):
            return self.head(self.dropout(pooled.to(self.head.weight.dtype)))

    def encode(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        token_type_ids: torch.Tensor | None = None,
        *,
        position_ids: torch.Tensor | None = None,
        sequence_ids: torch.Tensor | None = None,
        cls_index: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """``BERT(q, p)``: the pooled [CLS] vectors ``[B, hidden]`` of padded sequences, or of
        packed ones (one vector per pair, in ``cls_index`` order)."""
        if cls_index is None:
            outputs = self.encoder(
                **encoder_inputs(self.encoder, input_ids, attention_mask, token_type_ids)
            )
            if self.pair_pooling == "mean":
                return pool(outputs.last_hidden_state, attention_mask, "mean")
            pooled = getattr(outputs, "pooler_output", None)
            if pooled is None:
                pooled = outputs.last_hidden_state[:, 0]
            return pooled
        if not self.supports_packing:
            raise ValueError(f"{type(self).__name__} on this encoder does not read packed inputs")
        inputs = encoder_inputs(self.encoder, input_ids, block_mask(sequence_ids), token_type_ids)
        hidden = self.encoder(**inputs, position_ids=position_ids).last_hidden_state
        first = hidden.flatten(0, 1)[cls_index]
        pooler = getattr(self.encoder, "pooler", None)
        # BERT's pooler reads position 0 of each sequence: give it each pair's [CLS] as one.
        return first if pooler is None else pooler(first[:, None])

    @property
    def supports_packing(self) -> bool:
        """Whether :meth:`encode` reads packed batches (``training.packing``): the class's own
        forward and encode on a BERT encoder (absolute positions it takes as ``position_ids``,
        and a 4D attention mask)."""
        cls = type(self)
        own = cls.forward is CrossEncoderReranker.forward and (
            cls.encode is CrossEncoderReranker.encode
        )
        return (
            own
            and self.pair_pooling == "cls"
            and getattr(self.encoder.config, "model_type", None) in PACKABLE_ENCODERS
        )

    def scores_from_logits(self, logits: torch.Tensor) -> torch.Tensor:
        """Ranking scores ``[B]`` (float64) of logits ``[B, num_outputs]``: the margin
        ``l1 - l0`` of a two-way head, the logit of a scalar head (see :data:`RANKING_SCORES`).

        Example:
            >>> from reranklab.models.tiny import tiny_encoder
            >>> model = CrossEncoderReranker(*tiny_encoder(["who"]), variant="pointwise", num_outputs=2,
            ...     score="p_relevant", max_length=16)
            >>> model.scores_from_logits(torch.tensor([[-20.0, 30.0]])).tolist()
            [50.0]
        """
        return RANKING_SCORES[self.score_function](logits)

    def score(self, features: Mapping[str, torch.Tensor]) -> torch.Tensor:
        """Ranking scores ``[B]`` (float64, higher = more relevant) of a padded batch of pairs:
        raw margins or logits, never probabilities (those tie when they saturate at 1.0)."""
        return self.scores_from_logits(self(**features))

    def standard_checkpoint_problem(self) -> str | None:
        """Why this model cannot be saved as a one-logit ``*ForSequenceClassification``.

        Returns:
            ``None`` when it can (a BERT encoder with a pooler, and the class's own ``forward``
            and ``encode``); else the reason, as the model card gives it.

        Example:
            >>> from reranklab.models.tiny import tiny_encoder
            >>> CrossEncoderReranker(*tiny_encoder(["who"]), variant="pointwise", num_outputs=2,
            ...     score="p_relevant", max_length=16).standard_checkpoint_problem() is None
            True
        """
        cls = type(self)
        # A subclass that overrides forward or encode (the chunked pooling) feeds the head
        # something else than the pooled [CLS] of one sequence.
        if cls.forward is not CrossEncoderReranker.forward or (
            cls.encode is not CrossEncoderReranker.encode
        ):
            return f"{cls.__name__} feeds its head more than the pooled [CLS] of one sequence"
        if self.pair_pooling != "cls":
            return "its head reads the mean of the pair's token vectors, not the pooled [CLS]"
        return checkpoint_problem(self.encoder)

    def save(self, directory: str | Path) -> Path:
        """Write the encoder, tokenizer, head, ``reranker.json`` and the model card into
        ``directory``: the encoder as a standard one-logit ``*ForSequenceClassification`` when
        :meth:`standard_checkpoint_problem` finds none, else with ``save_pretrained``.

        Example:
            >>> import tempfile
            >>> from reranklab.models.tiny import tiny_encoder
            >>> saved = CrossEncoderReranker(*tiny_encoder(["who"]), variant="pointwise", num_outputs=2,
            ...     score="p_relevant", max_length=16).save(tempfile.mkdtemp())
            >>> sorted(p.name for p in saved.iterdir())
            ['README.md', 'config.json', 'head.safetensors', 'model.safetensors', 'reranker.json', 'tokenizer.json', 'tokenizer_config.json']
        """
        meta = {
            **variant_meta(self),
            "head": self.head_config(),
            "max_length": self.max_length,
            "encoder": self.encoder_name,
            "inputs": self.inputs,
        }
        problem = self.standard_checkpoint_problem()
        if problem is None:
            classifier = single_logit(self.head.weight, self.head.bias, self.score_function)
            out = save_classifier_model(
                directory, self.encoder, self.tokenizer, self.head, meta, classifier
            )
        else:
            out = save_encoder_model(directory, self.encoder, self.tokenizer, self.head, meta)
        write_card(out, facts_from_directory(out, problem))
        return out


def load_reranker(
    directory: str | Path, device: torch.device | str | None = None
) -> CrossEncoderReranker:
    """Restore a re-ranker written by :meth:`CrossEncoderReranker.save`, offline, in eval mode.

    Args:
        directory: the saved model directory.
        device: where to put it (default: CPU).

    Example:
        >>> import tempfile
        >>> from reranklab.models.tiny import tiny_encoder
        >>> saved = CrossEncoderReranker(*tiny_encoder(["who"]), variant="pointwise", num_outputs=2,
        ...     score="p_relevant", max_length=16).save(tempfile.mkdtemp())
        >>> model = load_reranker(saved)
        >>> model.variant, model.max_length, model.training
        ('pointwise', 16, False)
    """

    def build(encoder: Any, tokenizer: Any, meta: dict[str, Any]) -> CrossEncoderReranker:
        head = meta["head"]
        return CrossEncoderReranker(
            encoder,
            tokenizer,
            variant=meta["variant"],
            num_outputs=int(head["num_outputs"]),
            score=head["score"],
            max_length=int(meta["max_length"]),
            dropout=float(head["dropout"]),
            encoder_name=meta.get("encoder"),
            inputs=meta.get("inputs"),
            pooling=head.get("pair_pooling", "cls"),
        )

    return load_encoder_model(directory, build, "re-ranker", device)
