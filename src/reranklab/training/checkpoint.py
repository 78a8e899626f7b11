"""Checkpoint and resume a training job: atomic, checksummed, pruned, tied to its settings.

A :class:`FileCheckpointer` writes a checkpoint every ``training.checkpoint_every`` optimiser
steps and at the end of every epoch (not after the last step: the model itself is saved
then). Each checkpoint is a directory::

    <checkpoint dir>/step-00000120/state.pt       model, loss, optimiser, scheduler, grad scaler,
                                                  RNG states (Python, NumPy, torch, CUDA),
                                                  position (epoch, batch), the losses so far
    <checkpoint dir>/step-00000120/manifest.json  format, fingerprint, position, size and
                                                  sha256 of state.pt

It is written into a hidden temporary directory that is renamed into place only when complete,
so a job killed while writing leaves no ``step-*`` directory behind; a checkpoint whose
manifest is missing or whose ``state.pt`` does not match its size and sha256 is skipped (with
a warning) in favour of the previous one. Only the last ``training.keep_checkpoints`` are
kept. The fingerprint (the settings that change the model, and the sha256 of the examples,
queries and corpus files) must match: checkpoints of other settings are discarded, never
resumed. The checkpoint directory lives outside the rule's outputs (Snakemake deletes the
outputs of an incomplete job before running it again) and is deleted once the model is saved
(``training.delete_checkpoints``).

The batch order of an epoch is a pure function of (seed, epoch), so restoring the position
and the RNG states makes a resumed run continue exactly where the killed one stopped; with
``training.deterministic`` on CPU its model is byte-identical to an uninterrupted run's.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import logging
import os
import random
import shutil
import tempfile
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import IO, Any

import numpy as np
import torch
from torch import nn

from reranklab.errors import ReranklabError
from reranklab.io.json_io import write_json
from reranklab.training.trainer import TrainState

log = logging.getLogger(__name__)

FORMAT = 1
STATE_FILE = "state.pt"
MANIFEST_FILE = "manifest.json"
PREFIX = "step-"
LOCK_FILE = ".lock"
# Settings that change how a job runs, not the model it trains: they may differ on resume.
OPERATIONAL_KEYS = frozenset({"checkpoint_every", "keep_checkpoints", "delete_checkpoints", "eval_batch_size", "threads"})


class CorruptCheckpoint(ReranklabError):
    """A checkpoint directory whose manifest or state file is missing, unreadable or altered."""


def file_sha256(path: str | os.PathLike[str], chunk: int = 1 << 20) -> str:
    """Hex sha256 of a file's content, read in 1 MiB chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(chunk):
            digest.update(block)
    return digest.hexdigest()


def fingerprint(cell: Mapping[str, Any], files: Iterable[str | os.PathLike[str]] = ()) -> str:
    """What a checkpoint must match to be resumed: the cell's model settings and input files.

    Args:
        cell: the resolved cell the job trains (its ``training`` keys in
            :data:`OPERATIONAL_KEYS` are left out: they do not change the model).
        files: input files whose content the model depends on (examples, queries, corpus).

    Example:
        >>> a = fingerprint({"seed": 1, "training": {"epochs": 2, "checkpoint_every": 10}})
        >>> a == fingerprint({"seed": 1, "training": {"epochs": 2, "checkpoint_every": 99}})
        True
        >>> a == fingerprint({"seed": 2, "training": {"epochs": 2, "checkpoint_every": 10}})
        False
    """
    settings = dict(cell)
    settings["training"] = {k: v for k, v in dict(cell.get("training") or {}).items() if k not in OPERATIONAL_KEYS}
    digest = hashlib.sha256(json.dumps(settings, sort_keys=True, default=str).encode("utf-8"))
    for path in files:
        digest.update(file_sha256(path).encode("ascii"))
    return digest.hexdigest()


# -- RNG states --------------------------------------------------------------------------------


