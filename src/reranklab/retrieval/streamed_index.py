"""A bm25s index written from a corpus streamed in chunks, equal to the one bm25s builds in memory.

bm25s (``BM25.index``) needs every passage's tokens at once: ~3.4 KiB of peak memory per
passage, ~29 GiB for MS MARCO's 8.8 M passages. The index it builds is a CSC matrix of
precomputed BM25 term weights (one column per term, rows = passages), and each weight needs
only corpus-wide statistics known after one pass: the number of passages, the average length
and the term's document frequency. So:

1. **Pass 1**, chunk by chunk: tokenise (:class:`~reranklab.retrieval.analyzer.Analyzer`),
   count each (passage, term) pair, add to the document frequencies and lengths, and spill
   the chunk's (term, passage, tf) triples to disk.
2. **Pass 2**, over the spilled triples: weigh each with the global statistics and scatter it
   into its column of the memory-mapped ``data``/``indices`` arrays (the column offsets are the
   cumulative document frequencies, so each chunk appends to every column it touches; the
   chunks come in passage order, so each column ends up sorted by passage, as bm25s' is).

Memory is one chunk, the vocabulary and the pages of the output the kernel keeps resident;
no shards are needed, since a single index is scored with the global statistics by
construction. The weights are computed with bm25s' own formula and operation order (float64
arithmetic, the idf rounded to float32 first, the product rounded to float32), so the arrays
are bit for bit those of ``bm25s.BM25(method="lucene").index(...)`` with
``retrieval.length_norms: exact`` (and ``tokenizer: bm25s``); bm25s loads the folder
(``BM25.load(..., mmap=True)``) like one it saved. With ``length_norms: lucene`` (the default)
each passage's length is first rounded as Lucene's one-byte norm stores it
(:func:`lucene_norm_lengths`), so the scores are those of Lucene, Elasticsearch and Anserini.
"""

from __future__ import annotations

import json
import math
import shutil
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from reranklab.retrieval.analyzer import Analyzer

DATA_FILE = "data.csc.index.npy"
INDICES_FILE = "indices.csc.index.npy"
INDPTR_FILE = "indptr.csc.index.npy"
VOCAB_FILE = "vocab.index.json"
PARAMS_FILE = "params.index.json"
PIDS_FILE = "pids.npy"  # the passage ids in index order (UTF-8, fixed width: memory-mapped)
# The terms in id order (Arrow IPC, memory-mapped): a search looks its queries' terms up in it
# (a hash of the column, in C++) instead of reading vocab.index.json into a dict, ~4x the CPU
# (1 s for 1.5 M terms). bm25s ignores the file; vocab.index.json stays its vocabulary.
TERMS_FILE = "vocab.terms.arrow"
LENGTH_NORMS = ("lucene", "exact")
# The ``retrieval`` settings under which the index is bm25s' own: bm25s.tokenize's analysis
# (stop words "en", Snowball "english") and exact lengths.
BM25S_ANALYSIS = {
    "tokenizer": "bm25s",
    "stemmer": "english",
    "stopwords": "en",
    "length_norms": "exact",
}


def _chunk_triples(ids: np.ndarray, lengths: np.ndarray, first_doc: int):
    """(term, passage, tf) of one chunk, sorted by (passage, term)."""
    local = np.repeat(np.arange(len(lengths), dtype=np.int64), lengths)
    keys, tf = np.unique((local << 32) | ids.astype(np.int64), return_counts=True)
    docs = (keys >> 32).astype(np.int32) + np.int32(first_doc)
    terms = (keys & 0xFFFFFFFF).astype(np.int32)
    return terms, docs, tf.astype(np.int32)


def lucene_idf(df: np.ndarray, passages: int) -> np.ndarray:
    """bm25s' Lucene idf per term, ``log(1 + (N - df + 0.5) / (df + 0.5))``, as float32.

    Computed with :func:`math.log` as bm25s does (numpy's vectorised log may differ in the last
    bit), once per distinct document frequency.

    Example:
        >>> lucene_idf(np.array([1, 2, 1]), passages=4).tolist()
        [1.2039728164672852, 0.6931471824645996, 1.2039728164672852]
    """
    values, inverse = np.unique(df, return_inverse=True)
    idf = np.array(
        [math.log(1 + (passages - int(d) + 0.5) / (int(d) + 0.5)) for d in values],
        dtype=np.float32,
    )
    return idf[inverse]


