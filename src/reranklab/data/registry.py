"""The dataset registry: one module per dataset registers one instance here.

Datasets made on demand are kept here too: an ir_datasets id (``irds:<id>``, made from its name)
and a collection of one's own (``local.<name>`` of a config, :func:`register_local`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from reranklab.data.base import Dataset
from reranklab.data.irds import IRDS_PREFIX, IrdsDataset
from reranklab.data.local import LocalDataset
from reranklab.errors import ConfigError

_DATASETS: dict[str, Dataset] = {}
# Datasets made on demand from their name (``irds:<id>``): not listed by dataset_names().
_ON_DEMAND: dict[str, Dataset] = {}


def register_dataset(dataset_cls: type[Dataset]) -> type[Dataset]:
    """Class decorator: register an instance of ``dataset_cls`` under its ``name``."""
    instance = dataset_cls()
    if instance.name in _DATASETS:
        raise ValueError(f"dataset {instance.name!r} registered twice")
    _DATASETS[instance.name] = instance
    return dataset_cls


def register_local(name: str, entry: Mapping[str, Any] | Any) -> Dataset:
    """Make the collection of one's own ``local.<name>`` a dataset, replacing an earlier
    entry of that name (each config that defines it registers it again).

    Raises:
        ConfigError: a wrong entry (naming its key), or the name of a built-in dataset.

    Example:
        >>> entry = {"queries": "q.tsv", "passages": "p.tsv", "qrels": "r.txt", "title": "FAQ"}
        >>> register_local("doctest-faq", entry).label
        'FAQ'
    """
    _load_builtin()
    if name in _DATASETS or name.startswith(IRDS_PREFIX):
        raise ConfigError(
            f"local.{name}: {name!r} is the name of a built-in dataset; give the collection a name of its own"
        )
    _ON_DEMAND[name] = LocalDataset(name, entry)
    return _ON_DEMAND[name]


def local_names() -> tuple[str, ...]:
    """The collections of one's own registered so far in this process."""
    return tuple(n for n, d in _ON_DEMAND.items() if isinstance(d, LocalDataset))


def get_dataset(name: str, local: Mapping[str, Any] | None = None) -> Dataset:
    """The dataset called ``name``: a registered one, an ir_datasets id ``irds:<id>``, or a
    collection of one's own (registered from its entry, here ``local``, or before).

    Raises:
        ConfigError: an unknown name (the known ones are listed), an ``irds:`` id that
            ir_datasets lacks (or without ir_datasets installed), or a wrong ``local`` entry.
    """
    if local is not None:
        return register_local(name, local)
    if name.startswith(IRDS_PREFIX):
        if name not in _ON_DEMAND:
            _ON_DEMAND[name] = IrdsDataset(name)
        return _ON_DEMAND[name]
    _load_builtin()
    try:
        return _DATASETS[name]
    except KeyError:
        if name in _ON_DEMAND:
            return _ON_DEMAND[name]
        raise ConfigError(
            f"unknown dataset {name!r}; known datasets: {', '.join(sorted(_DATASETS))}"
            f" (or any ir_datasets id as {IRDS_PREFIX}<id>, or a collection of one's own defined"
            " under local.<name>)"
        ) from None


def dataset_names() -> list[str]:
    _load_builtin()
    return sorted(_DATASETS)


def on_demand_names(names: Iterable[object]) -> tuple[str, ...]:
    """The names among ``names`` of datasets made on demand (``irds:<id>``), once each, in order.

    Example:
        >>> on_demand_names(["wikiqa", "irds:antique/test", 3, "irds:antique/test"])
        ('irds:antique/test',)
    """
    found = (n for n in names if isinstance(n, str) and n.startswith(IRDS_PREFIX))
    return tuple(dict.fromkeys(found))


# Modules of reranklab.data that hold no dataset (helpers start with "_" and are skipped too).
_NOT_DATASETS = frozenset({"base", "download", "irds", "listing", "local", "registry"})
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
