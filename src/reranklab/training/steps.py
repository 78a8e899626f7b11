"""One optimiser step: micro batches, DataLoader workers, mixed precision, clipping.

``training.batch_size`` is the number of examples per optimiser step (what the papers
report); ``training.micro_batch_size`` is how many of them go through the model at once. A
step of B examples is cut into ``ceil(B / micro)`` micro batches whose losses are weighted by
their share of the step (``n_i / B``) before ``backward``, so the accumulated gradient is the
gradient of the mean loss over the whole step: results do not depend on how much fits in
memory (up to float rounding; exactly so for losses that are means over the batch's
examples, as every registered loss is; a loss coupling examples of a batch, e.g. in-batch
negatives, would see smaller batches). Micro batches are cut from the step's length-grouped
rows, so each is padded to its own longest pair.

Collation (padding, tensor building) runs in ``training.dataloader_workers`` DataLoader worker
processes when > 0, overlapping the model's compute; 0 collates in the main process.
"""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from reranklab.errors import ConfigError
from reranklab.features.batch import to_device
from reranklab.training.precision import Precision

log = logging.getLogger(__name__)


def count_tokens(batch: Any) -> tuple[int, int]:
    """``(real, padded)`` word pieces of a collated batch: the sum and size of its attention masks.

    Example:
        >>> count_tokens({"features": {"attention_mask": torch.tensor([[1, 1, 0], [1, 0, 0]])}})
        (3, 6)
    """
    if isinstance(batch, Mapping):
        real = padded = 0
        for key, value in batch.items():
            if key == "attention_mask" and isinstance(value, torch.Tensor):
                real += int(value.sum())
                padded += int(value.numel())
            else:
                r, p = count_tokens(value)
                real += r
                padded += p
        return real, padded
    if isinstance(batch, list | tuple):
        sums = [count_tokens(item) for item in batch]
        return sum(r for r, _ in sums), sum(p for _, p in sums)
    return 0, 0


def _pin(obj: Any) -> Any:
    if isinstance(obj, torch.Tensor):
        return obj.pin_memory()
    if isinstance(obj, Mapping):
        return {key: _pin(value) for key, value in obj.items()}
    return obj


@dataclass
class StepBatch:
    """The collated micro batches of one optimiser step.

    Args:
        examples: examples in the step.
        micro: ``(examples, batch)`` of each micro batch, in order.
        tokens: real (non-padding) word pieces of the step.
        padded_tokens: word pieces the model computes, padding included.
    """

    examples: int
    micro: list[tuple[int, Any]]
    tokens: int = 0
    padded_tokens: int = 0

    def pin_memory(self) -> StepBatch:
        """Page-locked copies (the DataLoader's pin-memory thread calls this for CUDA)."""
        return StepBatch(
            self.examples, [(n, _pin(b)) for n, b in self.micro], self.tokens, self.padded_tokens
        )


class StepCollator:
    """Collate a step's example rows into micro batches (picklable, so it runs in workers).

    Args:
        collate: the variant's collator (rows -> batch).
        micro_batch_size: examples per forward/backward; ``None``/0 = the whole step at once.

    Example:
        >>> collate = lambda rows: {"attention_mask": torch.ones(len(rows), 3, dtype=torch.long)}
        >>> step = StepCollator(collate, micro_batch_size=4)([0, 1, 2, 3, 4, 5])
        >>> [n for n, _ in step.micro], step.examples, step.tokens
        ([4, 2], 6, 18)
    """

    def __init__(
        self, collate: Callable[[Sequence[int]], Any], micro_batch_size: int | None = None
    ) -> None:
        self.collate = collate
        self.micro_batch_size = int(micro_batch_size or 0)

    def __call__(self, rows: Sequence[int]) -> StepBatch:
        rows = list(rows)
        size = self.micro_batch_size if 0 < self.micro_batch_size < len(rows) else len(rows)
        micro = [
            (len(rows[i : i + size]), self.collate(rows[i : i + size]))
            for i in range(0, len(rows), size)
        ]
        tokens, padded = count_tokens([batch for _, batch in micro])
        return StepBatch(len(rows), micro, tokens, padded)


