"""One large training job on several GPUs (``training.distributed: ddp``, ``training.gpus: N``).

``reranklab train`` binds N free GPUs (:mod:`reranklab.gpu`) and re-runs itself under
``torchrun --standalone --nproc-per-node N``. Each worker process (rank) then

- joins the process group (NCCL on GPUs, gloo on CPU) and uses GPU ``LOCAL_RANK``;
- builds the same model from the same seed, then takes rank 0's parameters (broadcast);
- walks the same seeded batch order and takes every N-th example of each batch, so
  ``training.batch_size`` stays the global batch and the number of steps is unchanged;
- averages gradients over the ranks as soon as each parameter's gradient is complete
  (a post-accumulate-grad hook per parameter: the result is DistributedDataParallel's, and
  it works for any loss, whichever model methods it calls);
- steps the same optimiser on the same gradients, so the replicas stay identical.

Rank 0 alone writes checkpoints, logs, progress bars and the model; all ranks resume from
the same checkpoint. As with DDP, every rank is seeded with the study seed. The training
losses in ``train_stats.json`` are rank 0's (its share of each batch).
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from typing import Any

import torch
import torch.distributed as dist
from torch import nn

from reranklab.errors import ConfigError, ReranklabError
from reranklab.settings.training import training_view

log = logging.getLogger(__name__)

WORKER_ENV = "RERANKLAB_DDP_WORKER"


def wants_ddp(training: Mapping[str, Any]) -> bool:
    """Whether the job must be launched as ``gpus`` torchrun workers.

    Raises:
        ConfigError: ``training.gpus`` > 1 without ``training.distributed: ddp``.

    Example:
        >>> wants_ddp({"distributed": "ddp", "gpus": 2}), wants_ddp({"distributed": "none", "gpus": 1})
        (True, False)
    """
    settings = training_view(training)
    mode, gpus = settings.distributed, settings.gpus
    if mode not in ("none", "ddp"):
        raise ConfigError(f"training.distributed: {mode!r} is not none or ddp")
    if mode == "none" and gpus > 1:
        raise ConfigError(f"training.gpus: {gpus} GPUs for one job need training.distributed: ddp")
    return mode == "ddp" and gpus > 1


def is_worker() -> bool:
    """True inside a worker that :func:`launch` started (torchrun sets ``LOCAL_RANK``)."""
    return os.environ.get(WORKER_ENV) == "1" and "LOCAL_RANK" in os.environ


def is_active() -> bool:
    """True when this process belongs to an initialised process group of several ranks."""
    return dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1


def rank() -> int:
    return dist.get_rank() if dist.is_available() and dist.is_initialized() else 0


def world_size() -> int:
    return dist.get_world_size() if dist.is_available() and dist.is_initialized() else 1


def is_main_process() -> bool:
    """Rank 0 (or the only process): the one that writes files and logs."""
    return rank() == 0


def launch(argv: Sequence[str], nproc: int) -> None:
    """Run ``reranklab <argv>`` as ``nproc`` torchrun workers on this machine and wait.

    The GPUs must already be bound (``CUDA_VISIBLE_DEVICES`` lists ``nproc`` devices); worker
    ``i`` uses the ``i``-th. ``--standalone`` picks a free rendezvous port, so several DDP jobs
    can share a node.

    Raises:
        ReranklabError: a worker failed (torchrun's exit status is given).
    """
    command = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        f"--nproc-per-node={int(nproc)}",
        "-m",
        "reranklab.cli",
        *argv,
    ]
    env = {**os.environ, WORKER_ENV: "1", "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1")}
    log.info("launching %d DDP workers: %s", nproc, " ".join(command))
    returncode = subprocess.run(command, env=env, check=False).returncode
    if returncode != 0:
        raise ReranklabError(
            f"DDP training failed: torchrun exited with status {returncode} (see the workers' errors above)"
        )


def init_worker(device_setting: str = "auto") -> torch.device:
    """Join the process group of a torchrun worker and pick its device.

    Args:
        device_setting: ``training.device``; ``cpu`` (or no CUDA) uses gloo, else NCCL on
            GPU ``LOCAL_RANK``.

    Returns:
        The worker's device.
    """
    local_rank = int(os.environ["LOCAL_RANK"])
    use_cuda = device_setting != "cpu" and torch.cuda.is_available()
    if use_cuda:
        torch.cuda.set_device(local_rank)
    if not dist.is_initialized():
        dist.init_process_group("nccl" if use_cuda else "gloo")
    if dist.get_rank() != 0:
        # One log and one progress bar per job: rank 0's.
        logging.getLogger("reranklab").setLevel(logging.WARNING)
    return torch.device("cuda", local_rank) if use_cuda else torch.device("cpu")


def shutdown() -> None:
    """Leave the process group (after the last collective)."""
    if dist.is_available() and dist.is_initialized():
        dist.barrier()
        dist.destroy_process_group()


def shard(rows: Sequence[int], rank_: int, world: int) -> list[int]:
    """This rank's examples of a global batch: every ``world``-th, starting at ``rank_``.

    A batch smaller than the world (the last of an epoch) gives the ranks without an example
    its last one, so every rank runs the same number of backward passes.

    Example:
        >>> shard([10, 11, 12, 13, 14], 1, 2), shard([10], 1, 2)
        ([11, 13], [10])
    """
    return list(rows[rank_::world]) or list(rows[-1:])


class ShardedCollator:
    """Wraps a collator so each rank collates only its share of every batch."""

    def __init__(self, collate: Any, rank_: int, world: int) -> None:
        self._collate = collate
        self._rank = rank_
        self._world = world

    def __call__(self, rows: Sequence[int]) -> Any:
        return self._collate(shard(rows, self._rank, self._world))

    def __len__(self) -> int:
        return len(self._collate)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._collate, name)


def broadcast_parameters(model: nn.Module) -> None:
    """Give every rank rank 0's parameters and buffers."""
    with torch.no_grad():
        for tensor in model.state_dict().values():
            dist.broadcast(tensor, src=0)


def average_gradients(model: nn.Module) -> list[Any]:
    """Average each parameter's gradient over the ranks as soon as it is accumulated.

    Returns:
        The hook handles (``handle.remove()`` detaches them).
    """
    world = dist.get_world_size()

    def hook(parameter: torch.Tensor) -> None:
        if parameter.grad is not None:
            dist.all_reduce(parameter.grad, op=dist.ReduceOp.SUM)
            parameter.grad.div_(world)

    handles, seen = [], set()
    for parameter in model.parameters():
        if parameter.requires_grad and id(parameter) not in seen:
            seen.add(id(parameter))
            handles.append(parameter.register_post_accumulate_grad_hook(hook))
    return handles


def prepare(model: nn.Module, collate: Any) -> Any:
    """In a DDP worker: sync the parameters, average gradients, shard batches; else no-op.

    Returns:
        The collator to train with (``collate`` itself outside DDP).

    Example:
        >>> prepare(nn.Linear(2, 2), "collator")  # not in a process group: unchanged
        'collator'
    """
    if not is_active():
        return collate
    broadcast_parameters(model)
    average_gradients(model)
    log.info("DDP: rank %d of %d, backend %s", rank(), world_size(), dist.get_backend())
    return ShardedCollator(collate, rank(), world_size())
