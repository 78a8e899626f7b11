"""Checkpoint and resume a training job: atomic, checksummed, pruned, tied to its inputs.

A :class:`FileCheckpointer` writes a checkpoint every ``training.checkpoint_every`` optimiser
steps and at the end of every epoch (not after the last step: the model itself is saved
then). Each checkpoint is a directory::

    <checkpoint dir>/step-00000120/state.pt       model, loss, optimiser, scheduler, grad scaler,
                                                  RNG states (Python, NumPy, torch, CUDA),
                                                  position (epoch, batch), the losses so far
    <checkpoint dir>/step-00000120/manifest.json  format, fingerprint and its parts, position,
                                                  size and sha256 of state.pt
    <checkpoint dir>/digests.json                 sha256 of the job's input files, by path,
                                                  size, mtime, ctime and inode (see below)

It is written into a hidden temporary directory that is renamed into place only when complete,
so a job killed while writing leaves no ``step-*`` directory behind; a checkpoint whose
manifest is missing or whose ``state.pt`` does not match its size and sha256 is skipped (with
a warning) in favour of the previous one. A checkpoint that cannot be written (disk full, I/O
error) is a warning, not the end of the job: the previous checkpoint stays and training goes
on. Only the last ``training.keep_checkpoints`` are kept.

The fingerprint must match for a checkpoint to be resumed; checkpoints of other settings or
inputs are discarded, never resumed, and the log says which part differs. It covers the
settings that change the model (with ``training.deterministic``, the pinned thread count too)
and the *content* of every input: the examples, queries and corpus files (and the dev files
and frozen-feature cache where the job reads them) and the encoder's files (weights,
tokenizer, configuration: every file of its directory, or of its snapshot in the Hugging Face
cache for a hub id, except documentation, hidden files and other frameworks' weights). An
encoder changed in place, same path and shapes, thus starts the job over. Each file's sha256
is streamed once and kept in ``digests.json`` under its (path, size, mtime, ctime, inode): a
resumed job does not hash a 440 MB encoder again, and a file rewritten in place, even with
its old mtime restored, changes its ctime and is hashed again. The fingerprint is computed
when training starts, after the encoder is loaded (a hub id's files are then in the cache).

The checkpoint directory lives outside the rule's outputs (Snakemake deletes the outputs of an
incomplete job before running it again) and is deleted once the model is saved
(``training.delete_checkpoints``). One process writes in it at a time (a ``filelock`` lock).

The batch order of an epoch is a pure function of (seed, epoch), so restoring the position
and the RNG states makes a resumed run continue exactly where the killed one stopped; with
``training.deterministic`` on CPU its model is byte-identical to an uninterrupted run's.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import logging
import os
import random
import shutil
import tempfile
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from filelock import FileLock, Timeout
from torch import nn

from reranklab.errors import ReranklabError
from reranklab.io.atomic import honour_umask
from reranklab.io.digest import sha256_of as file_sha256
from reranklab.io.json_io import write_json
from reranklab.settings.training import NOT_FINGERPRINTED_KEYS, training_view
from reranklab.training.determinism import training_threads
from reranklab.training.state import TrainState

log = logging.getLogger(__name__)

FORMAT = 1
STATE_FILE = "state.pt"
MANIFEST_FILE = "manifest.json"
DIGESTS_FILE = "digests.json"
PREFIX = "step-"
LOCK_FILE = ".lock"
# A cancelled job (scancel, walltime) may still be exiting when its rerun starts: its tracking
# thread is joined for at most reranklab.tracking.live.STOP_JOIN_S. The rerun waits this long
# for it to let the directory go, then refuses; it never trains beside it.
LOCK_WAIT_S = 60.0
# Settings that change how a job runs, not the model it trains: they may differ on resume.
# (``threads`` does change the model in deterministic mode: then its pinned count is kept.)
# Flagged in the settings model (reranklab.settings.training), as the train rule's are.
OPERATIONAL_KEYS = frozenset(NOT_FINGERPRINTED_KEYS)
# Files of an encoder directory that loading it with transformers never reads.
_NOT_READ_SUFFIXES = (".md", ".h5", ".msgpack", ".onnx", ".ot", ".tflite", ".mlmodel")
_NOT_READ_DIRS = frozenset({"onnx", "openvino", "coreml"})


class CorruptCheckpoint(ReranklabError):
    """A checkpoint directory whose manifest or state file is missing, unreadable or altered."""


# -- the fingerprint: settings and the content of every input ----------------------------------


class DigestCache:
    """sha256 of files, remembered under their (size, mtime, ctime, inode) in a JSON file.

    A file rewritten in place changes its ctime (which no tool can set back), so an entry is
    only reused for the very same bytes; anything else is hashed again.

    Args:
        path: the JSON file (``None``: remember in memory only).

    Example:
        >>> cache = DigestCache(Path("results/checkpoints/x/digests.json"))  # doctest: +SKIP
        >>> cache.sha256("bert-base-uncased/model.safetensors")  # doctest: +SKIP
        'a2b3...'
        >>> cache.save()  # doctest: +SKIP
    """

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        self.path = Path(path) if path is not None else None
        self.entries: dict[str, dict[str, Any]] = {}
        self.hashed = 0  # files hashed (not found in the cache) since loading
        self._changed = False
        if self.path is not None:
            with contextlib.suppress(OSError, ValueError):
                entries = json.loads(self.path.read_text(encoding="utf-8"))
                if isinstance(entries, dict):
                    self.entries = {k: v for k, v in entries.items() if isinstance(v, dict)}

    def sha256(self, path: str | os.PathLike[str]) -> str:
        """The hex sha256 of ``path``'s content (following links), hashed unless remembered."""
        key = os.path.abspath(path)
        info = os.stat(path)
        stamp = {
            "size": info.st_size,
            "mtime_ns": info.st_mtime_ns,
            "ctime_ns": info.st_ctime_ns,
            "inode": info.st_ino,
        }
        entry = self.entries.get(key)
        if (
            entry is not None
            and all(entry.get(k) == v for k, v in stamp.items())
            and isinstance(entry.get("sha256"), str)
        ):
            return entry["sha256"]
        digest = file_sha256(path)
        self.entries[key] = {**stamp, "sha256": digest}
        self.hashed += 1
        self._changed = True
        return digest

    def save(self) -> None:
        """Write the file (atomically) if anything was added; a failed write is not an error."""
        if self.path is None or not self._changed:
            return
        try:
            write_json(self.path, self.entries)
            self._changed = False
        except OSError as exc:
            log.warning(
                "could not write the digest cache %s (%s): inputs are hashed again next time",
                self.path,
                exc,
            )


