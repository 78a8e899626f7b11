"""A tiny, randomly initialised BERT with a vocabulary built from given words.

It loads like any pre-trained encoder (``training.encoder: <its directory>``) but has ~50k
parameters, so tests and the integration workflow train and re-rank in seconds without
downloading anything. Its scores mean nothing until it is trained.
"""

from __future__ import annotations

import inspect
import re
import string
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import torch

from reranklab.io.atomic import honour_umask

SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
_PIECES = re.compile(r"\w+|[^\w\s]")


def tiny_vocabulary(words: Iterable[str]) -> list[str]:
    """The WordPiece vocabulary: special tokens, the words, then single characters.

    Words are lower-cased and split like BERT's basic tokenizer would (runs of word characters,
    each punctuation mark alone), deduplicated and sorted. Every character that occurs, plus
    ASCII letters, digits and punctuation, is added both as a word start and as a ``##``
    continuation, so any unseen word still splits into known pieces instead of ``[UNK]``.

    Example:
        >>> tiny_vocabulary(["Cats", "cats!"])[:7]
        ['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]', '!', 'cats']
    """
    pieces: set[str] = set()
    for word in words:
        pieces.update(_PIECES.findall(word.lower()))
    chars = set(string.ascii_lowercase + string.digits + string.punctuation)
    for piece in pieces:
        chars.update(piece)
    vocab = list(SPECIAL_TOKENS) + sorted(pieces)
    seen = set(vocab)
    for char in sorted(chars):
        for token in (char, f"##{char}"):
            if token not in seen:
                vocab.append(token)
                seen.add(token)
    return vocab


def tiny_tokenizer(words: Iterable[str], *, model_max_length: int = 512) -> Any:
    """A lower-casing fast WordPiece tokenizer over :func:`tiny_vocabulary` of ``words``, in memory.

    What :func:`build_tiny_bert` saves with its model; on its own it makes runnable examples
    and tests of tokenisation (no download, no file).

    Example:
        >>> tokenizer = tiny_tokenizer(["what", "is", "a", "cat"])
        >>> tokenizer.tokenize("What is a cat? A dog")
        ['what', 'is', 'a', 'cat', '?', 'a', 'd', '##o', '##g']
    """
    from transformers import BertTokenizerFast

    vocab = tiny_vocabulary(words)
    options = {"do_lower_case": True, "model_max_length": model_max_length}
    if "vocab" in inspect.signature(BertTokenizerFast.__init__).parameters:
        # transformers >= 5 builds the WordPiece model from a vocab mapping.
        return BertTokenizerFast(vocab={token: i for i, token in enumerate(vocab)}, **options)
    with tempfile.TemporaryDirectory() as tmp:
        vocab_file = Path(tmp) / "vocab.txt"
        vocab_file.write_text("\n".join(vocab) + "\n", encoding="utf-8")
        return BertTokenizerFast(vocab_file=str(vocab_file), **options)


def tiny_encoder(
    words: Iterable[str],
    *,
    hidden_size: int = 32,
    layers: int = 2,
    heads: int = 2,
    intermediate_size: int = 64,
    max_position_embeddings: int = 512,
    seed: int = 0,
) -> tuple[Any, Any]:
    """A tiny random ``BertModel`` and its :func:`tiny_tokenizer`, in memory.

    Args:
        words: words the vocabulary must hold whole.
        hidden_size, layers, heads, intermediate_size, max_position_embeddings: the shape.
        seed: initialisation seed (the same words and seed give the same weights).

    Returns:
        ``(encoder, tokenizer)``, as :func:`reranklab.models.encoder.load_encoder` gives.

    Example:
        >>> encoder, tokenizer = tiny_encoder(["who", "is", "it"])
        >>> encoder(**tokenizer(["who is it"], return_tensors="pt")).last_hidden_state.shape
        torch.Size([1, 5, 32])
    """
    from transformers import BertConfig, BertModel

    from reranklab.models.encoder import quiet_transformers

    quiet_transformers()
    tokenizer = tiny_tokenizer(words, model_max_length=max_position_embeddings)
    config = BertConfig(
        vocab_size=len(tokenizer),
        hidden_size=hidden_size,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        intermediate_size=intermediate_size,
        max_position_embeddings=max_position_embeddings,
        type_vocab_size=2,
        pad_token_id=tokenizer.pad_token_id,
    )
    # fork_rng: building the fixture must not move the caller's global random state.
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        encoder = BertModel(config)
    return encoder, tokenizer


def build_tiny_bert(out_dir: str | Path, words: Iterable[str], **shape: Any) -> Path:
    """Write a tiny random BERT and its tokenizer to ``out_dir`` (``save_pretrained`` layout).

    Args:
        out_dir: directory to create (or overwrite files in).
        words: words the vocabulary must hold whole (e.g. every word of a test corpus).
        shape: ``hidden_size``, ``layers``, ``heads``, ``intermediate_size``,
            ``max_position_embeddings``, ``seed``: as :func:`tiny_encoder`.

    Returns:
        ``out_dir`` as a Path, loadable with ``AutoModel`` / ``AutoTokenizer`` offline.

    Example:
        >>> import tempfile
        >>> from reranklab.models.encoder import load_encoder
        >>> path = build_tiny_bert(Path(tempfile.mkdtemp()) / "tiny", ["what", "is", "a", "cat"])
        >>> encoder, tokenizer = load_encoder(str(path))
        >>> encoder.config.hidden_size, tokenizer.tokenize("What is a cat")
        (32, ['what', 'is', 'a', 'cat'])
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    words = list(words)
    encoder, tokenizer = tiny_encoder(words, **shape)
    # transformers >= 5 saves only tokenizer.json; vocab.txt keeps the directory readable by older ones.
    (out / "vocab.txt").write_text("\n".join(tiny_vocabulary(words)) + "\n", encoding="utf-8")
    encoder.save_pretrained(out)
    tokenizer.save_pretrained(out)
    # safetensors writes model.safetensors 0600: the model is as readable as any other file.
    honour_umask(out)
    return out
