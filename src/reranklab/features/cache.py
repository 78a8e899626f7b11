"""A content-addressed cache of tokenised (query, passage) pairs, shared by the model steps.

Every ``train`` and ``rerank`` job of a (dataset, max length, tokenizer) tokenises pairs that
other jobs of that cell have already tokenised: the folds' training examples overlap each
other's test candidates, and every variant of a cell trains on the same pairs. The cache keeps
each pair's word pieces once, as flat arrays memory-mapped from::

    <root>/<dataset>/<tokenizer fingerprint>-L<max length>[-Q<query max length>]/
        meta.json                       # what the fingerprint stands for (for people)
        shard-<digest>/keys.npy         # uint64 [n, 2]: blake2b-128 of (query text, passage text)
                      /input_ids.npy    # int32, all pairs concatenated (as EncodedPairs)
                      /token_type_ids.npy  # int8 (absent for tokenizers without segments)
                      /offsets.npy      # int64 [n + 1]
                      /query_truncated.npy # bool [n]: the pair needed longest_first
                      /query_cut.npy    # bool [n]: the query was cut to query_max_length

A job looks its pairs up by the hash of their *texts*, tokenises only the misses, and adds
them as one new shard (written to a temporary directory and renamed into place, so readers
never see half a shard; two jobs writing the same shard at once are harmless). Many shards are
merged into one now and then.

The model steps open a :func:`feature_cache_scope` (``training.feature_cache`` and the
dataset) around the variant's featurizer; :func:`reranklab.features.featurize.encode_id_pairs`
uses the scope's cache when there is one, so every variant that tokenises through it (the
default featurizer, text transforms such as marking) is cached without knowing it, and the
featurize hook contract is unchanged.

Why a cache inside the step and not a Snakemake rule output: the pairs a job needs depend on
its fold and variant, so a rule would have to tokenise the union of everything up front (every
candidate and every judged passage) and every model job would depend on it; any change to the
corpus or queries would invalidate all of it at once. Keyed by content, the cache cannot be
stale: a changed passage text, tokenizer (vocabulary, lower-casing, special tokens) or max
length is a different key or directory, and :data:`FEATURES_VERSION` is bumped whenever
:mod:`reranklab.features.tokenize` changes how pairs are cut. It is never declared to
Snakemake or DVC, so it cannot make a job re-run ("a second ``snakemake`` run does nothing"
holds), and deleting it only costs the tokenisation again (results are bit-identical).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import shutil
from collections.abc import Iterator, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from reranklab.errors import ReranklabError
from reranklab.features.tokenize import encode_fitted, encode_text_pairs, fit_queries
from reranklab.features.types import EncodedPairs
from reranklab.io.atomic import temporary_directory
from reranklab.io.json_io import write_json

log = logging.getLogger(__name__)

FEATURES_VERSION = 1  # bump when tokenize.py changes how a pair becomes word pieces
MERGE_ABOVE = 16  # merge the shards into one when a write leaves more than this many
ARRAYS = ("keys", "input_ids", "token_type_ids", "offsets", "query_truncated", "query_cut")


def pair_keys(pairs: Sequence[tuple[str, str]]) -> np.ndarray:
    """128-bit content keys of ``(query text, passage text)`` pairs, ``uint64 [n, 2]``.

    The query's length is hashed first, so ("ab", "c") and ("a", "bc") differ.

    Example:
        >>> pair_keys([("ab", "c"), ("a", "bc")]).shape
        (2, 2)
        >>> bool((pair_keys([("ab", "c")]) == pair_keys([("a", "bc")])).all())
        False
    """
    digests = []
    for query, passage in pairs:
        q = query.encode("utf-8")
        digests.append(
            hashlib.blake2b(
                len(q).to_bytes(8, "little") + q + passage.encode("utf-8"), digest_size=16
            ).digest()
        )
    return np.frombuffer(b"".join(digests), dtype=np.uint64).reshape(len(pairs), 2).copy()


def tokenizer_fingerprint(tokenizer: Any) -> str:
    """A short hash of everything in ``tokenizer`` that decides the word pieces of a pair.

    For fast tokenizers it is the serialised ``tokenizers`` pipeline (vocabulary, normaliser
    with its lower-casing, pre-tokeniser, model, post-processor with the special tokens)
    without the truncation/padding state that each call sets; for slow ones the vocabulary
    and the init settings. The tokenizer's class and :data:`FEATURES_VERSION` are part of it.

    Example:
        >>> from reranklab.models.tiny import tiny_tokenizer
        >>> same = tokenizer_fingerprint(tiny_tokenizer(["cat"])) == tokenizer_fingerprint(tiny_tokenizer(["cat"]))
        >>> other = tokenizer_fingerprint(tiny_tokenizer(["cat"])) == tokenizer_fingerprint(tiny_tokenizer(["dog"]))
        >>> same, other, len(tokenizer_fingerprint(tiny_tokenizer(["cat"])))
        (True, False, 16)
    """
    digest = hashlib.blake2b(digest_size=8)
    digest.update(f"v{FEATURES_VERSION}|{type(tokenizer).__name__}|".encode())
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is not None:
        state = json.loads(backend.to_str())
        # Set by every call (truncation=..., max_length=...): state of the last call, not identity.
        state.pop("truncation", None)
        state.pop("padding", None)
        digest.update(json.dumps(state, sort_keys=True).encode("utf-8"))
    else:
        digest.update(json.dumps(sorted(tokenizer.get_vocab().items())).encode("utf-8"))
        settings = {
            k: v
            for k, v in (getattr(tokenizer, "init_kwargs", None) or {}).items()
            if isinstance(v, str | int | float | bool) and "file" not in k and "path" not in k
        }
        digest.update(json.dumps(settings, sort_keys=True).encode("utf-8"))
    digest.update(
        json.dumps(
            getattr(tokenizer, "special_tokens_map", {}), sort_keys=True, default=str
        ).encode("utf-8")
    )
    return digest.hexdigest()


@dataclass
class CacheStats:
    """Pairs found in the cache (``hits``) and tokenised (``misses``), summed over calls."""

    hits: int = 0
    misses: int = 0

    def add(self, other: CacheStats) -> None:
        self.hits += other.hits
        self.misses += other.misses


@dataclass
class _Shard:
    keys: np.ndarray
    input_ids: np.ndarray
    token_type_ids: np.ndarray | None
    offsets: np.ndarray
    query_truncated: np.ndarray
    query_cut: np.ndarray


def _ranges(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """``concatenate([arange(s, s + l) for s, l in zip(starts, lengths)])``, vectorised."""
    total = int(lengths.sum())
    if total == 0:
        return np.empty(0, dtype=np.int64)
    first = np.cumsum(lengths) - lengths
    return np.repeat(np.asarray(starts, dtype=np.int64) - first, lengths) + np.arange(
        total, dtype=np.int64
    )


def _lookup(shards: Sequence[_Shard], keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each key: the shard that holds it and its row there (``-1``, ``0`` when none does).

    Vectorised (sorted first halves, ``searchsorted``, then both halves compared), so millions
    of pairs (MS MARCO) cost memory for arrays, not for Python objects. Two different keys
    sharing the first 64 bits (odds ~2^-64 per pair) only make the pair a miss: it is then
    tokenised again, never confused.
    """
    n = len(keys)
    source = np.full(n, -1, dtype=np.int64)
    row = np.zeros(n, dtype=np.int64)
    if not shards or n == 0:
        return source, row
    stored = np.concatenate([np.asarray(s.keys) for s in shards])
    if len(stored) == 0:
        return source, row
    shard_of = np.concatenate(
        [np.full(len(s.keys), i, dtype=np.int64) for i, s in enumerate(shards)]
    )
    row_of = np.concatenate([np.arange(len(s.keys), dtype=np.int64) for s in shards])
    order = np.argsort(stored[:, 0], kind="stable")
    at = np.minimum(np.searchsorted(stored[order, 0], keys[:, 0]), len(order) - 1)
    candidate = order[at]
    found = (stored[candidate, 0] == keys[:, 0]) & (stored[candidate, 1] == keys[:, 1])
    source[found] = shard_of[candidate[found]]
    row[found] = row_of[candidate[found]]
    return source, row


