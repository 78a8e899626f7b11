"""What the training loop reports to, and what it does besides stepping: its callbacks.

The loop (:mod:`reranklab.training.loop`) only runs steps; everything else a training job does
while it trains is a :class:`LoopCallback` here: the progress bar and log lines
(:class:`ProgressLog`), the loss curve of ``train_stats.json`` (:class:`LossCurve`), the
throughput (:class:`Throughput`, what ``reranklab bench`` times), the dev evaluation and model
selection of every epoch (:class:`Validation`), the checkpoints (:class:`Checkpoints`) and the
public :class:`TrainingCallback` hooks, e.g. MLflow's (:class:`Report`).
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Protocol

import torch
from tqdm.auto import tqdm

from reranklab.progress import Status
from reranklab.training.plan import TrainingPlan
from reranklab.training.state import Checkpointer
from reranklab.training.steps import StepBatch
from reranklab.training.validation import DevSet, validate_epoch

# A training job's lines keep the logger name they have always had (log filters select it).
log = logging.getLogger("reranklab.training.trainer")

LOSS_CURVE_POINTS = 100  # at most this many (step, mean loss) points in train_stats.json


class TrainingCallback(Protocol):
    """What :func:`~reranklab.training.trainer.train_model` reports while it trains (e.g. to
    MLflow: :class:`reranklab.tracking.live.LiveRun`).

    Every value handed over is a Python number the loop already holds on the CPU: the step
    losses come in bursts, each time the loop reads its pending losses from the device in one
    transfer (:class:`~reranklab.training.steps.PendingLosses`: at log lines, loss-curve
    points, checkpoints and epoch ends), in step order; the learning rate is the scheduler's.
    A callback adds no device synchronisation. A hook should only record and return; slow
    work (writing to a store) belongs in its own thread.
    """

    def on_train_begin(self, info: Mapping[str, Any]) -> None:
        """The loop is set up: ``total_steps``, ``steps_per_epoch``, ``warmup_steps``,
        ``resumed_from_step`` and ``restored_losses`` (the losses of a resumed job's steps)."""

    def on_step(self, step: int, epoch: int, loss: float, learning_rate: float) -> None:
        """Optimiser step ``step`` (1-based, global) of epoch ``epoch`` (1-based) is done."""

    def on_epoch_end(self, epoch: int, step: int, dev: Mapping[str, Any] | None) -> None:
        """Epoch ``epoch`` is done; ``dev``: its dev measures when the job validates."""

    def on_train_end(self, stats: dict[str, Any]) -> None:
        """Training is done; ``stats`` are about to be saved (a callback may add to them)."""

    def on_saved(self, out_dir: Path) -> None:
        """The model and its statistics are saved in ``out_dir``."""


class LoopCallback:
    """A hook of :func:`~reranklab.training.loop.run_loop`; every method does nothing here.

    The loop calls each hook on its callbacks in their list order. Within a step: ``on_step``
    (all callbacks), then at the epoch's last step ``on_epoch_trained`` (all), then
    ``on_step_end`` (all): what a checkpoint written there holds is complete. Hooks read the
    step counters from ``plan.state`` (``epoch`` 0-based, ``global_step`` the steps done).
    """

    def on_train_begin(self, plan: TrainingPlan) -> None:
        """Before the first step (after a checkpointer restored ``plan.state``)."""

    def should_stop(self, plan: TrainingPlan) -> bool:
        """Asked before every epoch; True ends training (early stopping)."""
        return False

    def on_epoch_begin(self, plan: TrainingPlan) -> None:
        """Epoch ``plan.state.epoch`` starts (or resumes)."""

    def wants_losses(self, plan: TrainingPlan) -> bool:
        """True when this step's hooks read ``plan.state.losses`` (the loop then reads the
        pending losses from the device: one sync; it always does at an epoch's end)."""
        return False

    def on_loss(self, step: int, epoch: int, loss: float, learning_rate: float) -> None:
        """The loss of step ``step`` (0-based) of epoch ``epoch`` (1-based) is read, in step order."""

    def on_step(self, plan: TrainingPlan, step: StepBatch, pairs: int) -> None:
        """Optimiser step ``plan.state.global_step`` is done: ``step`` its batch, ``pairs`` its pairs."""

    def on_epoch_trained(self, plan: TrainingPlan) -> None:
        """The step just done is the last one of epoch ``plan.state.epoch``."""

    def on_step_end(self, plan: TrainingPlan) -> None:
        """Every hook of the step has run (the moment to write a checkpoint)."""

    def on_epoch_end(self, plan: TrainingPlan) -> None:
        """The epoch's steps are done and their losses read."""

    def on_train_end(self, plan: TrainingPlan) -> None:
        """The last epoch is done; the model is in eval mode."""


def _mean_of_last(losses: list[float], count: int) -> float:
    window = losses[-count:]
    return sum(window) / len(window)


class ProgressLog(LoopCallback):
    """The tqdm bar, the job's status lines and ~20 log lines of the mean loss."""

    def __init__(self, plan: TrainingPlan, progress: bool) -> None:
        self.progress = progress
        self.log_every = max(1, plan.total_steps // 20)
        self.bar: Any = None
        self.status: Status | None = None

    def on_train_begin(self, plan: TrainingPlan) -> None:
        name, settings, total = plan.spec.name, plan.settings, plan.total_steps
        log.info(
            "training %s on %s: %d examples (%d distinct pairs, %s, max_length %d), %d epochs x %d steps (%d warm-up), device %s, %d threads",
            name,
            settings.encoder,
            len(plan.collate),
            len(plan.features),
            plan.features.summary(),
            plan.max_length,
            plan.epochs,
            plan.steps_per_epoch,
            plan.warmup_steps,
            plan.device,
            torch.get_num_threads(),
        )
        done = plan.state.global_step
        self.bar = tqdm(
            total=total,
            initial=done,
            desc=f"train {name}",
            unit="step",
            disable=not self.progress,
            mininterval=1.0,
        )
        self.status = Status(
            f"train {name}",
            total,
            rate_unit="pairs",
            initial=done,
            enabled=self.progress and total > 0,  # a zero-shot model runs no step: nothing to say
        )

    def _logs(self, plan: TrainingPlan) -> bool:
        done = plan.state.global_step
        return done % self.log_every == 0 or done == plan.total_steps

    def wants_losses(self, plan: TrainingPlan) -> bool:
        return self._logs(plan)

    def on_step(self, plan: TrainingPlan, step: StepBatch, pairs: int) -> None:
        self.bar.update(1)
        if self.status is not None:
            self.status.update(1, items=pairs)
        if self._logs(plan):
            state = plan.state
            mean = _mean_of_last(state.losses, self.log_every)
            self.bar.set_postfix(loss=f"{mean:.4f}")
            log.info(
                "step %d/%d epoch %d loss %.4f lr %.3g",
                state.global_step,
                plan.total_steps,
                state.epoch + 1,
                mean,
                state.scheduler.get_last_lr()[0],
            )

    def on_train_end(self, plan: TrainingPlan) -> None:
        self.bar.close()
        if self.status is not None:
            self.status.close()


class LossCurve(LoopCallback):
    """At most :data:`LOSS_CURVE_POINTS` ``[step, mean loss of the steps since the last point]``."""

    def __init__(self, plan: TrainingPlan) -> None:
        self.every = max(1, math.ceil(plan.total_steps / LOSS_CURVE_POINTS))
        self.points: list[list[float]] = []

    def _due(self, done: int, total: int) -> bool:
        return done % self.every == 0 or done == total

    def on_train_begin(self, plan: TrainingPlan) -> None:
        # A resumed run: the curve of the restored steps.
        losses = plan.state.losses
        for done in range(1, plan.state.global_step + 1):
            if self._due(done, plan.total_steps):
                window = losses[max(0, done - self.every) : done]
                self.points.append([done, sum(window) / len(window)])

    def wants_losses(self, plan: TrainingPlan) -> bool:
        return self._due(plan.state.global_step, plan.total_steps)

    def on_step(self, plan: TrainingPlan, step: StepBatch, pairs: int) -> None:
        if self._due(plan.state.global_step, plan.total_steps):
            self.points.append(
                [plan.state.global_step, _mean_of_last(plan.state.losses, self.every)]
            )


class Throughput(LoopCallback):
    """Pairs, tokens and seconds of the steps this process ran, in all and per epoch.

    Args:
        untimed: the seconds spent so far inside the loop on work left out of the throughput
            (the dev scoring of :class:`Validation`); default none.

    ``epoch_speed`` holds the steps and seconds of each epoch: BERT-DMN's Table 3 compares
    batches/s per epoch of the full and lite models.
    """

    def __init__(self, untimed: Callable[[], float] | None = None) -> None:
        self.untimed = untimed or (lambda: 0.0)
        self.pairs = self.tokens = self.padded_tokens = 0
        self.seconds = 0.0
        self.epoch_speed: list[dict[str, float]] = []
        self._started = self._epoch_started = self._untimed_before = 0.0
        self._epoch_first_step = self._epoch_first_pairs = 0

    def on_train_begin(self, plan: TrainingPlan) -> None:
        self._started = time.perf_counter()

    def on_epoch_begin(self, plan: TrainingPlan) -> None:
        self._epoch_started, self._epoch_first_step = time.perf_counter(), plan.state.global_step
        self._epoch_first_pairs = self.pairs
        self._untimed_before = self.untimed()

    def on_step(self, plan: TrainingPlan, step: StepBatch, pairs: int) -> None:
        self.pairs += pairs
        self.tokens += step.tokens
        self.padded_tokens += step.padded_tokens

    def on_epoch_end(self, plan: TrainingPlan) -> None:
        seconds = (
            time.perf_counter() - self._epoch_started - (self.untimed() - self._untimed_before)
        )
        steps = plan.state.global_step - self._epoch_first_step
        pairs = self.pairs - self._epoch_first_pairs
        if steps:
            # Pairs a second as well as batches: two models trained at different batch sizes
            # compare only per pair (a batch of 32 is not a batch of 8).
            self.epoch_speed.append(
                {
                    "epoch": plan.state.epoch + 1,
                    "steps": steps,
                    "pairs": pairs,
                    "seconds": seconds,
                    "batches_per_s": steps / seconds if seconds > 0 else None,
                    "pairs_per_s": pairs / seconds if seconds > 0 else None,
                }
            )

    def on_train_end(self, plan: TrainingPlan) -> None:
        self.seconds = time.perf_counter() - self._started - self.untimed()


class Validation(LoopCallback):
    """Score the dev set after every epoch, stop early on patience, restore the chosen epoch.

    Args:
        dev: the dev set ``plan.scorer`` scores (its size goes into the summary).

    After training, ``selection`` is the ``validation`` block of ``train_stats.json``.
    """

    def __init__(self, dev: DevSet) -> None:
        self.dev = dev
        self.seconds = 0.0  # dev scoring, left out of the training throughput
        self.selection: dict[str, Any] | None = None

    def should_stop(self, plan: TrainingPlan) -> bool:
        # Also when resumed after the stopping epoch.
        return plan.selector is not None and plan.selector.stopped_early

    def on_epoch_trained(self, plan: TrainingPlan) -> None:
        if plan.selector is None or plan.scorer is None:
            return
        # Before the epoch-end checkpoint (on_step_end), so that it holds this epoch's result.
        started = time.perf_counter()
        state = plan.state
        validate_epoch(plan.scorer, plan.selector, plan.model, state.epoch + 1, state.global_step)
        self.seconds += time.perf_counter() - started

    def on_train_end(self, plan: TrainingPlan) -> None:
        selector = plan.selector
        if selector is None:
            return
        steps_per_epoch = plan.steps_per_epoch
        epochs_trained = plan.state.global_step // steps_per_epoch if steps_per_epoch else 0
        chosen = selector.finish(plan.model, epochs_trained)
        self.selection = {
            **selector.summary(chosen, plan.epochs, self.dev, len(plan.counted_dev)),
            "seconds": self.seconds,
        }
        log.info(
            "model selection: saving epoch %d of %d (%s); %s",
            chosen,
            epochs_trained,
            self.selection["chosen_because"],
            self.selection["stop_reason"],
        )


class Checkpoints(LoopCallback):
    """Hand every step to the :class:`~reranklab.training.state.Checkpointer` (it decides
    when to write); its ``every`` steps need their losses read (a checkpoint holds them)."""

    def __init__(self, checkpointer: Checkpointer) -> None:
        self.checkpointer = checkpointer
        self.every = int(getattr(checkpointer, "every", 0) or 0)

    def wants_losses(self, plan: TrainingPlan) -> bool:
        return self.every > 0 and plan.state.global_step % self.every == 0

    def on_step_end(self, plan: TrainingPlan) -> None:
        self.checkpointer.step_done(plan.state)


class Report(LoopCallback):
    """Pass the loop's progress on to a public :class:`TrainingCallback` (e.g. MLflow's)."""

    def __init__(self, callback: TrainingCallback) -> None:
        self.callback = callback

    def on_train_begin(self, plan: TrainingPlan) -> None:
        state = plan.state
        self.callback.on_train_begin(
            {
                "total_steps": plan.total_steps,
                "steps_per_epoch": plan.steps_per_epoch,
                "warmup_steps": plan.warmup_steps,
                "resumed_from_step": state.global_step,
                "restored_losses": list(state.losses),
            }
        )

    def on_loss(self, step: int, epoch: int, loss: float, learning_rate: float) -> None:
        self.callback.on_step(step + 1, epoch, loss, learning_rate)

    def on_epoch_trained(self, plan: TrainingPlan) -> None:
        selector = plan.selector
        dev = selector.history[-1] if selector and selector.history else None
        self.callback.on_epoch_end(plan.state.epoch + 1, plan.state.global_step, dev)
