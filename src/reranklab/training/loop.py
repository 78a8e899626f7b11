"""The training loop: run a :class:`~reranklab.training.plan.TrainingPlan`'s steps, tell its callbacks.

Every epoch takes the sampler's batches of that epoch (a pure function of seed and epoch, so a
resumed job skips the batches it already trained and continues in the same order), collates
them into micro batches (in ``training.dataloader_workers`` processes when > 0) and runs one
optimiser step per batch: forward/backward of each micro batch, clipping, the step, the
schedule. A step's loss stays on the device until a callback needs it or the epoch ends; then
the pending losses are read in one transfer. Everything else (log lines, the loss curve,
checkpoints, dev scoring, MLflow) is a :class:`~reranklab.training.callbacks.LoopCallback`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import torch

from reranklab.training.callbacks import LoopCallback
from reranklab.training.plan import TrainingPlan
from reranklab.training.state import TrainState
from reranklab.training.steps import PendingLosses, StepBatch, StepRunner, step_loader


def _steps(plan: TrainingPlan, batches: Sequence[Sequence[int]]) -> Iterator[StepBatch]:
    """The steps of ``batches``, collated (in ``dataloader_workers`` processes when > 0) into
    the micro batches of one step each."""
    steps = step_loader(
        batches,
        plan.step_collate,
        plan.settings.dataloader_workers,
        pin_memory=plan.device.type == "cuda",
    )
    # The loader's seed draw must not move the dropout RNG: exact resume.
    with torch.random.fork_rng(devices=[]):
        return iter(steps)


def run_loop(plan: TrainingPlan, callbacks: Sequence[LoopCallback]) -> TrainState:
    """Train ``plan`` from ``plan.state`` (step 0, or where a checkpointer restored it) to its end.

    Args:
        plan: what to train (:func:`~reranklab.training.plan.build_plan`).
        callbacks: told of the loop's progress, in this order at every hook; one that wants the
            losses of a step (``wants_losses``) makes the loop read them from the device first.

    Returns:
        ``plan.state`` after the last step: ``global_step``, ``losses`` (every step's); the
        model is left in eval mode.

    Example:
        >>> plan = build_plan(cell, examples, queries, corpus)  # doctest: +SKIP
        >>> speed = Throughput()  # doctest: +SKIP
        >>> run_loop(plan, [speed]).global_step, round(speed.pairs / speed.seconds)  # doctest: +SKIP
        (2504, 180)
    """
    state, model, steps_per_epoch = plan.state, plan.model, plan.steps_per_epoch
    scheduler, pairs_per_example = state.scheduler, plan.collate.pairs_per_example
    for callback in callbacks:
        callback.on_train_begin(plan)
    run_step = StepRunner(
        model,
        state.loss,
        state.optimizer,
        plan.precision,
        plan.settings.max_grad_norm,
        plan.device,
        scaler=state.scaler,
    )

    def record_loss(step: int, epoch: int, value: float, lr: float) -> None:
        state.losses.append(value)
        for callback in callbacks:
            callback.on_loss(step, epoch, value, lr)

    pending = PendingLosses(record_loss)
    model.train()
    for epoch in range(state.epoch, plan.epochs):
        if any(callback.should_stop(plan) for callback in callbacks):
            break
        state.epoch = epoch
        for callback in callbacks:
            callback.on_epoch_begin(plan)
        batches = plan.sampler.batches(epoch)
        steps = _steps(plan, batches[state.step_in_epoch :])
        for step_in_epoch, step in enumerate(steps, start=state.step_in_epoch):
            # Forward/backward of each micro batch, clip, optimiser step; the loss stays on the
            # device until a flush below reads the pending ones together.
            loss = run_step(step)
            scheduler.step()
            pending.add(state.global_step, epoch + 1, loss, scheduler.get_last_lr()[0])
            state.step_in_epoch = step_in_epoch + 1
            state.global_step += 1
            epoch_done = state.step_in_epoch == steps_per_epoch
            if epoch_done or any(callback.wants_losses(plan) for callback in callbacks):
                pending.flush()  # the one host sync of these steps
            pairs = len(batches[step_in_epoch]) * pairs_per_example
            for callback in callbacks:
                callback.on_step(plan, step, pairs)
            if epoch_done:
                for callback in callbacks:
                    callback.on_epoch_trained(plan)
            for callback in callbacks:
                callback.on_step_end(plan)
        pending.flush()
        state.step_in_epoch = 0
        for callback in callbacks:
            callback.on_epoch_end(plan)
    model.eval()
    for callback in callbacks:
        callback.on_train_end(plan)
    return state
