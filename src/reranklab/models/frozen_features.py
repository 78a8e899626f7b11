"""Frozen-encoder features of (query, passage) pairs: computed once, cached, memory-mapped.

The lite variants (BERT-DMN §5.1) never update the encoder, so its output for a pair is the
same in every epoch and in re-ranking. ``reranklab encode`` (rule ``encode``) runs the encoder
once per fold over the training pairs and the test candidates and stores what the heads need:

* ``cls`` — the [CLS] vector (last hidden state at position 0), ``[n, H]``;
* ``mean`` — the mean of the pair's word-piece vectors (padding left out), ``[n, H]``: how a
  sentence-embedding encoder such as all-MiniLM-L6-v2 was trained to be read;
* ``query`` — the query's word-piece vectors, ragged: ``query.npy [Σ, H]`` + ``query_offsets.npy [n + 1]``;
* ``sentences`` — the passage's sentence vectors (mean of each sentence's word pieces),
  ragged the same way (``sentences.npy``, ``sentence_offsets.npy``).

A cache directory holds those ``.npy`` files (float32, opened with ``mmap_mode="r"``), the pair
keys (``pairs.parquet``: ``qid, pid``) and ``meta.json`` (encoder, max length, fields, hidden
size, format version). It is written into a temporary directory and renamed into place.
Training and re-ranking read rows from it (:class:`FrozenFeatureStore`); pairs missing from it are
encoded once, before the first epoch, and kept in memory.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import torch
from tqdm.auto import tqdm

from reranklab.errors import ConfigError, FormatError
from reranklab.features.batch import length_sorted_batches
from reranklab.io.atomic import atomic_directory
from reranklab.io.json_io import read_json, write_json
from reranklab.models.bert_dmn import segment_features
from reranklab.models.encoder import encoder_inputs
from reranklab.models.segments import encode_segmented_pairs, pad_segments
from reranklab.progress import Status

log = logging.getLogger(__name__)

FORMAT_VERSION = 1
META_FILE = "meta.json"
KEYS_FILE = "pairs.parquet"
FIELDS = ("cls", "mean", "query", "sentences")
_RAGGED = {"query": "query_offsets", "sentences": "sentence_offsets"}


@dataclass
class FeatureArrays:
    """Features of ``n`` pairs: ``cls [n, H]`` and, when stored, ragged query/sentence vectors.

    Args:
        cls: ``[n, H]``.
        mean: ``[n, H]``, the pair's mean word-piece vector, when stored.
        query, query_offsets: ``[Σ, H]`` vectors; pair ``i`` owns ``query[query_offsets[i]:query_offsets[i + 1]]``.
        sentences, sentence_offsets: the same for sentence vectors.
    """

    cls: np.ndarray
    mean: np.ndarray | None = None
    query: np.ndarray | None = None
    query_offsets: np.ndarray | None = None
    sentences: np.ndarray | None = None
    sentence_offsets: np.ndarray | None = None
    # the encoder's seconds over all pairs, and the share of the pairs extract_features was
    # told to time (a fold's training pairs: the first epoch's encoder pass of a lite model)
    encode_seconds: float | None = None
    timed_seconds: float | None = None

    def __len__(self) -> int:
        return len(self.cls)

    @property
    def fields(self) -> tuple[str, ...]:
        dense = ("cls",) + (("mean",) if self.mean is not None else ())
        return dense + tuple(name for name in _RAGGED if getattr(self, name) is not None)

    def counts(self, name: str) -> np.ndarray:
        """Vectors per pair of a ragged field (``query`` or ``sentences``)."""
        return np.diff(getattr(self, _RAGGED[name]))

    def ragged(self, name: str, row: int) -> np.ndarray:
        offsets = getattr(self, _RAGGED[name])
        return getattr(self, name)[offsets[row] : offsets[row + 1]]


def _token_mean(hidden: torch.Tensor, attention_mask: torch.Tensor) -> np.ndarray:
    """The mean of each pair's word-piece vectors, padding left out (sentence-transformers'
    mean pooling, as all-MiniLM-L6-v2 was trained)."""
    mask = attention_mask.to(hidden.dtype).unsqueeze(-1)
    return ((hidden * mask).sum(1) / mask.sum(1).clamp(min=1.0)).cpu().numpy()


def _allocate(directory: Path | None, name: str, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    if directory is None:
        return np.zeros(shape, dtype=dtype)
    # Written straight to disk: a large cache never has to fit in memory.
    return np.lib.format.open_memmap(directory / f"{name}.npy", mode="w+", dtype=dtype, shape=shape)


def extract_features(
    encoder: torch.nn.Module,
    tokenizer: Any,
    texts: Sequence[tuple[str, str]],
    max_length: int,
    fields: Sequence[str],
    *,
    batch_size: int = 64,
    device: torch.device | str = "cpu",
    out_dir: Path | None = None,
    progress: bool = True,
    timed: np.ndarray | None = None,
) -> FeatureArrays:
    """Run the frozen ``encoder`` once over ``(query, passage)`` texts and keep ``fields``.

    The pairs are tokenised as BERT-DMN does (:func:`reranklab.models.segments.encode_segmented_pairs`)
    and encoded in length-sorted batches under ``torch.inference_mode`` (no autograd graph,
    so no gradient can ever reach the encoder from these features).

    Args:
        encoder: a transformers ``AutoModel`` (put in eval mode here).
        tokenizer: its fast tokenizer.
        texts: the pairs' texts, in the order of the result.
        max_length: word pieces per pair.
        fields: which of :data:`FIELDS` to keep (``cls`` always is).
        batch_size: pairs per forward pass.
        device: where the encoder runs (it is moved there).
        out_dir: write the arrays as ``.npy`` files there (memory-mapped) instead of in memory.
        progress: show tqdm bars.
        timed: a mask over the pairs whose share of the encoder time is measured
            (``timed_seconds``): each batch's seconds are shared among its pairs, since the
            length-sorted batches mix them with the others.

    Example:
        >>> from reranklab.models.tiny import tiny_encoder
        >>> encoder, tokenizer = tiny_encoder(["who", "me", "you"])
        >>> arrays = extract_features(encoder, tokenizer, [("who", "Me. You.")], 64, FIELDS, progress=False)
        >>> arrays.cls.shape, arrays.counts("query").tolist(), arrays.counts("sentences").tolist()
        ((1, 32), [1], [2])
    """
    unknown = sorted(set(fields) - set(FIELDS))
    if unknown:
        raise ValueError(
            f"unknown feature field(s) {', '.join(unknown)} (known: {', '.join(FIELDS)})"
        )
    device = torch.device(device)
    pairs = encode_segmented_pairs(tokenizer, texts, max_length, desc="tokenise", progress=progress)
    n, size = len(pairs), int(encoder.config.hidden_size)
    segments = pairs.segments
    offsets_of: dict[str, np.ndarray] = {}
    if "query" in fields:
        in_query = np.concatenate([[0], np.cumsum(segments == 0)])
        offsets_of["query"] = in_query[pairs.encoded.offsets].astype(np.int64)
    if "sentences" in fields:
        offsets_of["sentences"] = np.concatenate([[0], np.cumsum(pairs.sentence_counts())]).astype(
            np.int64
        )
    arrays = FeatureArrays(cls=_allocate(out_dir, "cls", (n, size), np.float32))
    if "mean" in fields:
        arrays.mean = _allocate(out_dir, "mean", (n, size), np.float32)
    for name, offsets in offsets_of.items():
        setattr(arrays, name, _allocate(out_dir, name, (int(offsets[-1]), size), np.float32))
        setattr(arrays, _RAGGED[name], offsets)

    encoder.eval().to(device)
    pad_id = int(tokenizer.pad_token_id or 0)
    batches = length_sorted_batches(pairs.lengths, batch_size)
    status = Status("encode", len(pairs.lengths), unit="pairs", rate_unit="pairs", enabled=progress)
    arrays.encode_seconds, arrays.timed_seconds = 0.0, 0.0 if timed is not None else None
    with torch.inference_mode():
        for rows in tqdm(
            batches,
            desc="encode",
            unit="batch",
            disable=not progress or not batches,
            mininterval=1.0,
        ):
            started = time.perf_counter()
            inputs = pairs.encoded.pad(rows, pad_id, 8 if device.type == "cuda" else None)
            width = inputs["input_ids"].shape[1]
            inputs = {k: v.to(device) for k, v in inputs.items()}
            hidden = encoder(
                **encoder_inputs(
                    encoder,
                    inputs["input_ids"],
                    inputs["attention_mask"],
                    inputs.get("token_type_ids"),
                )
            ).last_hidden_state
            out = segment_features(
                hidden.float(), torch.from_numpy(pad_segments(pairs, rows, width))
            )
            out = {k: v.cpu().numpy() for k, v in out.items()}
            arrays.cls[rows] = out["cls"]
            if arrays.mean is not None:
                arrays.mean[rows] = _token_mean(hidden.float(), inputs["attention_mask"])
            status.update(len(rows))
            for name, offsets in offsets_of.items():
                target = getattr(arrays, name)
                for k, row in enumerate(rows.tolist()):
                    count = offsets[row + 1] - offsets[row]
                    target[offsets[row] : offsets[row + 1]] = out[name][k, :count]
            seconds = time.perf_counter() - started
            arrays.encode_seconds += seconds
            if timed is not None:
                arrays.timed_seconds += seconds * float(np.count_nonzero(timed[rows])) / len(rows)
    status.close()
    return arrays


def write_frozen_cache(
    directory: str | Path,
    keys: Sequence[tuple[str, str]],
    texts: Sequence[tuple[str, str]],
    encoder: torch.nn.Module,
    tokenizer: Any,
    *,
    encoder_name: str,
    max_length: int,
    fields: Sequence[str],
    batch_size: int = 64,
    device: torch.device | str = "cpu",
    progress: bool = True,
    timed: Sequence[bool] | None = None,
) -> dict[str, Any]:
    """Encode the pairs ``keys`` (texts ``texts``) once and write the cache ``directory`` atomically.

    Args:
        directory: the cache directory (replaced as a whole).
        keys: distinct ``(qid, pid)`` pairs; ``texts[i]`` is pair ``i``'s (query, passage).
        encoder, tokenizer: the frozen encoder.
        encoder_name: ``training.encoder`` (recorded; a model trained on another encoder
            refuses the cache).
        max_length, fields, batch_size, device, progress: see :func:`extract_features`.
        timed: which pairs' share of the encoder time to record (``timed_pairs``,
            ``timed_encode_seconds``): a fold's training pairs, whose encoder pass is part of a
            lite model's first epoch.

    Returns:
        The ``meta.json`` written (its ``encode_seconds``: the encoder's time over all pairs).

    Example:
        >>> import tempfile
        >>> from reranklab.models.tiny import tiny_encoder
        >>> encoder, tokenizer = tiny_encoder(["who", "me", "you"])
        >>> meta = write_frozen_cache(Path(tempfile.mkdtemp()) / "fold0", [("q1", "p1"), ("q1", "p2")],
        ...     [("who", "Me. You."), ("who", "you")], encoder, tokenizer, encoder_name="tiny",
        ...     max_length=32, fields=("cls", "sentences"), progress=False)
        >>> meta["pairs"], meta["fields"], meta["sentence_vectors"]
        (2, ['cls', 'sentences'], 3)
    """
    if len(set(keys)) != len(keys) or len(keys) != len(texts):
        raise ValueError("keys must be distinct and match texts one to one")
    directory = Path(directory)
    with atomic_directory(directory) as tmp:
        arrays = extract_features(
            encoder,
            tokenizer,
            texts,
            max_length,
            fields,
            batch_size=batch_size,
            device=device,
            out_dir=tmp,
            progress=progress,
            timed=None if timed is None else np.asarray(timed, dtype=bool),
        )
        for name in _RAGGED.values():
            offsets = getattr(arrays, name)
            if offsets is not None:
                np.save(tmp / f"{name}.npy", offsets)
        for name in FIELDS:
            array = getattr(arrays, name)
            if isinstance(array, np.memmap):
                array.flush()
        pq.write_table(
            pa.table({"qid": [q for q, _ in keys], "pid": [p for _, p in keys]}), tmp / KEYS_FILE
        )
        meta = {
            "format_version": FORMAT_VERSION,
            "encoder": encoder_name,
            "max_length": int(max_length),
            "fields": list(arrays.fields),
            "hidden_size": int(arrays.cls.shape[1]),
            "pairs": len(keys),
            "query_vectors": int(arrays.query_offsets[-1])
            if arrays.query_offsets is not None
            else None,
            "sentence_vectors": int(arrays.sentence_offsets[-1])
            if arrays.sentence_offsets is not None
            else None,
            "dtype": "float32",
            "encode_seconds": arrays.encode_seconds,
        }
        if timed is not None:
            meta["timed_pairs"] = int(np.count_nonzero(timed))
            meta["timed_encode_seconds"] = arrays.timed_seconds
        write_json(tmp / META_FILE, meta)
    log.info(
        "feature cache %s: %d pairs, fields %s", directory, len(keys), ", ".join(meta["fields"])
    )
    return meta


@dataclass
class FrozenCache:
    """An opened cache directory: its keys, memory-mapped arrays and ``meta.json``."""

    directory: Path
    meta: dict[str, Any]
    position: dict[tuple[str, str], int]
    arrays: FeatureArrays


def open_frozen_cache(directory: str | Path) -> FrozenCache:
    """Open a cache written by :func:`write_frozen_cache` (arrays memory-mapped, read-only).

    Raises:
        FormatError: a file is missing or does not fit ``meta.json``.
    """
    directory = Path(directory)
    meta_path = directory / META_FILE
    if not meta_path.is_file():
        raise FormatError(
            meta_path, None, "not a feature cache (meta.json is missing; run `reranklab encode`)"
        )
    meta = read_json(meta_path)
    if meta.get("format_version") != FORMAT_VERSION:
        raise FormatError(
            meta_path,
            None,
            f"cache format {meta.get('format_version')!r}, this reranklab reads {FORMAT_VERSION}",
        )

    def load(name: str) -> np.ndarray:
        path = directory / f"{name}.npy"
        try:
            return np.load(path, mmap_mode="r")
        except (OSError, ValueError) as exc:
            raise FormatError(path, None, f"cannot read the cached array ({exc})") from None

    try:
        table = pq.read_table(directory / KEYS_FILE)
    except (OSError, pa.ArrowInvalid) as exc:
        raise FormatError(
            directory / KEYS_FILE, None, f"cannot read the cached pair keys ({exc})"
        ) from None
    keys = list(zip(table.column("qid").to_pylist(), table.column("pid").to_pylist(), strict=True))
    arrays = FeatureArrays(cls=load("cls"))
    if "mean" in meta.get("fields", []):
        arrays.mean = load("mean")
    for name, offsets in _RAGGED.items():
        if name in meta.get("fields", []):
            setattr(arrays, name, load(name))
            setattr(arrays, offsets, np.asarray(load(offsets)))
    if len(arrays) != len(keys) or len(keys) != meta.get("pairs"):
        raise FormatError(
            directory / KEYS_FILE,
            None,
            f"{len(keys)} keys for {len(arrays)} cached rows (meta.json says {meta.get('pairs')})",
        )
    return FrozenCache(directory, meta, {key: i for i, key in enumerate(keys)}, arrays)


def check_frozen_cache(
    cache: FrozenCache, encoder_name: str, max_length: int, fields: Iterable[str]
) -> None:
    """Refuse a cache made with another encoder, max length or fewer fields (ConfigError)."""
    meta, where = cache.meta, cache.directory / META_FILE
    if meta.get("encoder") != encoder_name:
        raise ConfigError(
            f"{where}: cached features of encoder {meta.get('encoder')!r}, the model uses {encoder_name!r} (re-run `reranklab encode`)"
        )
    if int(meta.get("max_length", -1)) != int(max_length):
        raise ConfigError(
            f"{where}: cached at max length {meta.get('max_length')}, the model uses {max_length} (re-run `reranklab encode`)"
        )
    missing = sorted(set(fields) - set(meta.get("fields", [])))
    if missing:
        raise ConfigError(
            f"{where}: the cache lacks field(s) {', '.join(missing)} (re-run `reranklab encode`)"
        )


@dataclass
class FrozenFeatureStore:
    """The :class:`~reranklab.features.types.PairFeatures` of the lite variants.

    Rows live in one or more :class:`FeatureArrays` parts (the memory-mapped cache, and the
    pairs that were missing from it, encoded at start-up); ``batch(rows)`` gathers and pads:
    ``cls [B, H]``, and for the stored ragged fields ``query [B, Tq, H]``, ``query_mask``,
    ``sentences [B, S, H]``, ``sentence_mask`` (``Tq, S >= 1``; padded vectors are zero).

    Example:
        >>> arrays = FeatureArrays(np.ones((2, 4), np.float32), sentences=np.ones((3, 4), np.float32),
        ...     sentence_offsets=np.array([0, 2, 3]))
        >>> store = FrozenFeatureStore([("q1", "p1"), ("q1", "p2")], [(arrays, [0, 1])], ("cls", "sentences"))
        >>> batch = store.batch([1, 0])
        >>> batch["cls"].shape, batch["sentences"].shape, batch["sentence_mask"].tolist()
        (torch.Size([2, 4]), torch.Size([2, 2, 4]), [[True, False], [True, True]])
    """

    keys: list[tuple[str, str]]
    parts: list[tuple[FeatureArrays, list[int]]]
    fields: tuple[str, ...]
    counts: dict[str, int] = field(default_factory=dict)
    # the encoder's seconds over these keys: the cache's timed share (the encode rule times its
    # fold's training pairs) plus the pairs encoded now; None where the cache timed none
    encoder_seconds: float | None = None

    def __post_init__(self) -> None:
        self.position = {key: i for i, key in enumerate(self.keys)}
        # Where each row is: (part, row in that part).
        self._part = np.zeros(len(self.keys), dtype=np.int64)
        self._row = np.zeros(len(self.keys), dtype=np.int64)
        start = 0
        for p, (_, rows) in enumerate(self.parts):
            self._part[start : start + len(rows)] = p
            self._row[start : start + len(rows)] = rows
            start += len(rows)
        if start != len(self.keys):
            raise ValueError("the parts must hold one row per key, in key order")

    def __len__(self) -> int:
        return len(self.keys)

    def __getitem__(self, key: tuple[str, str]) -> int:
        return self.position[key]

    @property
    def lengths(self) -> np.ndarray:
        """A pair's cost for the head: its query plus sentence vectors (1 with [CLS] only)."""
        out = np.ones(len(self), dtype=np.int64)
        ragged = [name for name in _RAGGED if name in self.fields]
        if ragged:
            out[:] = 0
            for p, (arrays, _) in enumerate(self.parts):
                mine = self._part == p
                for name in ragged:
                    out[mine] += arrays.counts(name)[self._row[mine]]
        return out

    def batch(
        self, rows: Sequence[int] | np.ndarray, pad_to_multiple_of: int | None = None
    ) -> dict[str, Any]:
        rows = np.asarray(rows, dtype=np.int64)
        located = [
            (self.parts[part][0], int(row))
            for part, row in zip(self._part[rows].tolist(), self._row[rows].tolist(), strict=True)
        ]
        size = located[0][0].cls.shape[1] if located else 0
        out: dict[str, Any] = {
            "cls": torch.from_numpy(
                np.stack([np.asarray(a.cls[r], dtype=np.float32) for a, r in located])
                if located
                else np.zeros((0, size), np.float32)
            )
        }
        if "mean" in self.fields:
            out["mean"] = torch.from_numpy(
                np.stack([np.asarray(a.mean[r], dtype=np.float32) for a, r in located])
                if located
                else np.zeros((0, size), np.float32)
            )
        for name in _RAGGED:
            if name not in self.fields:
                continue
            pieces = [a.ragged(name, r) for a, r in located]
            width = max([len(p) for p in pieces] + [1])
            values = np.zeros((len(rows), width, size), dtype=np.float32)
            mask = np.zeros((len(rows), width), dtype=bool)
            for k, piece in enumerate(pieces):
                values[k, : len(piece)] = piece
                mask[k, : len(piece)] = True
            out[name] = torch.from_numpy(values)
            out["query_mask" if name == "query" else "sentence_mask"] = torch.from_numpy(mask)
        return out

    def summary(self) -> dict[str, Any]:
        return dict(self.counts)


def _encoder_seconds(
    cache: FrozenCache | None, cached: int, encoded_now: FeatureArrays | None
) -> float | None:
    """The encoder's time over a store's keys, where the cache timed exactly those it holds of
    them (a fold's training pairs, ``timed_pairs``), plus the pairs encoded now."""
    now = (encoded_now.encode_seconds or 0.0) if encoded_now is not None else 0.0
    if cache is None or not cached:
        return now if encoded_now is not None else None
    if cache.meta.get("timed_pairs") != cached:  # the cache timed other pairs (or none)
        return None
    return float(cache.meta["timed_encode_seconds"]) + now


def build_frozen_store(
    keys: Sequence[tuple[str, str]],
    texts: Sequence[tuple[str, str]],
    *,
    fields: Sequence[str],
    encoder_name: str,
    max_length: int,
    cache_dir: str | Path | None,
    load_encoder: Any,
    batch_size: int = 64,
    device: torch.device | str = "cpu",
    progress: bool = True,
) -> FrozenFeatureStore:
    """Features of ``keys``: rows of the cache where it has them, the rest encoded now, once.

    Args:
        keys: distinct ``(qid, pid)`` pairs; ``texts[i]`` is pair ``i``'s (query, passage).
        fields: what the head reads.
        encoder_name, max_length: what the cache must have been made with.
        cache_dir: a cache of ``reranklab encode``, or ``None``.
        load_encoder: ``() -> (encoder, tokenizer)``, called only when some pair is missing.
        batch_size, device, progress: for encoding the missing pairs.

    Example:
        >>> from reranklab.models.tiny import tiny_encoder
        >>> store = build_frozen_store([("q1", "p1")], [("who", "me")], fields=("cls",), encoder_name="tiny",
        ...     max_length=32, cache_dir=None, load_encoder=lambda: tiny_encoder(["who", "me"]), progress=False)
        >>> store.summary(), store.batch([0])["cls"].shape
        ({'pairs_from_cache': 0, 'pairs_encoded': 1}, torch.Size([1, 32]))
    """
    keys = list(keys)
    cached_rows: list[int] = []
    missing: list[int] = []
    cache = None
    if cache_dir is not None:
        cache = open_frozen_cache(cache_dir)
        check_frozen_cache(cache, encoder_name, max_length, fields)
        for i, key in enumerate(keys):
            row = cache.position.get(key)
            if row is None:
                missing.append(i)
            else:
                cached_rows.append(row)
    else:
        missing = list(range(len(keys)))
    parts: list[tuple[FeatureArrays, list[int]]] = []
    order: list[tuple[str, str]] = []
    if cache is not None and cached_rows:
        parts.append((cache.arrays, cached_rows))
        order += [key for key in keys if key in cache.position]
    if missing:
        if cache is not None:
            log.warning(
                "%d of %d pairs are not in the feature cache %s: encoding them now",
                len(missing),
                len(keys),
                cache_dir,
            )
        encoder, tokenizer = load_encoder()
        arrays = extract_features(
            encoder,
            tokenizer,
            [texts[i] for i in missing],
            max_length,
            fields,
            batch_size=batch_size,
            device=device,
            progress=progress,
        )
        parts.append((arrays, list(range(len(missing)))))
        order += [keys[i] for i in missing]
    counts = {"pairs_from_cache": len(cached_rows), "pairs_encoded": len(missing)}
    store = FrozenFeatureStore(order, parts, tuple(fields), counts)
    store.encoder_seconds = _encoder_seconds(
        cache, len(cached_rows), parts[-1][0] if missing else None
    )
    log.info(
        "features of %d pairs: %d from the cache, %d encoded now",
        len(keys),
        len(cached_rows),
        len(missing),
    )
    return store
