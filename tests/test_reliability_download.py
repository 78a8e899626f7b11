"""The download step killed at any point, then run again, writes the same raw/manifest.json as
a run that was never killed: each file's source is the one it was verified against, not
"present" (which would change the manifest's bytes and lose the file's provenance)."""

from __future__ import annotations

import hashlib
import io
import signal
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest

from reranklab.data.base import RawFile
from reranklab.data.download import fetch_dataset

# Three files from three kinds of source: a plain mirror file, a member of a mirror archive, a
# file shipped in the package (the package file has no published checksum: trusted on first use).
_ARCHIVE_MEMBER = b"judged pairs\n"
_PLAIN = b"q1\twhat is it\n"

_CHILD = textwrap.dedent(
    """
    import os, signal, sys
    from reranklab.data import download
    from tests.test_reliability_download import dataset
    raw, mirror, kill_after = sys.argv[1], sys.argv[2], int(sys.argv[3])
    fetch = download._Fetcher.fetch
    done = []

    def fetch_then_die(self, spec):
        source = fetch(self, spec)
        done.append(spec.name)
        if len(done) == kill_after:  # the file is placed, the manifest not yet written
            os.kill(os.getpid(), signal.SIGKILL)
        return source

    download._Fetcher.fetch = fetch_then_die
    download.fetch_dataset(dataset(), raw, mirror, progress=False)
    """
)


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def dataset():
    from tests.test_download import FakeDataset

    return FakeDataset(
        RawFile("queries.tsv", "https://example.invalid/q.tsv", _sha(_PLAIN), len(_PLAIN)),
        RawFile(
            "qrels.txt",
            "https://example.invalid/all.zip",
            _sha(_ARCHIVE_MEMBER),
            len(_ARCHIVE_MEMBER),
            member="all/qrels.txt",
        ),
        RawFile("atomic.py", "package:reranklab.io/atomic.py"),
    )


@pytest.fixture
def mirror(tmp_path: Path) -> Path:
    folder = tmp_path / "mirror"
    (folder / "fake").mkdir(parents=True)
    (folder / "fake" / "queries.tsv").write_bytes(_PLAIN)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("all/qrels.txt", _ARCHIVE_MEMBER)
    (folder / "fake" / "all.zip").write_bytes(buffer.getvalue())
    return folder


@pytest.mark.parametrize("kill_after", [1, 2, 3])
def test_the_manifest_is_the_same_whatever_was_killed(tmp_path, mirror, kill_after):
    clean = tmp_path / "clean"
    fetch_dataset(dataset(), clean, str(mirror), progress=False)
    expected = (clean / "manifest.json").read_bytes()
    assert b'"present"' not in expected

    raw = tmp_path / "killed"
    repo = Path(__file__).resolve().parents[1]
    child = subprocess.run(
        [sys.executable, "-c", _CHILD, str(raw), str(mirror), str(kill_after)], cwd=repo
    )
    assert child.returncode == -signal.SIGKILL
    assert not (raw / "manifest.json").exists() and len(list(raw.iterdir())) >= kill_after

    fetch_dataset(dataset(), raw, str(mirror), progress=False)
    assert (raw / "manifest.json").read_bytes() == expected


def test_a_file_placed_by_hand_that_no_source_vouches_for_stays_present(tmp_path, mirror):
    raw = tmp_path / "raw"
    raw.mkdir()
    # No published checksum, and other bytes than the package's copy: not from the package.
    (raw / "atomic.py").write_text("# mine\n")
    manifest = fetch_dataset(dataset(), raw, str(mirror), progress=False)
    assert [f["source"] for f in manifest["files"]] == [
        "mirror:fake/queries.tsv",
        "mirror:fake/all.zip!all/qrels.txt",
        "present",
    ]
