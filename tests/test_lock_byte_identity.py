"""What makes the prepared data byte-identical across machines (given the locked versions).

The quick start's ``results/data`` once differed by 3 bytes between two machines: its raw
``manifest.json`` named where the answers file was copied from, the mirror
(``mirror:insuranceqa_v2/...``) where ``RERANKLAB_MIRROR`` was set, else the installed package.
A ``package:`` file is now always taken from the package when it is installed.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest

from reranklab.data.base import Dataset, Prepared, RawFile
from reranklab.data.download import fetch_dataset

SHIPPED = "package:reranklab.io/atomic.py"
FAST: dict[str, Any] = {"backoff": 0.0, "timeout": 5.0, "progress": False}


class _OneFile(Dataset):
    name = "onefile"
    title = "onefile"
    source = "tests"
    licence = "none"
    citation = "none"
    protocol = None  # type: ignore[assignment]

    def __init__(self, *files: RawFile) -> None:
        self.files = files

    def parse(self, raw_dir: Path, options: dict[str, Any]) -> Prepared:  # pragma: no cover
        raise NotImplementedError


def _shipped_bytes() -> bytes:
    import reranklab.io.atomic as shipped

    return Path(shipped.__file__).read_bytes()


def _spec(url: str = SHIPPED) -> RawFile:
    data = _shipped_bytes()
    return RawFile("atomic.py", url, size=len(data), sha256=hashlib.sha256(data).hexdigest())


def test_manifest_is_the_same_with_or_without_a_mirror(tmp_path: Path) -> None:
    mirror = tmp_path / "mirror"
    (mirror / "onefile").mkdir(parents=True)
    (mirror / "onefile" / "atomic.py").write_bytes(_shipped_bytes())
    without = tmp_path / "without"
    with_mirror = tmp_path / "with"
    fetch_dataset(_OneFile(_spec()), without, None, **FAST)
    fetch_dataset(_OneFile(_spec()), with_mirror, str(mirror), **FAST)
    manifest = (without / "manifest.json").read_bytes()
    assert manifest == (with_mirror / "manifest.json").read_bytes()
    assert SHIPPED.encode() in manifest
    # Run again over the files already there: the manifest keeps its bytes.
    fetch_dataset(_OneFile(_spec()), with_mirror, str(mirror), **FAST)
    assert (with_mirror / "manifest.json").read_bytes() == manifest


def test_the_mirror_serves_a_package_file_whose_package_is_absent(tmp_path: Path) -> None:
    url = "package:reranklab_absent_package/atomic.py"
    mirror = tmp_path / "mirror"
    (mirror / "onefile").mkdir(parents=True)
    (mirror / "onefile" / "atomic.py").write_bytes(_shipped_bytes())
    manifest = fetch_dataset(_OneFile(_spec(url)), tmp_path / "raw", str(mirror), **FAST)
    assert manifest["files"][0]["source"] == "mirror:onefile/atomic.py"


def test_without_package_or_mirror_the_package_is_named(tmp_path: Path) -> None:
    from reranklab.errors import DownloadError

    url = "package:reranklab_absent_package/atomic.py"
    with pytest.raises(DownloadError, match="reranklab_absent_package"):
        fetch_dataset(_OneFile(_spec(url)), tmp_path / "raw", None, **FAST)


def test_corpus_parquet_bytes_do_not_depend_on_threads(tmp_path: Path) -> None:
    import pyarrow as pa

    from reranklab.io import write_corpus

    corpus = {f"p{i}": f"passage {i} " + "word " * (i % 17) for i in range(3000)}
    written = []
    cpus, io_threads = pa.cpu_count(), pa.io_thread_count()
    for threads in (1, 2):
        pa.set_cpu_count(threads)
        pa.set_io_thread_count(threads)
        path = tmp_path / f"corpus-{threads}.parquet"
        write_corpus(path, corpus)
        written.append(path.read_bytes())
    pa.set_cpu_count(cpus)
    pa.set_io_thread_count(io_threads)
    assert written[0] == written[1]
