"""Bind each GPU job to free devices of its own.

Snakemake counts the ``gpu`` resource (``--resources gpu=4`` runs at most four GPU jobs at
once) but does not say *which* device a job may use, so four jobs would all start on GPU 0.
Each GPU step (``reranklab train``/``rerank``) therefore leases devices before it touches
CUDA:

- the candidates are ``CUDA_VISIBLE_DEVICES`` when it is set (so a user or scheduler
  restriction is honoured), else every device the driver reports;
- a device is leased by holding an exclusive lock on ``results/.gpu/<host>/<device>.lock``
  (``$RERANKLAB_GPU_LOCK_DIR`` moves the folder), taken without waiting by ``filelock``'s
  :class:`~filelock.FileLock` (``flock`` on Unix): the kernel releases it when the process
  exits, also after a crash or ``kill -9``, so there are no stale leases;
- the step then sets ``CUDA_VISIBLE_DEVICES`` to its leased device(s), which CUDA then
  numbers from 0;
- when every device is leased the step waits (Snakemake's resource count normally prevents
  that; it happens when two Snakemake runs share a machine).

Inside a SLURM job (``SLURM_JOB_ID``) the locks are kept per job: SLURM already gives each
job its own devices (renumbered from 0 in every job), so jobs on one node must not contend
for "device 0"; several local Snakemake jobs inside one allocation still get different ones.

Several jobs per GPU: with ``training.gpu_slots: K`` every device is K slots
(``<device>.lock`` is slot 0, ``<device>.slot<i>.lock`` the others) and the ``gpu`` resource
counts slots (``snakemake --resources gpu=<GPUs x K>``). A job with ``training.gpu_share: s``
leases s free slots of one device (MiniLM or lite jobs: 1 of 4, say); a job without one, and
every DDP job, leases all K slots of each of its devices, i.e. whole GPUs.

``RERANKLAB_GPU_COUNT=N`` pretends there are N devices (tests, or a machine where NVML cannot
count); ``RERANKLAB_GPU_BINDING=0`` turns binding off.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import socket
import time
from collections.abc import Iterator, Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from filelock import FileLock, Timeout

from reranklab.errors import ConfigError

log = logging.getLogger(__name__)

LOCK_DIR_ENV = "RERANKLAB_GPU_LOCK_DIR"
COUNT_ENV = "RERANKLAB_GPU_COUNT"
BINDING_ENV = "RERANKLAB_GPU_BINDING"
DEFAULT_LOCK_DIR = Path("results/.gpu")


def device_count(environ: Mapping[str, str] | None = None) -> int:
    """Physical CUDA devices: ``$RERANKLAB_GPU_COUNT``, else NVML's count through torch.

    ``torch.cuda.device_count`` asks NVML first, which does not initialise CUDA, so
    ``CUDA_VISIBLE_DEVICES`` can still be set afterwards.
    """
    environ = os.environ if environ is None else environ
    fake = environ.get(COUNT_ENV)
    if fake not in (None, ""):
        try:
            return max(0, int(fake))
        except ValueError:
            raise ConfigError(f"${COUNT_ENV}: {fake!r} is not a number of devices") from None
    import torch

    return int(torch.cuda.device_count())


def visible_devices(
    environ: Mapping[str, str] | None = None, count: int | None = None
) -> list[str]:
    """The device ids a job may lease: ``CUDA_VISIBLE_DEVICES`` if set, else ``0..count-1``.

    Args:
        environ: the environment (default ``os.environ``).
        count: the number of physical devices (default :func:`device_count`).

    Example:
        >>> visible_devices({"CUDA_VISIBLE_DEVICES": "2, 3"}), visible_devices({}, count=2)
        (['2', '3'], ['0', '1'])
        >>> visible_devices({"CUDA_VISIBLE_DEVICES": ""}), visible_devices({"CUDA_VISIBLE_DEVICES": "1,-1,2"})
        ([], ['1'])
    """
    environ = os.environ if environ is None else environ
    listed = environ.get("CUDA_VISIBLE_DEVICES")
    if listed is not None:
        devices = []
        for item in (part.strip() for part in listed.split(",")):
            if not item or item.startswith("-"):
                break  # CUDA ignores everything from the first invalid entry on
            devices.append(item)
        return devices
    return [str(i) for i in range(device_count(environ) if count is None else count)]


def lock_dir(
    environ: Mapping[str, str] | None = None, base: str | os.PathLike[str] | None = None
) -> Path:
    """``<base>/<host>`` (``<host>-slurm<job id>`` inside a SLURM job): one namespace per machine.

    Example:
        >>> lock_dir({"SLURM_JOB_ID": "77"}, "/tmp/gpu").name.endswith("-slurm77")
        True
    """
    environ = os.environ if environ is None else environ
    root = Path(base or environ.get(LOCK_DIR_ENV) or DEFAULT_LOCK_DIR)
    host = re.sub(r"[^A-Za-z0-9_.-]", "_", socket.gethostname()) or "localhost"
    job = environ.get("SLURM_JOB_ID")
    return root / (f"{host}-slurm{job}" if job else host)


@dataclass
class GpuLease:
    """Devices held by this process until :meth:`release` (or the process exits)."""

    devices: list[str]
    locks: list[FileLock] = field(default_factory=list, repr=False)

    def release(self) -> None:
        for lock in self.locks:
            with contextlib.suppress(OSError):
                lock.release(force=True)
        self.locks = []

    def __enter__(self) -> GpuLease:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def _try_lock(path: Path) -> FileLock | None:
    """The lock of one device when it is free now, else None (never waits)."""
    # Not thread-local: a lease belongs to the process, whichever thread releases it.
    lock = FileLock(path, thread_local=False)
    try:
        lock.acquire(timeout=0)
    except Timeout:
        return None
    # Who holds it, for people looking at results/.gpu/ (the lock itself is what counts).
    with contextlib.suppress(OSError):
        path.write_text(f"pid {os.getpid()} since {time.strftime('%Y-%m-%dT%H:%M:%S')}\n")
    return lock


def slot_lock(folder: Path, device: str, slot: int) -> Path:
    """The lock file of one slot of a device (slot 0 is the whole-device lock of old).

    Example:
        >>> slot_lock(Path("g"), "0", 0).name, slot_lock(Path("g"), "1", 2).name
        ('0.lock', '1.slot2.lock')
    """
    name = re.sub(r"[^A-Za-z0-9_.-]", "_", device)
    return folder / (f"{name}.lock" if slot == 0 else f"{name}.slot{slot}.lock")


def _lease_slots(folder: Path, device: str, slots: int, wanted: int) -> list[FileLock] | None:
    """``wanted`` free slots of ``device`` out of ``slots`` (all or none), without waiting."""
    held: list[FileLock] = []
    for slot in range(slots):
        lock = _try_lock(slot_lock(folder, device, slot))
        if lock is not None:
            held.append(lock)
            if len(held) == wanted:
                return held
    GpuLease([], held).release()
    return None


def acquire_gpus(
    n: int = 1,
    devices: Sequence[str] | None = None,
    directory: str | os.PathLike[str] | None = None,
    environ: Mapping[str, str] | None = None,
    timeout: float | None = None,
    poll: float = 1.0,
    slots: int = 1,
    share: int | None = None,
) -> GpuLease:
    """Lease ``n`` free devices (all or none), waiting while too few are free.

    Args:
        n: devices wanted (a DDP job wants several).
        devices: candidate ids (default :func:`visible_devices`).
        directory: the lock folder (default :func:`lock_dir`).
        environ: the environment to read (default ``os.environ``).
        timeout: seconds to wait at most (None = as long as it takes).
        poll: seconds between attempts.
        slots: slots per device (``training.gpu_slots``).
        share: slots of one device this job takes (``training.gpu_share``); ``None`` = every
            slot of each of its ``n`` devices.

    Raises:
        ConfigError: fewer than ``n`` candidate devices exist, or a share that does not fit.
        TimeoutError: not enough devices became free within ``timeout``.

    Example:
        >>> with acquire_gpus(1, devices=["0", "1"], directory="/tmp/gpu-doc") as lease:
        ...     lease.devices
        ['0']
        >>> with acquire_gpus(devices=["0"], directory="/tmp/gpu-doc2", slots=2, share=1) as a:
        ...     with acquire_gpus(devices=["0"], directory="/tmp/gpu-doc2", slots=2, share=1) as b:
        ...         a.devices, b.devices
        (['0'], ['0'])
    """
    if slots < 1 or (share is not None and not 1 <= share <= slots):
        raise ConfigError(
            f"training.gpu_share: {share} slot(s) of a GPU split into training.gpu_slots {slots}"
        )
    if share is not None and n != 1:
        raise ConfigError("training.gpu_share: a job on several GPUs (ddp) takes whole GPUs")
    wanted_slots = slots if share is None else share
    environ = os.environ if environ is None else environ
    candidates = list(visible_devices(environ) if devices is None else devices)
    if n > len(candidates):
        listed = environ.get("CUDA_VISIBLE_DEVICES")
        where = (
            f"CUDA_VISIBLE_DEVICES={listed!r}"
            if listed is not None
            else f"{len(candidates)} on this machine"
        )
        raise ConfigError(
            f"training.gpus: {n} GPU(s) wanted, but only {len(candidates)} can be used ({where})"
        )
    folder = Path(directory) if directory is not None else lock_dir(environ)
    folder.mkdir(parents=True, exist_ok=True)
    deadline = None if timeout is None else time.monotonic() + timeout
    waited = False
    while True:
        lease = GpuLease([])
        for device in candidates:
            held = _lease_slots(folder, device, slots, wanted_slots)
            if held is not None:
                lease.devices.append(device)
                lease.locks += held
                if len(lease.devices) == n:
                    return lease
        # All or none: holding some while waiting for more could deadlock two DDP jobs.
        lease.release()
        if deadline is not None and time.monotonic() >= deadline:
            raise TimeoutError(
                f"no {n} free GPU(s) among {', '.join(candidates)} within {timeout} s (locks in {folder})"
            )
        if not waited:
            log.info(
                "waiting for %d free GPU(s) among %s (locks in %s)",
                n,
                ", ".join(candidates),
                folder,
            )
            waited = True
        time.sleep(poll)


def wants_binding(device_setting: str, environ: Mapping[str, str] | None = None) -> bool:
    """Whether a step with ``training.device = device_setting`` should lease a GPU.

    ``auto`` and ``cuda`` do when devices exist; ``cpu`` and an explicit ``cuda:N`` (the user
    chose) do not; ``RERANKLAB_GPU_BINDING=0`` turns binding off.

    Example:
        >>> wants_binding("cpu"), wants_binding("cuda:1"), wants_binding("auto", {"RERANKLAB_GPU_COUNT": "0"})
        (False, False, False)
        >>> wants_binding("auto", {"RERANKLAB_GPU_COUNT": "2"})
        True
    """
    environ = os.environ if environ is None else environ
    if environ.get(BINDING_ENV, "1").strip().lower() in ("0", "false", "no", "off"):
        return False
    if device_setting not in ("auto", "cuda"):
        return False
    return bool(visible_devices(environ))


@contextlib.contextmanager
def gpu_binding(
    device_setting: str = "auto",
    n: int = 1,
    environ: MutableMapping[str, str] | None = None,
    timeout: float | None = None,
    slots: int = 1,
    share: int | None = None,
) -> Iterator[list[str]]:
    """Lease ``n`` devices and point ``CUDA_VISIBLE_DEVICES`` at them for the block.

    Must run before the step initialises CUDA. Yields the leased ids (empty when the step
    runs without binding: CPU, an explicit ``cuda:N``, or no GPU).

    Example:
        >>> with gpu_binding("auto", environ={"RERANKLAB_GPU_COUNT": "0"}) as devices:
        ...     devices
        []
    """
    environ = os.environ if environ is None else environ
    if not wants_binding(device_setting, environ):
        yield []
        return
    previous = environ.get("CUDA_VISIBLE_DEVICES")
    # NVML and nvidia-smi number devices by PCI bus; make CUDA agree with them.
    environ.setdefault("CUDA_DEVICE_ORDER", "PCI_BUS_ID")
    with acquire_gpus(n, environ=environ, timeout=timeout, slots=slots, share=share) as lease:
        environ["CUDA_VISIBLE_DEVICES"] = ",".join(lease.devices)
        log.info(
            "bound to GPU %s (CUDA_VISIBLE_DEVICES=%s)",
            ", ".join(lease.devices),
            environ["CUDA_VISIBLE_DEVICES"],
        )
        try:
            yield lease.devices
        finally:
            if previous is None:
                environ.pop("CUDA_VISIBLE_DEVICES", None)
            else:
                environ["CUDA_VISIBLE_DEVICES"] = previous
