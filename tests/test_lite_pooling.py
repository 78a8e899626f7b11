"""Lite heads that read a sentence-embedding encoder as it was trained: the mean of the pair's
word pieces (pair_pooling: mean) instead of a [CLS] vector that was never trained."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from reranklab.errors import ConfigError
from reranklab.models.encoder import encoder_inputs
from reranklab.models.frozen_features import (
    check_frozen_cache,
    extract_features,
    open_frozen_cache,
    write_frozen_cache,
)
from reranklab.models.lite import LiteReranker
from reranklab.models.registry import get_variant
from reranklab.models.segments import encode_segmented_pairs
from reranklab.models.tiny import tiny_encoder

WORDS = ["who", "wrote", "hamlet", "shakespeare", "did", "in", "1600"]
TEXTS = [("who wrote hamlet", "Shakespeare did. In 1600."), ("hamlet", "who did")]


def test_the_mean_field_is_the_mean_of_the_pairs_word_piece_vectors():
    encoder, tokenizer = tiny_encoder(WORDS)
    arrays = extract_features(encoder, tokenizer, TEXTS, 64, ("cls", "mean"), progress=False)
    pairs = encode_segmented_pairs(tokenizer, TEXTS, 64, progress=False)
    encoder.eval()
    for i in range(len(TEXTS)):
        inputs = pairs.encoded.pad(np.array([i]), int(tokenizer.pad_token_id or 0), None)
        with torch.inference_mode():
            hidden = encoder(
                **encoder_inputs(
                    encoder,
                    inputs["input_ids"],
                    inputs["attention_mask"],
                    inputs.get("token_type_ids"),
                )
            ).last_hidden_state
        assert arrays.mean[i] == pytest.approx(hidden[0].mean(0).numpy(), abs=1e-5)
        assert arrays.cls[i] == pytest.approx(hidden[0, 0].numpy(), abs=1e-5)
    assert arrays.fields == ("cls", "mean")


def test_a_mean_pooled_lite_head_reads_the_mean_and_keeps_it_when_saved(tmp_path: Path):
    model = LiteReranker(
        "linear", 8, variant="bert_lite", max_length=64, encoder_name="tiny", pair_pooling="mean"
    )
    model.eval()
    cls, mean = torch.zeros(2, 8), torch.randn(2, 8)
    expected = model.head(cls=mean)
    assert torch.allclose(model.logits(cls=cls, mean=mean), expected)
    assert model.fields == ("cls", "mean")
    loaded = LiteReranker.load(model.save(tmp_path / "model"))
    assert loaded.pair_pooling == "mean"
    assert torch.allclose(loaded.logits(cls=cls, mean=mean), expected)


def test_the_setting_flows_from_the_variant_settings_to_the_model(monkeypatch):
    import reranklab.models.lite as lite

    monkeypatch.setattr(lite, "encoder_hidden_size", lambda encoder: 8)
    for name in ("bert_lite", "dmn_lite"):
        spec = get_variant(name)
        assert spec.build("tiny", {"pair_pooling": "mean"}, 64).pair_pooling == "mean"
        assert spec.build("tiny", {}, 64).pair_pooling == "cls"


def test_a_cache_without_the_mean_is_refused_for_a_mean_pooled_head(tmp_path: Path):
    encoder, tokenizer = tiny_encoder(WORDS)
    keys = [("q1", "p1"), ("q2", "p2")]
    write_frozen_cache(
        tmp_path / "fold0",
        keys,
        TEXTS,
        encoder,
        tokenizer,
        encoder_name="tiny",
        max_length=64,
        fields=("cls",),
        progress=False,
    )
    cache = open_frozen_cache(tmp_path / "fold0")
    with pytest.raises(ConfigError, match="lacks field"):
        check_frozen_cache(cache, "tiny", 64, ("cls", "mean"))
