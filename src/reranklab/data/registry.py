"""The dataset registry: one module per dataset registers one instance here."""

from __future__ import annotations

from reranklab.data.base import Dataset
from reranklab.errors import ConfigError

_DATASETS: dict[str, Dataset] = {}


def register_dataset(dataset_cls: type[Dataset]) -> type[Dataset]:
    """Class decorator: register an instance of ``dataset_cls`` under its ``name``."""
    instance = dataset_cls()
    if instance.name in _DATASETS:
        raise ValueError(f"dataset {instance.name!r} registered twice")
    _DATASETS[instance.name] = instance
    return dataset_cls


def get_dataset(name: str) -> Dataset:
    _load_builtin()
    try:
        return _DATASETS[name]
    except KeyError:
        raise ConfigError(
            f"unknown dataset {name!r}; known datasets: {', '.join(sorted(_DATASETS))}"
        ) from None


def dataset_names() -> list[str]:
    _load_builtin()
    return sorted(_DATASETS)


# Modules of reranklab.data that hold no dataset (helpers start with "_" and are skipped too).
_NOT_DATASETS = frozenset({"base", "download", "listing", "registry"})
_loaded = False


def _load_builtin() -> None:
    # Importing the modules registers them; done lazily to keep `import reranklab` light, and
    # by discovery so that adding a dataset module needs no edit here.
    global _loaded
    if _loaded:
        return
    import importlib
    import pkgutil
    from pathlib import Path

    # The dataset modules sit beside this one (found by path, not through the package's
    # __init__, which imports this module).
    package = __name__.rpartition(".")[0]
    for info in pkgutil.iter_modules([str(Path(__file__).parent)]):
        if not info.ispkg and not info.name.startswith("_") and info.name not in _NOT_DATASETS:
            importlib.import_module(f"{package}.{info.name}")
    _loaded = True
