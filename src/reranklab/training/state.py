"""What a training job's loop state is, and the hook that checkpoints it.

A leaf of :mod:`reranklab.training`: the loop (:mod:`~reranklab.training.trainer`), the
checkpointer (:mod:`~reranklab.training.checkpoint`) and the model selection
(:mod:`~reranklab.training.validation`) all import it, and it imports none of them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import torch
from torch import nn


@dataclass
class TrainState:
    """Everything a checkpoint needs; the loop reads ``epoch``/``step_in_epoch`` to resume.

    Args:
        model, loss, optimizer, scheduler: the live training objects.
        epoch: the epoch being run (0-based).
        step_in_epoch: optimiser steps already done in ``epoch``.
        global_step: optimiser steps done in total.
        steps_per_epoch: optimiser steps per epoch (a checkpointer writes at epoch ends).
        losses: the loss of every step done so far.
        selection: the :class:`~reranklab.training.validation.ModelSelector` of a job that
            validates on dev (its ``state_dict`` is part of a checkpoint), else ``None``.
    """

    model: nn.Module
    loss: nn.Module
    optimizer: torch.optim.Optimizer
    scheduler: torch.optim.lr_scheduler.LRScheduler
    total_steps: int
    steps_per_epoch: int = 0
    epoch: int = 0
    step_in_epoch: int = 0
    global_step: int = 0
    losses: list[float] = field(default_factory=list)
    scaler: Any = None  # the fp16 GradScaler (training.precision), else None
    selection: Any = None  # the ModelSelector of a job with training.validation on, else None


class Checkpointer(Protocol):
    """Hook for checkpoint/resume; the default does nothing.

    The batch order of every epoch is a pure function of (seed, epoch), so a checkpointer that
    restores the model/optimizer/scheduler state and sets ``epoch``, ``step_in_epoch``,
    ``global_step`` and ``losses`` in :meth:`restore` makes the loop skip the batches already
    trained and continue with the same data order.
    """

    def restore(self, state: TrainState) -> None:
        """Called once before training; may load a checkpoint into ``state``."""

    def step_done(self, state: TrainState) -> None:
        """Called after every optimiser step (decide here whether to write a checkpoint)."""

    def finished(self, state: TrainState, model_dir: Path) -> None:
        """Called once the final model is saved (e.g. to delete checkpoints)."""


class NoCheckpointer:
    """The default :class:`Checkpointer`: train from scratch, write no checkpoints."""

    def restore(self, state: TrainState) -> None:
        return None

    def step_done(self, state: TrainState) -> None:
        return None

    def finished(self, state: TrainState, model_dir: Path) -> None:
        return None