def _tree_files(root: Path, skip_unread: bool) -> list[tuple[str, Path]]:
    """(relative posix path, path) of the regular files under ``root``, sorted."""
    found = []
    for folder, dirs, files in os.walk(root, followlinks=True):
        dirs[:] = sorted(
            d for d in dirs if not d.startswith(".") and not (skip_unread and d in _NOT_READ_DIRS)
        )
        for name in files:
            if name.startswith(".") or (skip_unread and name.endswith(_NOT_READ_SUFFIXES)):
                continue
            path = Path(folder) / name
            if path.is_file():
                found.append((path.relative_to(root).as_posix(), path))
    return sorted(found)


def encoder_directory(name: str) -> Path | None:
    """Where the files of ``training.encoder`` are: its directory, the packaged MiniLM's, or
    the snapshot of a hub id in the local Hugging Face cache; ``None`` when not on disk."""
    from reranklab.models.encoder import resolve_encoder

    resolved = resolve_encoder(name)
    if Path(resolved).is_dir():
        return Path(resolved)
    try:
        from huggingface_hub import try_to_load_from_cache

        config = try_to_load_from_cache(resolved, "config.json")
    except Exception:  # an id the hub library refuses (bad name, ...): nothing on disk to hash
        return None
    return Path(config).parent if isinstance(config, str) else None