def accumulation_steps(batch_size: int, micro_batch_size: int | None) -> int:
    """Micro batches per optimiser step of ``batch_size`` examples.

    Example:
        >>> accumulation_steps(16, None), accumulation_steps(16, 4), accumulation_steps(16, 5)
        (1, 4, 4)
    """
    if not micro_batch_size or micro_batch_size >= batch_size:
        return 1
    return math.ceil(batch_size / micro_batch_size)


def step_loader(
    batches: Sequence[Sequence[int]],
    collate: StepCollator,
    workers: int = 0,
    pin_memory: bool = False,
) -> Iterable[StepBatch]:
    """The collated steps of ``batches``, in order, collated by ``workers`` processes (0 = here).

    Args:
        batches: each step's example rows (e.g. the sampler's batches of an epoch).
        collate: the step collator.
        workers: DataLoader worker processes (``training.dataloader_workers``).
        pin_memory: page-locked host memory, for asynchronous copies to a GPU.

    Example:
        >>> collate = StepCollator(lambda rows: {"x": torch.tensor(rows, dtype=torch.float)})
        >>> [step.micro[0][1]["x"].tolist() for step in step_loader([[0, 1], [2]], collate)]
        [[0.0, 1.0], [2.0]]
    """
    if workers < 0:
        raise ConfigError(f"training.dataloader_workers: {workers} is negative")
    if workers > 0:
        # The fast tokenizer's thread pool was used before the fork; the workers never tokenise.
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    return torch.utils.data.DataLoader(
        list(batches),
        batch_size=None,  # each item is a whole step; the collator does the batching
        shuffle=False,
        collate_fn=collate,
        num_workers=int(workers),
        pin_memory=pin_memory,
        prefetch_factor=4 if workers > 0 else None,
    )


class StepRunner:
    """Forward/backward of a step's micro batches, then clipping and the optimiser step.

    Args:
        model: the model (its parameters are clipped).
        loss: the variant's loss module (``loss(batch)`` -> scalar mean over the batch).
        optimizer: the optimiser.
        precision: autocast dtype and, for fp16, the gradient scaler.
        max_grad_norm: clipping norm (0 = none).
        device: where batches go.
        scaler: the fp16 gradient scaler (default: ``precision.grad_scaler()``); pass the
            one a checkpoint restores.

    Example:
        >>> from reranklab.training.precision import resolve_precision
        >>> model, cpu = nn.Linear(1, 1, bias=False), torch.device("cpu")
        >>> _ = nn.init.ones_(model.weight)
        >>> loss = lambda batch: model(batch["x"]).pow(2).mean()
        >>> run_step = StepRunner(model, loss, torch.optim.SGD(model.parameters(), lr=0.1), resolve_precision("fp32", cpu), 0.0, cpu)
        >>> step = StepCollator(lambda rows: {"x": torch.ones(len(rows), 1)}, micro_batch_size=1)([0, 1])
        >>> float(run_step(step)), round(model.weight.item(), 3)  # mean loss 1.0; gradient 2 w = 2
        (1.0, 0.8)
    """

    def __init__(
        self,
        model: nn.Module,
        loss: nn.Module,
        optimizer: torch.optim.Optimizer,
        precision: Precision,
        max_grad_norm: float,
        device: torch.device,
        scaler: torch.amp.GradScaler | None = None,
    ) -> None:
        self.model = model
        self.loss = loss
        self.optimizer = optimizer
        self.precision = precision
        self.scaler = scaler if scaler is not None else precision.grad_scaler()
        self.max_grad_norm = float(max_grad_norm or 0.0)
        self.device = device

    def __call__(self, step: StepBatch) -> torch.Tensor:
        """Run the step; returns its loss (the mean over its examples) as a 0-d tensor on the
        device: reading it as a float waits for the device, so the caller reads many at once
        (:class:`PendingLosses`)."""
        self.optimizer.zero_grad(set_to_none=True)
        total = None
        for examples, batch in step.micro:
            with self.precision.autocast():
                value = self.loss(to_device(batch, self.device))
            weighted = value * (examples / step.examples)
            (self.scaler.scale(weighted) if self.scaler is not None else weighted).backward()
            total = weighted.detach() if total is None else total + weighted.detach()
        if self.scaler is not None:
            self.scaler.unscale_(self.optimizer)
        if self.max_grad_norm > 0:
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.max_grad_norm)
        if self.scaler is not None:
            self.scaler.step(self.optimizer)
            self.scaler.update()
        else:
            self.optimizer.step()
        return total if total is not None else torch.tensor(float("nan"))


