"""Reading a variant's own settings from the resolved ``training`` block (a helper, not a variant)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def setting(training: Mapping[str, Any], key: str, default: Any) -> Any:
    """``training[key]``, or ``default`` when it is missing or null (the schema's "variant default").

    Example:
        >>> setting({"episodes": None}, "episodes", 4), setting({"head_dropout": 0.0}, "head_dropout", 0.1)
        (4, 0.0)
    """
    value = training.get(key)
    return default if value is None else value