def fingerprint_parts(
    cell: Mapping[str, Any],
    files: Iterable[str | os.PathLike[str]] = (),
    digests: DigestCache | None = None,
) -> dict[str, str]:
    """The named parts of a job's fingerprint: its settings and the sha256 of each input.

    Args:
        cell: the resolved cell. Its ``training`` keys in :data:`OPERATIONAL_KEYS` are left
            out (they do not change the model), except the thread count with
            ``training.deterministic`` (:func:`~reranklab.training.determinism.training_threads`).
            ``training.encoder``, when set, adds the content of the encoder's files.
        files: the input files (a directory stands for every file in it), in a fixed order.
        digests: where file digests are remembered (default: hashed every time).

    Returns:
        ``{"settings": ..., "input 0 examples.parquet": ..., "encoder model.safetensors": ...}``.

    Example:
        >>> list(fingerprint_parts({"seed": 1, "training": {"epochs": 2}}))
        ['settings']
    """
    digests = digests or DigestCache()
    training = dict(cell.get("training") or {})
    settings = dict(cell)
    settings["training"] = {k: v for k, v in training.items() if k not in OPERATIONAL_KEYS}
    if training.get("deterministic"):
        settings["training"]["threads"] = training_threads(training)
    parts = {
        "settings": hashlib.sha256(
            json.dumps(settings, sort_keys=True, default=str).encode("utf-8")
        ).hexdigest()
    }
    for index, path in enumerate(files):
        path = Path(path)
        if path.is_dir():
            for relative, file in _tree_files(path, skip_unread=False):
                parts[f"input {index} {path.name}/{relative}"] = digests.sha256(file)
        else:
            parts[f"input {index} {path.name}"] = digests.sha256(path)
    encoder = training.get("encoder")
    if encoder:
        directory = encoder_directory(str(encoder))
        if directory is None:
            log.info(
                "encoder %s is not on disk (nor in the Hugging Face cache): only its name is part of the fingerprint",
                encoder,
            )
        else:
            for relative, file in _tree_files(directory, skip_unread=True):
                parts[f"encoder {relative}"] = digests.sha256(file)
    return parts


def combine(parts: Mapping[str, str]) -> str:
    """The fingerprint of its parts (a sha256 over the sorted names and digests)."""
    return hashlib.sha256(json.dumps(dict(parts), sort_keys=True).encode("utf-8")).hexdigest()


def fingerprint(
    cell: Mapping[str, Any],
    files: Iterable[str | os.PathLike[str]] = (),
    digests: DigestCache | None = None,
) -> str:
    """What a checkpoint must match to be resumed: :func:`combine` of :func:`fingerprint_parts`.

    Example:
        >>> a = fingerprint({"seed": 1, "training": {"epochs": 2, "checkpoint_every": 10}})
        >>> a == fingerprint({"seed": 1, "training": {"epochs": 2, "checkpoint_every": 99}})
        True
        >>> a == fingerprint({"seed": 2, "training": {"epochs": 2, "checkpoint_every": 10}})
        False
    """
    return combine(fingerprint_parts(cell, files, digests))


def describe_differences(old: Mapping[str, str], new: Mapping[str, str], limit: int = 5) -> str:
    """What differs between two fingerprints' parts, for the log.

    Example:
        >>> describe_differences({"settings": "aa", "encoder model.safetensors": "0123456789ab"},
        ...                      {"settings": "aa", "encoder model.safetensors": "ba9876543210"})
        'encoder model.safetensors changed (sha256 0123456789ab -> ba9876543210)'
    """
    changes = []
    for name in sorted(set(old) | set(new)):
        if name not in new:
            changes.append(f"{name} is no longer an input")
        elif name not in old:
            changes.append(f"{name} is a new input")
        elif old[name] != new[name]:
            what = (
                "the settings changed"
                if name == "settings"
                else f"{name} changed (sha256 {old[name][:12]} -> {new[name][:12]})"
            )
            changes.append(what)
    more = f" and {len(changes) - limit} more" if len(changes) > limit else ""
    return "; ".join(changes[:limit]) + more