class PendingLosses:
    """Step losses left on the device until they are needed, then read in one transfer.

    ``float(loss)`` after every step makes the host wait for the device, so the next step's
    kernels are only queued once the GPU has gone idle. The trainer adds each step's loss here
    and flushes when a value is needed (a log line, a loss-curve point, a checkpoint, an epoch
    end): one host sync per flush. Each value is checked to be finite and handed to
    ``on_value(step, epoch, value, lr)`` in step order, as if it had been read at once.

    Example:
        >>> seen = []
        >>> pending = PendingLosses(lambda *args: seen.append(args))
        >>> pending.add(0, 1, torch.tensor(0.5), 1e-5); pending.add(1, 1, torch.tensor(0.25), 1e-5)
        >>> pending.flush(); seen
        [(0, 1, 0.5, 1e-05), (1, 1, 0.25, 1e-05)]
        >>> pending.add(2, 1, torch.tensor(float("nan")), 1e-5); pending.flush()
        Traceback (most recent call last):
        ...
        FloatingPointError: training loss became nan at step 2 (lower training.learning_rate?)
    """

    def __init__(self, on_value: Callable[[int, int, float, float], None]) -> None:
        self.on_value = on_value
        self._steps: list[tuple[int, int, float]] = []
        self._losses: list[torch.Tensor] = []

    def __len__(self) -> int:
        return len(self._steps)

    def add(self, step: int, epoch: int, loss: torch.Tensor, lr: float) -> None:
        """Keep ``loss`` (0-d, on any device) of optimiser step ``step`` (0-based) for later."""
        self._steps.append((step, epoch, lr))
        self._losses.append(loss.detach().float())

    def flush(self) -> None:
        """Read every kept loss (one device sync) and pass each on, oldest first."""
        if not self._steps:
            return
        values = torch.stack(self._losses).tolist()
        steps = self._steps
        self._steps, self._losses = [], []
        for (step, epoch, lr), value in zip(steps, values, strict=True):
            if not math.isfinite(value):
                raise FloatingPointError(
                    f"training loss became {value} at step {step} (lower training.learning_rate?)"
                )
            self.on_value(step, epoch, value, lr)


def enable_gradient_checkpointing(model: nn.Module) -> bool:
    """Recompute the encoder's activations in the backward pass instead of storing them.

    Roughly a third more compute for far less activation memory (long inputs, big batches on
    small GPUs). Uses the non-reentrant implementation, which is exact (same gradients) and
    works with frozen inputs.

    Returns:
        True when a Hugging Face encoder inside ``model`` took it.

    Raises:
        ConfigError: nothing in ``model`` supports gradient checkpointing.
    """
    enabled = False
    for module in model.modules():
        if not getattr(module, "supports_gradient_checkpointing", False):
            continue
        # transformers 5 renamed it (the old name warns); 4.x only has the old one.
        if callable(getattr(module, "activation_checkpointing_enable", None)):
            module.activation_checkpointing_enable(
                activation_checkpointing_kwargs={"use_reentrant": False}
            )
            enabled = True
        elif callable(getattr(module, "gradient_checkpointing_enable", None)):
            module.gradient_checkpointing_enable(
                gradient_checkpointing_kwargs={"use_reentrant": False}
            )
            enabled = True
    if not enabled:
        raise ConfigError(
            f"training.gradient_checkpointing: the model ({type(model).__name__}) has no encoder that supports it"
        )
    return enabled


def non_embedding_parameters(model: nn.Module) -> int:
    """Parameters outside ``nn.Embedding`` tables: the ``N`` of the ``6 N`` FLOPs per token.

    Embedding look-ups are gathers, not matmuls, so they are left out (as Kaplan et al.).

    Example:
        >>> non_embedding_parameters(nn.Sequential(nn.Embedding(10, 4), nn.Linear(4, 2)))
        10
    """
    embedded = {
        id(p)
        for m in model.modules()
        if isinstance(m, nn.Embedding)
        for p in m.parameters(recurse=False)
    }
    seen: set[int] = set()
    total = 0
    for parameter in model.parameters():
        if id(parameter) in seen or id(parameter) in embedded:
            continue
        seen.add(id(parameter))
        total += parameter.numel()
    return total
