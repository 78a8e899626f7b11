"""The encoder a bench measures: its real weights where a local copy exists, else random ones.

Throughput does not depend on weight values, so a machine with no hub (a lent GPU starts bare and
offline) can still time BERT-base or BERT-large: the encoder is built from its configuration
shipped in ``reranklab/bench/configs/`` (the hub's ``config.json`` values and the uncased
WordPiece vocabulary, so pairs have the real model's lengths) with seeded random weights, saved
once to a folder, and loaded from there by the engine, the baseline and the peers alike.

``weights`` (:class:`~reranklab.bench.settings.BenchSettings`):

* ``auto``: a local copy when there is one (a folder, the packaged MiniLM, or the Hugging Face
  cache, looked up without the network), else random weights when a shape is shipped, else the
  hub id as it is (the hub is asked, as ``reranklab train`` would).
* ``random``: random weights from the shipped shape, even where real ones exist.
* ``pretrained``: never random (a local copy, else the hub).
"""

from __future__ import annotations

import inspect
import json
import logging
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reranklab.errors import ConfigError

log = logging.getLogger(__name__)

CONFIGS = Path(__file__).with_name("configs")
VOCAB = CONFIGS / "bert-uncased-vocab.txt"
WEIGHTS = ("auto", "random", "pretrained")
# What a saved model folder holds its weights in (one file, or the index of shards).
WEIGHT_FILES = (
    "model.safetensors",
    "model.safetensors.index.json",
    "pytorch_model.bin",
    "pytorch_model.bin.index.json",
)


@dataclass(frozen=True)
class EncoderWeights:
    """What ``training.encoder`` gets (a hub id or a folder) and how the table describes it."""

    path: str
    description: str
    random: bool


def shipped_shapes() -> list[str]:
    """The encoders whose shape ships with reranklab.

    Example:
        >>> shipped_shapes()
        ['bert-base-uncased', 'bert-large-uncased', 'tiny-bert-uncased']
    """
    return sorted(path.stem for path in CONFIGS.glob("*.json"))


def shipped_config(name: str) -> Path | None:
    """The shipped configuration of ``name`` (a hub id, its owner ignored), or ``None``.

    Example:
        >>> shipped_config("google-bert/bert-base-uncased").name
        'bert-base-uncased.json'
        >>> shipped_config("roberta-base") is None
        True
    """
    path = CONFIGS / f"{name.rstrip('/').rsplit('/', 1)[-1]}.json"
    return path if path.is_file() else None


def local_copy(name: str) -> str | None:
    """The folder of ``name``'s real weights on this machine, or ``None`` (never asks the hub)."""
    from reranklab.models.encoder import resolve_encoder

    try:
        resolved = resolve_encoder(name)
    except ConfigError:  # the packaged MiniLM's package is not installed
        return None
    if Path(resolved).is_dir():
        return resolved
    try:
        from huggingface_hub import snapshot_download

        folder = snapshot_download(resolved, local_files_only=True)
    except Exception:  # not cached, not a valid hub id, no huggingface_hub: no local copy
        return None
    return folder if any((Path(folder) / f).is_file() for f in WEIGHT_FILES) else None


def _tokenizer(max_length: int) -> Any:
    """The uncased WordPiece tokenizer of the shipped vocabulary, in memory."""
    from transformers import BertTokenizerFast

    options = {"do_lower_case": True, "model_max_length": max_length}
    if "vocab" in inspect.signature(BertTokenizerFast.__init__).parameters:
        # transformers >= 5 builds the WordPiece model from a vocab mapping.
        tokens = VOCAB.read_text(encoding="utf-8").splitlines()
        return BertTokenizerFast(vocab={token: i for i, token in enumerate(tokens)}, **options)
    return BertTokenizerFast(vocab_file=str(VOCAB), **options)


def build_random_encoder(name: str, out_dir: Path, seed: int) -> Path:
    """Save ``name``'s shape with seeded random weights and its tokenizer to ``out_dir``.

    Built once: a folder already holding a model is reused (a suite's runs share it). Written
    to a sibling folder first, then renamed, so a run killed half-way leaves no half model.

    Raises:
        ConfigError: no shape of ``name`` is shipped.
    """
    import torch
    from transformers import BertConfig, BertModel

    from reranklab.models.encoder import quiet_transformers

    config_file = shipped_config(name)
    if config_file is None:
        raise ConfigError(
            f"bench: no shipped shape for {name!r} to build random weights from "
            f"(shipped: {', '.join(shipped_shapes())})"
        )
    if (out_dir / "config.json").is_file():
        return out_dir
    quiet_transformers()
    config = BertConfig.from_dict(json.loads(config_file.read_text(encoding="utf-8")))
    partial = out_dir.with_name(f"{out_dir.name}.partial-{os.getpid()}")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    # fork_rng: building the encoder must not move the caller's global random state.
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        BertModel(config).save_pretrained(partial)
    _tokenizer(config.max_position_embeddings).save_pretrained(partial)
    shutil.copyfile(VOCAB, partial / "vocab.txt")  # for transformers < 5 readers of the folder
    partial.rename(out_dir)
    log.info("bench: %s random-initialised (seed %d) in %s", name, seed, out_dir)
    return out_dir


def resolve_weights(name: str, weights: str, cache_dir: Path, seed: int) -> EncoderWeights:
    """The encoder to measure under the ``weights`` policy (see the module's docstring).

    Args:
        name: ``training.encoder`` (a hub id, a folder or the packaged MiniLM).
        weights: ``auto``, ``random`` or ``pretrained``.
        cache_dir: where random encoders are saved (``<name>-random-seed<seed>``), and reused.
        seed: the random weights' seed.

    Raises:
        ConfigError: an unknown policy, or ``random`` for an encoder with no shipped shape.
    """
    if weights not in WEIGHTS:
        raise ConfigError(f"bench: weights must be one of {', '.join(WEIGHTS)}, not {weights!r}")
    if weights != "random":
        local = local_copy(name)
        if local is not None:
            return EncoderWeights(local, f"pretrained weights ({local})", random=False)
        if weights == "pretrained" or shipped_config(name) is None:
            return EncoderWeights(name, "pretrained weights (hub)", random=False)
    slug = name.rstrip("/").rsplit("/", 1)[-1]
    folder = build_random_encoder(name, Path(cache_dir) / f"{slug}-random-seed{seed}", seed)
    return EncoderWeights(
        str(folder),
        f"random-initialised from the shipped {slug} config, seed {seed}: "
        "weights do not affect throughput",
        random=True,
    )