class FeatureCache:
    """The tokenised pairs of one (tokenizer, max length, query max length) in one directory.

    Args:
        directory: ``<root>/<dataset>/<fingerprint>-L<max length>[-Q<query max length>]``
            (:func:`open_feature_cache` makes the name).
        max_length: the length pairs are cut to.
        query_max_length: the length queries are cut to first (``None`` = whole).

    Example:
        >>> import tempfile
        >>> from reranklab.models.tiny import tiny_tokenizer
        >>> tokenizer = tiny_tokenizer(["what", "is", "a", "cat", "an", "animal"])
        >>> cache = open_feature_cache(tempfile.mkdtemp(), "wikiqa", tokenizer, 256)
        >>> encoded = cache.encode(tokenizer, [("what is a cat", "a cat is an animal")], progress=False)
        >>> cache.last.hits, cache.last.misses
        (0, 1)
        >>> encoded = cache.encode(tokenizer, [("what is a cat", "a cat is an animal")], progress=False)
        >>> cache.last.hits, cache.last.misses
        (1, 0)
    """

    def __init__(
        self, directory: str | Path, max_length: int, query_max_length: int | None = None
    ) -> None:
        self.directory = Path(directory)
        self.max_length = int(max_length)
        self.query_max_length = int(query_max_length) if query_max_length else None
        self.last = CacheStats()

    def shard_dirs(self) -> list[Path]:
        """The complete shards (temporary directories are not listed), by name."""
        if not self.directory.is_dir():
            return []
        return sorted(
            p for p in self.directory.iterdir() if p.name.startswith("shard-") and p.is_dir()
        )

    def _load(self, path: Path) -> _Shard | None:
        try:
            arrays: dict[str, np.ndarray | None] = {}
            for name in ARRAYS:
                file = path / f"{name}.npy"
                if name == "token_type_ids" and not file.exists():
                    arrays[name] = None
                    continue
                # Memory-mapped: only the pages of the pairs a job needs are read.
                arrays[name] = np.load(file, mmap_mode="r")
            shard = _Shard(**arrays)
            n = len(shard.keys)
            if (
                len(shard.offsets) != n + 1
                or int(shard.offsets[-1]) != len(shard.input_ids)
                or len(shard.query_truncated) != n
                or len(shard.query_cut) != n
            ):
                raise ValueError("its arrays do not match")
            return shard
        except (OSError, ValueError) as exc:
            # Merged away by another job after we listed it, or damaged by hand: re-tokenise instead.
            log.warning("feature cache: ignoring shard %s (%s)", path, exc)
            return None

    def _write(self, shard: _Shard) -> Path:
        self.directory.mkdir(parents=True, exist_ok=True)
        # Content-addressed: the same pairs always make the same shard name.
        name = (
            "shard-"
            + hashlib.blake2b(np.ascontiguousarray(shard.keys).tobytes(), digest_size=8).hexdigest()
        )
        final = self.directory / name
        if final.is_dir():
            return final
        tmp = temporary_directory(final)
        try:
            for array_name in ARRAYS:
                value = getattr(shard, array_name)
                if value is not None:
                    try:
                        np.save(tmp / f"{array_name}.npy", np.ascontiguousarray(value))
                    except OSError as exc:
                        # A full disk: numpy says "3000 requested and 2032 written", no file.
                        raise ReranklabError(
                            f"{final / array_name}.npy: the feature cache cannot be written"
                            f" ({exc}); free space under {self.directory}, or set"
                            " training.feature_cache: null"
                        ) from None
            try:
                os.replace(tmp, final)
            except OSError:
                # Another job renamed the same shard (same keys, same content) into place first.
                if not final.is_dir():
                    raise
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        return final

    def _write_meta(self, tokenizer: Any) -> None:
        meta_path = self.directory / "meta.json"
        if meta_path.exists():
            return
        write_json(
            meta_path,
            {
                "features_version": FEATURES_VERSION,
                "tokenizer": type(tokenizer).__name__,
                "name_or_path": str(getattr(tokenizer, "name_or_path", "")),
                "fingerprint": tokenizer_fingerprint(tokenizer),
                "max_length": self.max_length,
                "query_max_length": self.query_max_length,
                "truncation": "only_second (longest_first when the query alone fills max_length)",
            },
        )

    def encode(
        self,
        tokenizer: Any,
        pairs: Sequence[tuple[str, str]],
        *,
        desc: str = "tokenise",
        progress: bool = True,
    ) -> EncodedPairs:
        """``encode_text_pairs(tokenizer, pairs, max_length, query_max_length=...)``, tokenising only what is not cached.

        Args:
            tokenizer: the tokenizer whose fingerprint names this cache.
            pairs: ``(query text, passage text)``, in the order of the result.
            desc: progress bar label (of the tokenisation of the misses).
            progress: show a tqdm bar.

        Returns:
            What :func:`~reranklab.features.tokenize.encode_text_pairs` returns, bit for bit.
            ``self.last`` says how many pairs were found and how many tokenised.
        """
        keys = pair_keys(pairs)
        shards = [s for s in (self._load(p) for p in self.shard_dirs()) if s is not None]
        source, row = _lookup(shards, keys)
        missing = np.flatnonzero(source < 0)
        if len(missing):
            # Each distinct missing pair once (a job may list a pair twice), in key order, so
            # the same misses always make the same shard.
            _, first, inverse = np.unique(
                keys[missing], axis=0, return_index=True, return_inverse=True
            )
            todo = missing[first]
            texts = [pairs[i] for i in todo.tolist()]
            # The per-pair flags are kept, so a gathered subset counts its truncations right.
            fitted = fit_queries(tokenizer, texts, self.max_length, self.query_max_length)
            fresh = encode_fitted(tokenizer, fitted, self.max_length, desc=desc, progress=progress)
            shard = _Shard(
                keys[todo],
                fresh.input_ids,
                fresh.token_type_ids,
                fresh.offsets,
                fitted.long_query,
                fitted.query_cut,
            )
            self._write_meta(tokenizer)
            self._write(shard)
            shards.append(shard)
            source[missing] = len(shards) - 1
            row[missing] = np.asarray(inverse).reshape(-1)
            self._maybe_merge()
        self.last = CacheStats(hits=int(len(pairs) - len(missing)), misses=int(len(missing)))
        log.info(
            "feature cache %s: %d pairs found, %d tokenised",
            self.directory,
            self.last.hits,
            self.last.misses,
        )
        return self._gather(shards, source, row)

    def _gather(self, shards: list[_Shard], source: np.ndarray, row: np.ndarray) -> EncodedPairs:
        """Rows ``row[i]`` of shards ``source[i]``, concatenated in order, as EncodedPairs."""
        n = len(source)
        lengths = np.zeros(n, dtype=np.int64)
        truncated = np.zeros(n, dtype=bool)
        query_cut = np.zeros(n, dtype=bool)
        mine = [np.flatnonzero(source == s) for s in range(len(shards))]
        for shard, rows_out in zip(shards, mine, strict=True):
            if len(rows_out):
                rows = row[rows_out]
                offsets = np.asarray(shard.offsets)
                lengths[rows_out] = offsets[rows + 1] - offsets[rows]
                truncated[rows_out] = np.asarray(shard.query_truncated)[rows]
                query_cut[rows_out] = np.asarray(shard.query_cut)[rows]
        offsets = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        used = [s for s, rows_out in zip(shards, mine, strict=True) if len(rows_out)]
        has_types = (
            all(s.token_type_ids is not None for s in used)
            if used
            else (not shards or shards[0].token_type_ids is not None)
        )
        input_ids = np.empty(int(offsets[-1]), dtype=np.int32)
        token_types = np.empty(int(offsets[-1]), dtype=np.int8) if has_types else None
        for shard, rows_out in zip(shards, mine, strict=True):
            if not len(rows_out):
                continue
            src = _ranges(np.asarray(shard.offsets)[row[rows_out]], lengths[rows_out])
            dst = _ranges(offsets[rows_out], lengths[rows_out])
            input_ids[dst] = shard.input_ids[src]
            if token_types is not None:
                token_types[dst] = shard.token_type_ids[src]
        return EncodedPairs(
            input_ids,
            token_types,
            offsets,
            self.max_length,
            int(truncated.sum()),
            int(query_cut.sum()),
        )

    def _maybe_merge(self) -> None:
        paths = self.shard_dirs()
        if len(paths) <= MERGE_ABOVE:
            return
        loaded = [(p, s) for p, s in ((p, self._load(p)) for p in paths) if s is not None]
        shards = [s for _, s in loaded]
        keys = np.concatenate([s.keys for s in shards])
        _, first = np.unique(keys, axis=0, return_index=True)
        first.sort()
        source = np.concatenate([np.full(len(s.keys), i) for i, s in enumerate(shards)])[first]
        row = np.concatenate([np.arange(len(s.keys)) for s in shards])[first]
        merged = self._gather(shards, source, row)
        flags = {
            name: np.concatenate([np.asarray(getattr(s, name)) for s in shards])[first]
            for name in ("query_truncated", "query_cut")
        }
        target = self._write(
            _Shard(keys[first], merged.input_ids, merged.token_type_ids, merged.offsets, **flags)
        )
        for path, _ in loaded:
            if path != target:
                # A job that already mapped it keeps its mapping (POSIX); later ones list again.
                with contextlib.suppress(OSError):
                    shutil.rmtree(path)
        log.info(
            "feature cache: merged %d shards into %s (%d pairs)",
            len(loaded),
            target.name,
            len(first),
        )