# Lucene's SmallFloat: document lengths are stored in one byte, exact below 24 terms, then
# with 4 significant bits (a length of 100 is scored as 96). BM25Similarity scores with the
# decoded length and the exact average.
_FREE_VALUES = 24  # 255 - SmallFloat.longToInt4(Integer.MAX_VALUE)


def _long_to_int4(value: int) -> int:
    bits = value.bit_length()
    if bits < 4:
        return value
    shift = bits - 4
    return ((value >> shift) & 0x07) | ((shift + 1) << 3)


def _int4_to_long(value: int) -> int:
    bits, shift = value & 0x07, (value >> 3) - 1
    return bits if shift == -1 else (bits | 0x08) << shift


def lucene_norm_lengths(lengths: np.ndarray) -> np.ndarray:
    """Each length as Lucene scores it: ``byte4ToInt(intToByte4(length))`` (its one-byte norm).

    Example:
        >>> lucene_norm_lengths(np.array([3, 23, 24, 25, 100, 1000])).tolist()
        [3, 23, 24, 25, 96, 984]
    """
    values, inverse = np.unique(np.asarray(lengths, dtype=np.int64), return_inverse=True)
    decoded = [
        int(v)
        if v < _FREE_VALUES
        else _FREE_VALUES + _int4_to_long(_long_to_int4(int(v) - _FREE_VALUES))
        for v in values
    ]
    return np.asarray(decoded, dtype=np.int64)[inverse].reshape(np.shape(lengths))


def lucene_weights(
    idf: np.ndarray, tf: np.ndarray, length: np.ndarray, avg_length: float, k1: float, b: float
) -> np.ndarray:
    """bm25s' Lucene term weights ``idf * tf / (k1 * ((1 - b) + b * dl / avgdl) + tf)`` (float32).

    The operations and their order are bm25s' (``_score_tfc_lucene`` in float64, times the
    float32 idf, rounded to float32), so the results are equal bit for bit.
    """
    tf = tf.astype(np.float64)
    denominator = k1 * ((1 - b) + b * length.astype(np.float64) / avg_length) + tf
    return (idf.astype(np.float64) * (tf / denominator)).astype(np.float32)


