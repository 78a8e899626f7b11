"""Loading a file that is not in a package (scripts/, test fixtures' generators) as a module."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType


def load_script(path: Path, name: str) -> ModuleType:
    """The Python file at ``path``, executed as module ``name``."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    # Registered first: a dataclass of the script looks its module up while it is made.
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