def cache_dir_name(tokenizer: Any, max_length: int, query_max_length: int | None = None) -> str:
    """``<fingerprint>-L<max length>`` (``-Q<query max length>`` when queries are cut)."""
    name = f"{tokenizer_fingerprint(tokenizer)}-L{int(max_length)}"
    return f"{name}-Q{int(query_max_length)}" if query_max_length else name


def open_feature_cache(
    root: str | Path | None,
    dataset: str,
    tokenizer: Any,
    max_length: int,
    query_max_length: int | None = None,
) -> FeatureCache | None:
    """The cache of ``dataset``'s pairs for ``tokenizer`` at ``max_length``; ``None`` without ``root``.

    Args:
        root: ``training.feature_cache`` (e.g. ``results/features``); ``None`` or "" = no cache.
        dataset: the dataset name (one folder each, so a dataset's cache can be deleted alone).
        tokenizer: the model's tokenizer (its :func:`tokenizer_fingerprint` names the folder).
        max_length, query_max_length: how pairs are cut.

    Example:
        >>> from reranklab.models.tiny import tiny_tokenizer
        >>> tokenizer = tiny_tokenizer(["cat"])
        >>> cache = open_feature_cache("results/features", "wikiqa", tokenizer, 256)
        >>> cache.directory == Path(f"results/features/wikiqa/{tokenizer_fingerprint(tokenizer)}-L256")
        True
        >>> open_feature_cache(None, "wikiqa", tokenizer, 256) is None
        True
    """
    if not root:
        return None
    return FeatureCache(
        Path(root) / str(dataset) / cache_dir_name(tokenizer, max_length, query_max_length),
        max_length,
        query_max_length,
    )