@dataclass(frozen=True)
class JobInputs:
    """A job's settings and input files, fingerprinted when training starts.

    The encoder is loaded by then, so a hub id's files are in the cache and are hashed on the
    first run as on a resumed one.

    Args:
        cell: the resolved cell.
        files: the input files (see :func:`fingerprint_parts`).
    """

    cell: Mapping[str, Any]
    files: tuple[str, ...]

    def parts(self, digests: DigestCache) -> dict[str, str]:
        return fingerprint_parts(self.cell, self.files, digests)


# -- RNG states --------------------------------------------------------------------------------


def rng_state() -> dict[str, Any]:
    """Python, NumPy, torch CPU and CUDA generator states, as plain types and tensors.

    Plain types keep the checkpoint loadable with ``torch.load(weights_only=True)``.
    """
    version, internal, gauss = random.getstate()
    _, key, pos, has_gauss, cached = np.random.get_state(legacy=True)
    state: dict[str, Any] = {
        "python": [version, list(internal), gauss],
        "numpy": {
            "key": torch.from_numpy(np.asarray(key, dtype=np.int64)),
            "pos": int(pos),
            "has_gauss": int(has_gauss),
            "cached_gaussian": float(cached),
        },
        "torch": torch.get_rng_state(),
        "cuda": [],
    }
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: Mapping[str, Any]) -> None:
    """Restore the generator states of :func:`rng_state`."""
    version, internal, gauss = state["python"]
    random.setstate((int(version), tuple(int(x) for x in internal), gauss))
    numpy_state = state["numpy"]
    key = numpy_state["key"].numpy().astype(np.uint32)
    np.random.set_state(
        (
            "MT19937",
            key,
            numpy_state["pos"],
            numpy_state["has_gauss"],
            numpy_state["cached_gaussian"],
        )
    )
    torch.set_rng_state(state["torch"])
    cuda = list(state.get("cuda") or [])
    if cuda and torch.cuda.is_available():
        for index, device_state in enumerate(cuda[: torch.cuda.device_count()]):
            torch.cuda.set_rng_state(device_state, index)


# -- checkpoint directories --------------------------------------------------------------------


def checkpoint_name(global_step: int) -> str:
    """``step-00000120``: names sort in step order."""
    return f"{PREFIX}{global_step:08d}"


def list_checkpoints(directory: str | os.PathLike[str]) -> list[Path]:
    """The ``step-*`` directories under ``directory``, oldest first (complete or not)."""
    directory = Path(directory)
    if not directory.is_dir():
        return []
    found = [
        p
        for p in directory.iterdir()
        if p.is_dir() and p.name.startswith(PREFIX) and p.name[len(PREFIX) :].isdigit()
    ]
    return sorted(found, key=lambda p: int(p.name[len(PREFIX) :]))


