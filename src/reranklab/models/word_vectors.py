"""Static word vectors for the non-BERT baselines (QA-LSTM, K-NRM).

Two sources:

* a GloVe text file (``training.embeddings_path``; ``word v1 … vd`` per line, optionally
  gzipped, a word2vec ``count dim`` header is skipped): texts are split into lower-cased
  ``\\w+`` words; words absent from the file get a random vector seeded by the word itself
  (so an unknown word still matches itself exactly, and two unknown words are unrelated);
* when no file is given, the encoder's input (word-piece) embedding matrix, used as static
  vectors: texts are split by the encoder's tokenizer. This is a deviation from the papers
  (which use word2vec/GloVe words) that keeps the baselines runnable offline.

The vocabulary is the tokens of the collection the model is trained on (every query and
passage text), so the saved model holds only the rows it can meet; row 0 is padding (a zero
vector) and row 1 stands for tokens first seen at re-ranking time (a zero vector: it matches
nothing).
"""

from __future__ import annotations

import gzip
import hashlib
import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from reranklab.errors import ConfigError, FormatError

PAD, UNK = "[PAD]", "[UNK]"
_WORD = re.compile(r"\w+")


def word_tokens(text: str) -> list[str]:
    """Lower-cased runs of word characters.

    Example:
        >>> word_tokens("Who wrote Hamlet? W. Shakespeare.")
        ['who', 'wrote', 'hamlet', 'w', 'shakespeare']
    """
    return _WORD.findall(text.lower())


def _open_text(path: Path) -> Any:
    return (
        gzip.open(path, "rt", encoding="utf-8")
        if path.suffix == ".gz"
        else open(path, encoding="utf-8")
    )


def glove_dimension(path: str | Path) -> int:
    """The vector size of a GloVe / word2vec text file, from its first vector line.

    Raises:
        ConfigError: the file does not exist.
        FormatError: the first line is not a word followed by numbers.
    """
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"training.embeddings_path: {path} does not exist")
    with _open_text(path) as handle:
        for number, line in enumerate(handle, start=1):
            parts = line.rstrip().split(" ")
            if number == 1 and len(parts) == 2 and all(p.isdigit() for p in parts):
                continue  # word2vec header: "<count> <dim>"
            try:
                [float(x) for x in parts[1:]]
            except ValueError:
                raise FormatError(
                    path, number, "expected a word followed by its vector's numbers"
                ) from None
            if len(parts) < 2:
                raise FormatError(path, number, "expected a word followed by its vector's numbers")
            return len(parts) - 1
    raise FormatError(path, None, "no vectors in the file")


def read_glove(
    path: str | Path, words: set[str], *, progress: bool = True
) -> tuple[int, dict[str, np.ndarray]]:
    """Vectors of ``words`` (lower-cased) from a GloVe / word2vec text file, streamed.

    The first vector of a word wins when the file has several spellings of it (cased files).

    Args:
        path: the text file (``.gz`` is read gzipped).
        words: the lower-cased words wanted; the rest of the file is skipped.

    Returns:
        ``(dimension, {word: float32 vector})``.

    Raises:
        FormatError: a line (named by number) is not a word followed by ``dimension`` numbers.

    Example:
        >>> import tempfile
        >>> glove = Path(tempfile.mkdtemp()) / "toy.3d.txt"
        >>> _ = glove.write_text("cat 0.1 0.2 0.3\\nbird 1 2 3\\ndog 0 0 1\\n")
        >>> dim, vectors = read_glove(glove, {"cat", "dog"}, progress=False)
        >>> dim, sorted(vectors), vectors["dog"].tolist()
        (3, ['cat', 'dog'], [0.0, 0.0, 1.0])
    """
    path = Path(path)
    dim = glove_dimension(path)
    found: dict[str, np.ndarray] = {}
    with (
        _open_text(path) as handle,
        tqdm(desc=f"read {path.name}", unit="line", disable=not progress, mininterval=1.0) as bar,
    ):
        for number, line in enumerate(handle, start=1):
            bar.update(1)
            parts = line.rstrip("\n").rstrip().split(" ")
            if number == 1 and len(parts) == 2 and all(p.isdigit() for p in parts):
                continue
            if len(parts) < dim + 1:
                raise FormatError(
                    path, number, f"expected a word and {dim} numbers, got {len(parts)} fields"
                )
            # Words may contain spaces in some files: the vector is the last `dim` fields.
            word = " ".join(parts[:-dim]).lower()
            if word in words and word not in found:
                try:
                    found[word] = np.asarray(parts[-dim:], dtype=np.float32)
                except ValueError:
                    raise FormatError(
                        path, number, f"the vector of {word!r} is not {dim} numbers"
                    ) from None
    return dim, found


def seeded_vector(token: str, dim: int, scale: float) -> np.ndarray:
    """A fixed random vector ``N(0, scale²)`` for ``token``, the same in every run and process.

    Example:
        >>> bool((seeded_vector("zyx", 4, 0.1) == seeded_vector("zyx", 4, 0.1)).all())
        True
    """
    seed = int.from_bytes(hashlib.blake2b(token.encode("utf-8"), digest_size=8).digest(), "little")
    return np.random.default_rng(seed).normal(0.0, scale, dim).astype(np.float32)


def collection_tokens(
    texts: Iterable[str], tokenize: Callable[[str], list[str]], *, progress: bool = True
) -> list[str]:
    """Every distinct token of ``texts``, sorted (the vocabulary after ``[PAD]``, ``[UNK]``)."""
    seen: set[str] = set()
    for text in tqdm(texts, desc="vocabulary", unit="text", disable=not progress, mininterval=1.0):
        seen.update(tokenize(text))
    seen.discard(PAD)
    seen.discard(UNK)
    return sorted(seen)


def glove_matrix(
    tokens: list[str], path: str | Path, *, progress: bool = True
) -> tuple[np.ndarray, int]:
    """The embedding matrix of ``[PAD], [UNK], *tokens`` from a GloVe file.

    Returns:
        ``(matrix [len(tokens) + 2, dim] float32, number of tokens not in the file)``; those
        get :func:`seeded_vector` with the found vectors' standard deviation.
    """
    dim, found = read_glove(path, set(tokens), progress=progress)
    scale = float(np.std(np.stack(list(found.values())))) if found else 0.1
    matrix = np.zeros((len(tokens) + 2, dim), dtype=np.float32)
    missing = 0
    for row, token in enumerate(tokens, start=2):
        vector = found.get(token)
        if vector is None:
            missing += 1
            vector = seeded_vector(token, dim, scale)
        matrix[row] = vector
    return matrix, missing


def encoder_matrix(tokens: list[str], encoder: Any, tokenizer: Any) -> np.ndarray:
    """The embedding matrix of ``[PAD], [UNK], *tokens`` (word pieces) from the encoder's input embeddings."""
    weights = encoder.get_input_embeddings().weight.detach().float().cpu().numpy()
    ids = tokenizer.convert_tokens_to_ids(tokens)
    matrix = np.zeros((len(tokens) + 2, weights.shape[1]), dtype=np.float32)
    matrix[2:] = weights[np.asarray(ids, dtype=np.int64)]
    return matrix