def build_streamed_index(
    chunks: Iterable[list[tuple[str, str]]],
    out_dir: Path,
    settings: dict[str, Any],
    total: int | None = None,
) -> dict[str, Any]:
    """Write a bm25s (Lucene) index of the streamed passages into ``out_dir`` (created).

    Args:
        chunks: lists of (pid, text), in corpus order (:func:`reranklab.io.iter_corpus`).
        out_dir: a new folder; the caller renames it into place when this returns.
        settings: the ``retrieval`` block (k1, b, tokenizer, stemmer, stopwords, length_norms).
        total: the number of passages, for the progress bar only.

    Returns:
        ``{"passages", "vocabulary", "postings"}``.

    Raises:
        ValueError: a pid repeated in the corpus.
    """
    import bm25s

    k1, b = float(settings["k1"]), float(settings["b"])
    norms = settings.get("length_norms") or "lucene"
    if norms not in LENGTH_NORMS:
        raise ValueError(
            f"retrieval.length_norms: {norms!r} is not one of {', '.join(LENGTH_NORMS)}"
        )
    analyzer = Analyzer(settings)
    spill = out_dir / "spill"
    spill.mkdir(parents=True)
    df = np.zeros(0, dtype=np.int64)
    lengths: list[np.ndarray] = []
    pids: list[np.ndarray] = []
    passages = 0
    bar = tqdm(total=total, unit="passage", desc="index pass 1", disable=(total or 0) < 50_000)
    for number, chunk in enumerate(chunks):
        ids, chunk_lengths = analyzer.encode([text for _, text in chunk])
        terms, docs, tf = _chunk_triples(ids, chunk_lengths, passages)
        counts = np.bincount(terms, minlength=len(analyzer.vocabulary))
        df = np.concatenate([df, np.zeros(len(counts) - len(df), dtype=np.int64)]) + counts
        np.save(spill / f"{number}.npy", np.stack([terms, docs, tf]))
        lengths.append(chunk_lengths)
        pids.append(np.array([pid.encode("utf-8") for pid, _ in chunk], dtype=np.bytes_))
        passages += len(chunk)
        bar.update(len(chunk))
        del ids, terms, docs, tf
    bar.close()
    if passages == 0:
        raise ValueError("the corpus holds no passage")
    length = np.concatenate(lengths)
    del lengths
    # bm25s: np.array(lengths).mean(); the int sum is exact, so this is the same float64.
    # Lucene's average is of the exact lengths too (sumTotalTermFreq / docCount).
    avg_length = int(length.sum(dtype=np.int64)) / passages
    if norms == "lucene":
        length = lucene_norm_lengths(length)
    idf = lucene_idf(df, passages)
    indptr = np.zeros(len(df) + 1, dtype=np.int64)
    np.cumsum(df, out=indptr[1:])
    postings = int(indptr[-1])
    data = np.lib.format.open_memmap(out_dir / DATA_FILE, "w+", np.float32, (postings,))
    indices = np.lib.format.open_memmap(out_dir / INDICES_FILE, "w+", np.int32, (postings,))
    heads = indptr[:-1].copy()  # the next free slot of each column
    for number in tqdm(
        range(len(pids)), desc="index pass 2", unit="chunk", disable=passages < 50_000
    ):
        terms, docs, tf = np.load(spill / f"{number}.npy")
        weights = lucene_weights(idf[terms], tf, length[docs], avg_length, k1, b)
        # Column-major within the chunk; stable, so passages stay ascending within a column.
        order = np.argsort(terms, kind="stable")
        terms = terms[order]
        columns, first, counts = np.unique(terms, return_index=True, return_counts=True)
        slots = heads[terms] + (np.arange(len(terms)) - np.repeat(first, counts))
        data[slots] = weights[order]
        indices[slots] = docs[order]
        heads[columns] += counts
        (spill / f"{number}.npy").unlink()
    if not np.array_equal(heads, indptr[1:]):
        raise AssertionError("internal error: postings do not fill their columns")
    data.flush()
    indices.flush()
    del data, indices
    shutil.rmtree(spill)
    np.save(out_dir / INDPTR_FILE, indptr)
    _write_pids(out_dir / PIDS_FILE, pids)
    vocabulary = analyzer.vocabulary
    # bm25s.BM25.index adds the empty term after the indexed ones (create_empty_token=True).
    vocabulary.setdefault("", len(vocabulary))
    # json.dumps, not json.dump: the C encoder (millions of terms for MS MARCO).
    (out_dir / VOCAB_FILE).write_text(json.dumps(vocabulary, ensure_ascii=False), encoding="utf-8")
    write_terms(out_dir / TERMS_FILE, vocabulary)
    params = {
        "k1": k1,
        "b": b,
        "delta": 0.5,
        "method": "lucene",
        "idf_method": "lucene",
        "dtype": "float32",
        "int_dtype": "int32",
        "num_docs": passages,
        "version": bm25s.__version__,
        "backend": "numpy",
    }
    (out_dir / PARAMS_FILE).write_text(json.dumps(params, indent=4), encoding="utf-8")
    return {"passages": passages, "vocabulary": len(df), "postings": postings}


def write_terms(path: Path, vocabulary: dict[str, int]) -> None:
    """The vocabulary's terms in id order as an Arrow IPC file (:data:`TERMS_FILE`)."""
    import pyarrow as pa

    terms = list(vocabulary)
    if not np.array_equal(
        np.fromiter(vocabulary.values(), np.int64, len(terms)), np.arange(len(terms))
    ):
        raise AssertionError("internal error: term ids are not 0..n-1 in insertion order")
    table = pa.table({"term": pa.array(terms, type=pa.large_string())})
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)


def read_terms(path: Path) -> Any:
    """The terms of :data:`TERMS_FILE`, memory-mapped (a ``pyarrow`` array; the map stays open
    while the array lives)."""
    import pyarrow as pa

    column = pa.ipc.open_file(pa.memory_map(str(path))).read_all().column("term")
    return column.chunk(0) if column.num_chunks == 1 else column.combine_chunks()


def _write_pids(path: Path, parts: list[np.ndarray]) -> None:
    width = max(part.dtype.itemsize for part in parts)
    out = np.lib.format.open_memmap(path, "w+", np.dtype(f"S{width}"), (sum(map(len, parts)),))
    start = 0
    for part in parts:
        out[start : start + len(part)] = part
        start += len(part)
    out.flush()
    if len(np.unique(out)) != len(out):
        raise ValueError("duplicate passage ids in the corpus")
    del out
