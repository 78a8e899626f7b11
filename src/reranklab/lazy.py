"""Package attributes read from their submodules when first asked for (PEP 562).

A package's ``__init__`` that imports its parts eagerly makes every importer pay for all of them:
``reranklab.config`` reads ``evaluation.protocol`` in every job, and the workflow plans with
``report.analyses.outputs`` in every Snakemake process, while only a few steps need pytrec_eval,
scipy or torch.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from importlib import import_module
from typing import Any


def lazy_exports(package: str, homes: Mapping[str, str]) -> Callable[[str], Any]:
    """A module-level ``__getattr__`` for ``package`` that reads each name from its submodule.

    Args:
        package: the package's ``__name__``.
        homes: each exported name and the submodule (relative to ``package``) that defines it.

    Returns:
        The function to bind as the package's ``__getattr__``; any other name is an
        ``AttributeError``, as for a module without the hook.

    Example:
        >>> read = lazy_exports("reranklab.evaluation", {"NAMES": "measures"})
        >>> "MAP" in read("NAMES")
        True
        >>> read("nothing")
        Traceback (most recent call last):
        ...
        AttributeError: module 'reranklab.evaluation' has no attribute 'nothing'
    """

    def __getattr__(name: str) -> Any:
        if name not in homes:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(import_module(f"{package}.{homes[name]}"), name)

    return __getattr__
