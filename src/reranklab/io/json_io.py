"""JSON files, written atomically and readably (sorted keys, indented)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from reranklab.errors import FormatError
from reranklab.io.atomic import atomic_write_text


def write_json(path: str | os.PathLike[str], obj: Any) -> None:
    atomic_write_text(path, json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False) + "\n")


def read_json(path: str | os.PathLike[str]) -> Any:
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise FormatError(path, exc.lineno, f"invalid JSON: {exc.msg}") from exc