def read_manifest(path: str | os.PathLike[str], verify: bool = True) -> dict[str, Any]:
    """The manifest of checkpoint ``path``, after checking its state file's size and sha256.

    Raises:
        CorruptCheckpoint: the manifest is missing or unreadable, or the state file is
            missing, truncated or altered.
    """
    path = Path(path)
    try:
        manifest = json.loads((path / MANIFEST_FILE).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CorruptCheckpoint(f"{path}: no {MANIFEST_FILE} (incomplete checkpoint)") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CorruptCheckpoint(f"{path / MANIFEST_FILE}: unreadable ({exc})") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise CorruptCheckpoint(
            f"{path / MANIFEST_FILE}: not a format-{FORMAT} checkpoint manifest"
        )
    state = path / STATE_FILE
    if not state.is_file():
        raise CorruptCheckpoint(f"{state}: missing")
    if verify:
        size = state.stat().st_size
        if size != manifest.get("size"):
            raise CorruptCheckpoint(
                f"{state}: {size} bytes, the manifest says {manifest.get('size')}"
            )
        if file_sha256(state) != manifest.get("sha256"):
            raise CorruptCheckpoint(f"{state}: sha256 differs from the manifest's")
    return manifest


def _fsync_dir(directory: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _remove(path: Path) -> None:
    # Rename first: a half-deleted checkpoint must never look like a complete one.
    trash = path.with_name(f".trash-{path.name}-{os.getpid()}")
    try:
        os.replace(path, trash)
    except OSError:
        trash = path
    shutil.rmtree(trash, ignore_errors=True)


def _model_prefixes(loss: nn.Module, model: nn.Module) -> tuple[str, ...]:
    return tuple(f"{name}." for name, module in loss.named_modules() if module is model and name)


class _WriteErrorKeeper:
    """A binary file whose failed ``write``/``flush`` remember their OSError.

    ``torch.save`` turns a failed write into ``RuntimeError("... unexpected pos ...")`` and
    drops the system's reason (``No space left on device``); this keeps it.
    """

    def __init__(self, handle: Any) -> None:
        self.handle = handle
        self.error: OSError | None = None

    def write(self, data: Any) -> int:
        try:
            return self.handle.write(data)
        except OSError as exc:
            self.error = self.error or exc
            raise

    def flush(self) -> None:
        try:
            self.handle.flush()
        except OSError as exc:
            self.error = self.error or exc
            raise


def save_state(payload: Mapping[str, Any], handle: Any) -> None:
    """``torch.save`` ``payload`` into the open binary file ``handle``.

    Raises:
        OSError: a write failed (disk full, I/O error), with the system's errno and reason,
            where torch itself reports only ``RuntimeError("... unexpected pos ...")``.

    Example:
        >>> with open("state.pt", "wb") as handle:  # doctest: +SKIP
        ...     save_state({"model": model.state_dict()}, handle)
    """
    keeper = _WriteErrorKeeper(handle)
    try:
        torch.save(payload, keeper)  # type: ignore[arg-type]
    except RuntimeError as exc:
        if keeper.error is None:
            raise
        raise keeper.error from exc


def write_state(payload: Mapping[str, Any], path: str | os.PathLike[str]) -> None:
    """:func:`save_state` into the file ``path``, flushed and fsynced.

    Raises:
        OSError: the write failed (see :func:`save_state`).
    """
    with open(path, "wb") as handle:
        save_state(payload, handle)
        handle.flush()
        os.fsync(handle.fileno())


def _reason(exc: OSError) -> str:
    """``No space left on device [ENOSPC]``, or the exception's text."""
    if exc.errno is not None and exc.strerror:
        return f"{exc.strerror} [{errno.errorcode.get(exc.errno, exc.errno)}]"
    return str(exc)


class FileCheckpointer:
    """The :class:`~reranklab.training.trainer.Checkpointer` that writes checkpoint directories.

    Args:
        directory: where the checkpoints of this training job go (one directory per job).
        fingerprint: :func:`fingerprint` of the job's settings and inputs, or the
            :class:`JobInputs` to fingerprint when training starts (their file digests are
            then remembered in ``directory/digests.json``).
        every: write a checkpoint every ``every`` optimiser steps (0 = only at epoch ends).
        keep: how many of the newest checkpoints to keep (at least 1).
        delete_when_done: delete ``directory`` once the final model is saved.
        writer: this process writes checkpoints (False on the non-zero ranks of a DDP job,
            which only restore).

    Example:
        >>> ckpt = FileCheckpointer(Path("results/checkpoints/wikiqa/pointwise-L256/fold0"),
        ...                         JobInputs(cell, (examples, queries, corpus)), every=500)  # doctest: +SKIP
        >>> train_model(cell, examples, queries, corpus, out_dir, checkpointer=ckpt)  # doctest: +SKIP
    """

    def __init__(
        self,
        directory: str | os.PathLike[str],
        fingerprint: str | JobInputs,
        every: int = 0,
        keep: int = 2,
        delete_when_done: bool = True,
        writer: bool = True,
    ) -> None:
        if every < 0:
            raise ValueError("every must be >= 0")
        self.directory = Path(directory)
        self.inputs = fingerprint if isinstance(fingerprint, JobInputs) else None
        self._parts: dict[str, str] | None = (
            None if self.inputs is not None else {"fingerprint": str(fingerprint)}
        )
        self._fingerprint: str | None = None if self.inputs is not None else str(fingerprint)
        self.every = int(every)
        self.keep = max(1, int(keep))
        self.delete_when_done = bool(delete_when_done)
        self.writer = bool(writer)
        self.resumed_from: int | None = None
        self.written: list[int] = []
        self.failed: list[int] = []  # steps whose checkpoint could not be written
        self._lock: FileLock | None = None

    @property
    def fingerprint(self) -> str:
        """The fingerprint checkpoints are written with and must match (computed once)."""
        if self._fingerprint is None:
            self._fingerprint = combine(self.parts)
        return self._fingerprint

    @property
    def parts(self) -> dict[str, str]:
        """The fingerprint's named parts (see :func:`fingerprint_parts`)."""
        if self._parts is None:
            assert self.inputs is not None
            started = time.perf_counter()
            digests = DigestCache(self.directory / DIGESTS_FILE)
            self._parts = self.inputs.parts(digests)
            if self.writer:
                digests.save()
            log.info(
                "fingerprint of %d inputs: %d file(s) hashed, the others remembered (%.1f s)",
                len(self._parts) - 1,
                digests.hashed,
                time.perf_counter() - started,
            )
        return self._parts

    # -- the Checkpointer protocol --

    def restore(self, state: TrainState) -> None:
        """Load the newest valid checkpoint of this fingerprint into ``state``, if any."""
        if self.writer:
            self._acquire_lock()
            self._clean_temporaries()
        # Now, before the first step: the checkpoints of this run hold what it trained on.
        fingerprint = self.fingerprint
        for path in reversed(list_checkpoints(self.directory)):
            try:
                manifest = read_manifest(path)
            except CorruptCheckpoint as exc:
                log.warning("skipping checkpoint: %s; trying the previous one", exc)
                if self.writer:
                    _remove(path)
                continue
            if manifest.get("fingerprint") != fingerprint:
                old = manifest.get("inputs")
                why = (
                    describe_differences(old, self.parts)
                    if isinstance(old, dict)
                    else "written with other settings or inputs"
                )
                log.warning("discarding checkpoint %s, made from other inputs: %s", path, why)
                if self.writer:
                    _remove(path)
                continue
            try:
                self._load(path, state)
            except (RuntimeError, KeyError, ValueError, OSError) as exc:
                log.warning(
                    "skipping checkpoint %s: cannot load it (%s); trying the previous one",
                    path,
                    exc,
                )
                continue
            self.resumed_from = state.global_step
            log.info(
                "resumed from checkpoint %s: step %d of %d (epoch %d, batch %d)",
                path,
                state.global_step,
                state.total_steps,
                state.epoch + 1,
                state.step_in_epoch,
            )
            return
        log.info("no checkpoint to resume in %s: training from the start", self.directory)

    def step_done(self, state: TrainState) -> None:
        """Write a checkpoint every ``every`` steps and at epoch ends (not after the last step)."""
        if not self.writer or state.global_step >= state.total_steps:
            return
        steps_per_epoch = int(getattr(state, "steps_per_epoch", 0) or 0)
        epoch_end = steps_per_epoch > 0 and state.step_in_epoch >= steps_per_epoch
        if epoch_end or (self.every > 0 and state.global_step % self.every == 0):
            self.save(state)

    def finished(self, state: TrainState, model_dir: Path) -> None:
        """Delete the checkpoints once the model is saved (``delete_when_done``)."""
        if self.writer and self.delete_when_done and self.directory.exists():
            shutil.rmtree(self.directory, ignore_errors=True)
            log.info(
                "deleted the checkpoints in %s (the model is saved in %s)",
                self.directory,
                model_dir,
            )
        self._release_lock()

    # -- writing --

    def save(self, state: TrainState) -> Path | None:
        """Write a checkpoint of ``state`` atomically, then prune to the newest ``keep``.

        Returns:
            The checkpoint directory; ``None`` when it could not be written (disk full, I/O
            error): then a warning is logged, the previous checkpoints are left as they were
            and training goes on.
        """
        started = time.perf_counter()
        fingerprint, parts = self.fingerprint, self.parts
        payload = self._payload(state)  # outside the try: a fault here is a bug, not a full disk
        final = self.directory / checkpoint_name(state.global_step)
        tmp: Path | None = None
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            tmp = Path(
                tempfile.mkdtemp(prefix=f".{final.name}.", suffix=".tmp", dir=self.directory)
            )
            state_path = tmp / STATE_FILE
            write_state(payload, state_path)
            manifest = {
                "format": FORMAT,
                "fingerprint": fingerprint,
                "inputs": parts,
                "global_step": state.global_step,
                "epoch": state.epoch,
                "step_in_epoch": state.step_in_epoch,
                "total_steps": state.total_steps,
                "file": STATE_FILE,
                "size": state_path.stat().st_size,
                "sha256": file_sha256(state_path),
                "torch": torch.__version__,
                "written": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            }
            write_json(tmp / MANIFEST_FILE, manifest)
            honour_umask(tmp)  # mkdtemp's folder is private (0700); results honour the umask
            if final.exists():
                _remove(final)
            os.replace(tmp, final)
            _fsync_dir(self.directory)
        except OSError as exc:
            if tmp is not None:
                shutil.rmtree(tmp, ignore_errors=True)
            self._not_written(state, final, exc)
            return None
        except BaseException:
            if tmp is not None:
                shutil.rmtree(tmp, ignore_errors=True)
            raise
        self.written.append(state.global_step)
        self._prune()
        log.info(
            "checkpoint %s written (%.1f MB, %.1f s)",
            final,
            manifest["size"] / 1e6,
            time.perf_counter() - started,
        )
        return final

    def _not_written(self, state: TrainState, final: Path, exc: OSError) -> None:
        self.failed.append(state.global_step)
        previous = [p.name for p in list_checkpoints(self.directory) if p != final]
        kept = (
            f"the previous checkpoint {previous[-1]} is kept"
            if previous
            else "there is no earlier checkpoint"
        )
        free = ""
        with contextlib.suppress(OSError):
            free = f", {shutil.disk_usage(self.directory).free / 1e6:.0f} MB free there"
        log.warning(
            "checkpoint at step %d NOT written to %s: %s%s; %s and training goes on",
            state.global_step,
            self.directory,
            _reason(exc),
            free,
            kept,
        )

    def _payload(self, state: TrainState) -> dict[str, Any]:
        prefixes = _model_prefixes(state.loss, state.model)
        loss_state = (
            {k: v for k, v in state.loss.state_dict().items() if not k.startswith(prefixes)}
            if prefixes
            else {}
        )
        scaler = getattr(state, "scaler", None)
        return {
            "format": FORMAT,
            "model": state.model.state_dict(),
            "loss": loss_state,
            "loss_shares_model": bool(prefixes),
            "optimizer": state.optimizer.state_dict(),
            "scheduler": state.scheduler.state_dict(),
            "scaler": scaler.state_dict()
            if scaler is not None and hasattr(scaler, "state_dict")
            else None,
            "rng": rng_state(),
            "position": {
                "epoch": state.epoch,
                "step_in_epoch": state.step_in_epoch,
                "global_step": state.global_step,
                "total_steps": state.total_steps,
            },
            "losses": [float(x) for x in state.losses],
            "threads": torch.get_num_threads(),  # for the record: deterministic mode pins it (fingerprinted)
            # Model selection on dev (training.validation): the per-epoch results, the best
            # epoch, its weights and the patience count, so a resumed job chooses the same.
            "selection": state.selection.state_dict()
            if getattr(state, "selection", None) is not None
            else None,
        }

    def _load(self, path: Path, state: TrainState) -> None:
        payload = torch.load(path / STATE_FILE, map_location="cpu", weights_only=True)
        position = payload["position"]
        if int(position["total_steps"]) != state.total_steps:
            raise ValueError(
                f"the checkpoint has {position['total_steps']} steps in all, this job {state.total_steps}"
            )
        if getattr(state, "selection", None) is not None and payload.get("selection") is None:
            raise ValueError(
                "the checkpoint holds no model-selection state (written without training.validation)"
            )
        state.model.load_state_dict(payload["model"])
        if payload.get("loss"):
            state.loss.load_state_dict(payload["loss"], strict=not payload.get("loss_shares_model"))
        state.optimizer.load_state_dict(payload["optimizer"])
        state.scheduler.load_state_dict(payload["scheduler"])
        scaler = getattr(state, "scaler", None)
        if scaler is not None and payload.get("scaler") is not None:
            scaler.load_state_dict(payload["scaler"])
        state.epoch = int(position["epoch"])
        state.step_in_epoch = int(position["step_in_epoch"])
        state.global_step = int(position["global_step"])
        state.losses = [float(x) for x in payload["losses"]]
        if getattr(state, "selection", None) is not None:
            state.selection.load_state_dict(payload["selection"])
        set_rng_state(payload["rng"])

    def _prune(self) -> None:
        complete = []
        for path in list_checkpoints(self.directory):
            try:
                read_manifest(path, verify=False)
                complete.append(path)
            except CorruptCheckpoint:
                _remove(path)
        for path in complete[: -self.keep]:
            _remove(path)

    def _clean_temporaries(self) -> None:
        if not self.directory.is_dir():
            return
        for path in self.directory.iterdir():
            if path.name.startswith((".trash-", f".{PREFIX}")) and path.is_dir():
                shutil.rmtree(path, ignore_errors=True)

    # -- one writer per directory --

    def _acquire_lock(self) -> None:
        if self._lock is not None:
            return
        self.directory.mkdir(parents=True, exist_ok=True)
        lock = FileLock(self.directory / LOCK_FILE)
        try:
            lock.acquire(blocking=False)
        except Timeout:
            log.info(
                "checkpoint directory %s is in use: waiting up to %.0f s for the other training"
                " process (a cancelled job still exiting?) to leave it",
                self.directory,
                LOCK_WAIT_S,
            )
            try:
                lock.acquire(timeout=LOCK_WAIT_S)
            except Timeout:
                raise ReranklabError(
                    f"checkpoint directory {self.directory} is in use by another training "
                    f"process (still, after {LOCK_WAIT_S:.0f} s)"
                ) from None
        self._lock = lock

    def _release_lock(self) -> None:
        if self._lock is not None:
            with contextlib.suppress(OSError):
                self._lock.release(force=True)
            self._lock = None


def checkpointer_for(
    cell: Mapping[str, Any],
    directory: str | os.PathLike[str] | None,
    files: Iterable[str | os.PathLike[str]],
    writer: bool = True,
    every: int | None = None,
    keep: int | None = None,
    delete_when_done: bool | None = None,
) -> FileCheckpointer | None:
    """The checkpointer a ``reranklab train`` job uses.

    Args:
        cell: the resolved cell (``training.checkpoint_every``, ``keep_checkpoints`` and
            ``delete_checkpoints`` are read; all of it and its encoder's files are fingerprinted).
        directory: the job's checkpoint directory; None = no checkpoints.
        files: the job's input files and directories (their content is fingerprinted).
        writer: whether this process writes checkpoints (rank 0).
        every, keep, delete_when_done: override the cell's settings (the train rule passes
            them apart from the cell, so that changing them re-runs nothing).

    Example:
        >>> checkpointer_for({"training": {}}, None, []) is None
        True
    """
    if not directory:
        return None
    training = training_view(cell.get("training") or {})
    return FileCheckpointer(
        directory,
        JobInputs(cell, tuple(str(f) for f in files)),
        every=training.checkpoint_every if every is None else int(every),
        keep=training.keep_checkpoints if keep is None else int(keep),
        delete_when_done=training.delete_checkpoints
        if delete_when_done is None
        else bool(delete_when_done),
        writer=writer,
    )
