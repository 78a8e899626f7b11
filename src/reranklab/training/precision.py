"""Numeric precision of training and inference (``training.precision``).

``auto`` picks what is fast *and* safe on the device: bf16 autocast on a CUDA GPU that
supports it (Ampere and later: same exponent range as fp32, so no loss scaling), fp16
autocast with a ``GradScaler`` on older GPUs (V100, T4), and fp32 on CPU. On CPU, bf16
autocast may be asked for explicitly: it pays off on CPUs with AMX / AVX512-BF16 and is
emulated (slower) elsewhere, hence not the default. fp16 on CPU is refused: without loss
scaling it underflows and there is no CPU where it is faster than bf16.

Weights and the optimiser state stay fp32 in every mode (mixed precision, not half-precision
training); only the matmuls/attention inside ``autocast`` run in the low precision.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any

import torch

from reranklab.errors import ConfigError

PRECISIONS = ("auto", "fp32", "bf16", "fp16")
_DTYPES = {"fp32": None, "bf16": torch.bfloat16, "fp16": torch.float16}


@dataclass(frozen=True)
class Precision:
    """A resolved precision: the autocast dtype (``None`` = fp32) on one device type.

    Example:
        >>> p = resolve_precision("auto", torch.device("cpu"))
        >>> p.name, p.dtype, p.grad_scaler() is None
        ('fp32', None, True)
    """

    name: str
    device_type: str

    @property
    def dtype(self) -> torch.dtype | None:
        return _DTYPES[self.name]

    def autocast(self) -> contextlib.AbstractContextManager[Any]:
        """The autocast context of the forward pass (a no-op for fp32)."""
        if self.dtype is None:
            return contextlib.nullcontext()
        return torch.autocast(device_type=self.device_type, dtype=self.dtype)

    def grad_scaler(self) -> torch.amp.GradScaler | None:
        """A loss scaler for fp16 (its gradients underflow without one); ``None`` otherwise."""
        if self.name != "fp16":
            return None
        return torch.amp.GradScaler(self.device_type)


def cuda_supports_bf16(device: torch.device) -> bool:
    """True when the CUDA device has native bf16 (compute capability 8.0+)."""
    if device.type != "cuda" or not torch.cuda.is_available():
        return False
    major, _ = torch.cuda.get_device_capability(device)
    return major >= 8


def resolve_precision(setting: str, device: torch.device) -> Precision:
    """Turn ``training.precision`` into a :class:`Precision` for ``device``.

    Args:
        setting: ``auto``, ``fp32``, ``bf16`` or ``fp16``.
        device: the device that trains / scores.

    Raises:
        ConfigError: an unknown setting, bf16 on a GPU without it, or fp16 on CPU.

    Example:
        >>> resolve_precision("bf16", torch.device("cpu")).name
        'bf16'
    """
    if setting not in PRECISIONS:
        raise ConfigError(f"training.precision: {setting!r} is not one of {', '.join(PRECISIONS)}")
    if device.type not in ("cpu", "cuda"):
        # Other backends (mps, xpu): keep fp32 unless asked, and let torch say if it cannot.
        return Precision("fp32" if setting == "auto" else setting, device.type)
    if setting == "auto":
        if device.type == "cuda":
            return Precision("bf16" if cuda_supports_bf16(device) else "fp16", "cuda")
        return Precision("fp32", "cpu")
    if setting == "bf16" and device.type == "cuda" and not cuda_supports_bf16(device):
        raise ConfigError(
            f"training.precision: bf16 asked for, but {torch.cuda.get_device_name(device)} has no native bf16 (use fp16 or auto)"
        )
    if setting == "fp16" and device.type == "cpu":
        raise ConfigError(
            "training.precision: fp16 is for CUDA GPUs; on CPU use fp32 (default) or bf16"
        )
    return Precision(setting, device.type)