def rng_state() -> dict[str, Any]:
    """Python, NumPy, torch CPU and CUDA generator states, as plain types and tensors.

    Plain types keep the checkpoint loadable with ``torch.load(weights_only=True)``.
    """
    version, internal, gauss = random.getstate()
    _, key, pos, has_gauss, cached = np.random.get_state(legacy=True)
    state: dict[str, Any] = {
        "python": [version, list(internal), gauss],
        "numpy": {"key": torch.from_numpy(np.asarray(key, dtype=np.int64)), "pos": int(pos), "has_gauss": int(has_gauss), "cached_gaussian": float(cached)},
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
    np.random.set_state(("MT19937", key, numpy_state["pos"], numpy_state["has_gauss"], numpy_state["cached_gaussian"]))
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
    found = [p for p in directory.iterdir() if p.is_dir() and p.name.startswith(PREFIX) and p.name[len(PREFIX) :].isdigit()]
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
        raise CorruptCheckpoint(f"{path / MANIFEST_FILE}: not a format-{FORMAT} checkpoint manifest")
    state = path / STATE_FILE
    if not state.is_file():
        raise CorruptCheckpoint(f"{state}: missing")
    if verify:
        size = state.stat().st_size
        if size != manifest.get("size"):
            raise CorruptCheckpoint(f"{state}: {size} bytes, the manifest says {manifest.get('size')}")
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


class FileCheckpointer:
    """The :class:`~reranklab.training.trainer.Checkpointer` that writes checkpoint directories.

    Args:
        directory: where the checkpoints of this training job go (one directory per job).
        fingerprint: :func:`fingerprint` of the job's settings and inputs.
        every: write a checkpoint every ``every`` optimiser steps (0 = only at epoch ends).
        keep: how many of the newest checkpoints to keep (at least 1).
        delete_when_done: delete ``directory`` once the final model is saved.
        writer: this process writes checkpoints (False on the non-zero ranks of a DDP job,
            which only restore).
        deterministic: restore the CPU thread count the checkpoint was written with.

    Example:
        >>> ckpt = FileCheckpointer(Path("results/checkpoints/wikiqa/pointwise-L256/fold0"),
        ...                         fingerprint(cell, [examples, queries, corpus]), every=500)  # doctest: +SKIP
        >>> train_model(cell, examples, queries, corpus, out_dir, checkpointer=ckpt)  # doctest: +SKIP
    """

    def __init__(
        self,
        directory: str | os.PathLike[str],
        fingerprint: str,
        every: int = 0,
        keep: int = 2,
        delete_when_done: bool = True,
        writer: bool = True,
        deterministic: bool = False,
    ) -> None:
        if every < 0:
            raise ValueError("every must be >= 0")
        self.directory = Path(directory)
        self.fingerprint = fingerprint
        self.every = int(every)
        self.keep = max(1, int(keep))
        self.delete_when_done = bool(delete_when_done)
        self.writer = bool(writer)
        self.deterministic = bool(deterministic)
        self.resumed_from: int | None = None
        self.written: list[int] = []
        self._lock: IO[str] | None = None

    # -- the Checkpointer protocol --

    def restore(self, state: TrainState) -> None:
        """Load the newest valid checkpoint of this fingerprint into ``state``, if any."""
        if self.writer:
            self._acquire_lock()
            self._clean_temporaries()
        for path in reversed(list_checkpoints(self.directory)):
            try:
                manifest = read_manifest(path)
            except CorruptCheckpoint as exc:
                log.warning("skipping checkpoint: %s; trying the previous one", exc)
                if self.writer:
                    _remove(path)
                continue
            if manifest.get("fingerprint") != self.fingerprint:
                log.warning("discarding checkpoint %s: written with other settings or inputs", path)
                if self.writer:
                    _remove(path)
                continue
            try:
                self._load(path, state)
            except (RuntimeError, KeyError, ValueError, OSError) as exc:
                log.warning("skipping checkpoint %s: cannot load it (%s); trying the previous one", path, exc)
                continue
            self.resumed_from = state.global_step
            log.info(
                "resumed from checkpoint %s: step %d of %d (epoch %d, batch %d)",
                path, state.global_step, state.total_steps, state.epoch + 1, state.step_in_epoch,
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
            log.info("deleted the checkpoints in %s (the model is saved in %s)", self.directory, model_dir)
        self._release_lock()

    # -- writing --

    def save(self, state: TrainState) -> Path:
        """Write a checkpoint of ``state`` atomically, then prune to the newest ``keep``."""
        started = time.perf_counter()
        self.directory.mkdir(parents=True, exist_ok=True)
        final = self.directory / checkpoint_name(state.global_step)
        tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}.", suffix=".tmp", dir=self.directory))
        try:
            state_path = tmp / STATE_FILE
            with open(state_path, "wb") as handle:
                torch.save(self._payload(state), handle)
                handle.flush()
                os.fsync(handle.fileno())
            manifest = {
                "format": FORMAT,
                "fingerprint": self.fingerprint,
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
            if final.exists():
                _remove(final)
            os.replace(tmp, final)
            _fsync_dir(self.directory)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        self.written.append(state.global_step)
        self._prune()
        log.info("checkpoint %s written (%.1f MB, %.1f s)", final, manifest["size"] / 1e6, time.perf_counter() - started)
        return final

    def _payload(self, state: TrainState) -> dict[str, Any]:
        prefixes = _model_prefixes(state.loss, state.model)
        loss_state = {k: v for k, v in state.loss.state_dict().items() if not k.startswith(prefixes)} if prefixes else {}
        scaler = getattr(state, "scaler", None)
        return {
            "format": FORMAT,
            "model": state.model.state_dict(),
            "loss": loss_state,
            "loss_shares_model": bool(prefixes),
            "optimizer": state.optimizer.state_dict(),
            "scheduler": state.scheduler.state_dict(),
            "scaler": scaler.state_dict() if scaler is not None and hasattr(scaler, "state_dict") else None,
            "rng": rng_state(),
            "position": {
                "epoch": state.epoch,
                "step_in_epoch": state.step_in_epoch,
                "global_step": state.global_step,
                "total_steps": state.total_steps,
            },
            "losses": [float(x) for x in state.losses],
            "threads": torch.get_num_threads(),
            # Model selection on dev (training.validation): the per-epoch results, the best
            # epoch, its weights and the patience count, so a resumed job chooses the same.
            "selection": state.selection.state_dict() if getattr(state, "selection", None) is not None else None,
        }

    def _load(self, path: Path, state: TrainState) -> None:
        payload = torch.load(path / STATE_FILE, map_location="cpu", weights_only=True)
        position = payload["position"]
        if int(position["total_steps"]) != state.total_steps:
            raise ValueError(f"the checkpoint has {position['total_steps']} steps in all, this job {state.total_steps}")
        if getattr(state, "selection", None) is not None and payload.get("selection") is None:
            raise ValueError("the checkpoint holds no model-selection state (written without training.validation)")
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
        if self.deterministic and payload.get("threads"):
            # The thread count changes the order of floating-point sums on CPU.
            torch.set_num_threads(int(payload["threads"]))
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
        handle = open(self.directory / LOCK_FILE, "a+")  # noqa: SIM115 - held until finished()
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            raise ReranklabError(f"checkpoint directory {self.directory} is in use by another training process") from None
        self._lock = handle

    def _release_lock(self) -> None:
        if self._lock is not None:
            with contextlib.suppress(OSError):
                fcntl.flock(self._lock, fcntl.LOCK_UN)
            self._lock.close()
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
        cell: the resolved cell (``training.checkpoint_every``, ``keep_checkpoints``,
            ``delete_checkpoints`` and ``deterministic`` are read).
        directory: the job's checkpoint directory; None = no checkpoints.
        files: the job's input files (part of the fingerprint).
        writer: whether this process writes checkpoints (rank 0).
        every, keep, delete_when_done: override the cell's settings (the train rule passes
            them apart from the cell, so that changing them re-runs nothing).

    Example:
        >>> checkpointer_for({"training": {}}, None, []) is None
        True
    """
    if not directory:
        return None
    training = dict(cell.get("training") or {})
    return FileCheckpointer(
        directory,
        fingerprint(cell, files),
        every=int(training.get("checkpoint_every", 1000) or 0) if every is None else int(every),
        keep=int(training.get("keep_checkpoints", 2) or 1) if keep is None else int(keep),
        delete_when_done=bool(training.get("delete_checkpoints", True)) if delete_when_done is None else bool(delete_when_done),
        writer=writer,
        deterministic=bool(training.get("deterministic", False)),
    )