@dataclass
class CacheScope:
    """Where the model step's pairs are cached, and what the lookups found (for ``train_stats.json``)."""

    directory: Path | None
    stats: CacheStats = field(default_factory=CacheStats)

    def summary(self) -> dict[str, Any]:
        return {
            "feature_cache": str(self.directory) if self.directory else None,
            "feature_cache_hits": self.stats.hits,
            "feature_cache_misses": self.stats.misses,
        }


_SCOPE: ContextVar[CacheScope | None] = ContextVar("reranklab_feature_cache", default=None)


@contextlib.contextmanager
def feature_cache_scope(root: str | Path | None, dataset: str | None) -> Iterator[CacheScope]:
    """Cache the pairs tokenised inside the ``with`` block under ``<root>/<dataset>/``.

    Args:
        root: ``training.feature_cache``; ``None`` or "" = no cache (pairs are tokenised as usual).
        dataset: the cell's dataset.

    Example:
        >>> import tempfile
        >>> from reranklab.models.tiny import tiny_tokenizer
        >>> tokenizer, root = tiny_tokenizer(["who", "me"]), tempfile.mkdtemp()
        >>> for _ in range(2):
        ...     with feature_cache_scope(root, "wikiqa") as scope:
        ...         encoded = encode_cached(tokenizer, [("who", "me")], 16, progress=False)
        >>> scope.stats.hits, scope.stats.misses, scope.summary()["feature_cache"] == f"{root}/wikiqa"
        (1, 0, True)
    """
    directory = Path(root) / str(dataset or "default") if root else None
    scope = CacheScope(directory)
    token = _SCOPE.set(scope)
    try:
        yield scope
    finally:
        _SCOPE.reset(token)


def encode_cached(
    tokenizer: Any,
    pairs: Sequence[tuple[str, str]],
    max_length: int,
    *,
    query_max_length: int | None = None,
    desc: str = "tokenise",
    progress: bool = True,
) -> EncodedPairs:
    """:func:`~reranklab.features.tokenize.encode_text_pairs` through the current scope's cache, if any.

    What :func:`~reranklab.features.featurize.encode_id_pairs` calls; outside a
    :func:`feature_cache_scope` (or with no root) it just tokenises.
    """
    scope = _SCOPE.get()
    if scope is None or scope.directory is None:
        return encode_text_pairs(
            tokenizer,
            pairs,
            max_length,
            query_max_length=query_max_length,
            desc=desc,
            progress=progress,
        )
    cache = FeatureCache(
        scope.directory / cache_dir_name(tokenizer, max_length, query_max_length),
        max_length,
        query_max_length,
    )
    encoded = cache.encode(tokenizer, pairs, desc=desc, progress=progress)
    scope.stats.add(cache.last)
    return encoded
