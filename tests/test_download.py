"""The download step on local fakes: mirror, checksums, resume over HTTP, archives, manual files."""

from __future__ import annotations

import bz2
import gzip
import hashlib
import io
import json
import re
import tarfile
import threading
import time
import zipfile
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import pytest

from reranklab.data.base import Dataset, Prepared, RawFile
from reranklab.data.download import extract_member, fetch_dataset, resolve_mirror, sha256_of
from reranklab.errors import DownloadError

PAYLOAD = bytes(range(256)) * 40 + b"the end\n"  # 10,248 bytes, every byte value


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class FakeDataset(Dataset):
    """An unregistered dataset whose raw files are given per test."""

    name = "fake"
    title = "fake"
    source = "tests"
    licence = "none"
    citation = "none"
    protocol = None  # type: ignore[assignment]

    def __init__(self, *files: RawFile) -> None:
        self.files = files

    def parse(self, raw_dir: Path, options: dict[str, Any]) -> Prepared:  # pragma: no cover
        raise NotImplementedError


def spec(name: str, data: bytes, url: str | None = None, **extra: Any) -> RawFile:
    return RawFile(name=name, url=url, size=len(data), sha256=sha(data), **extra)


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


# -- a local HTTP server with Range support ----------------------------------------------------


class _Handler(BaseHTTPRequestHandler):
    timeout = 5  # a stuck client cannot hold the server thread

    def log_message(self, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        server: Any = self.server
        server.requests.append({"path": self.path, "range": self.headers.get("Range")})
        data = server.files.get(self.path)
        if server.status:
            self.send_error(server.status)
            return
        if data is None:
            self.send_error(404)
            return
        start = 0
        ranged = self.headers.get("Range")
        if ranged and server.ranges:
            start = int(ranged.removeprefix("bytes=").split("-")[0])
            if start >= len(data):
                self.send_response(416)
                self.send_header("Content-Range", f"bytes */{len(data)}")
                self.end_headers()
                return
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
        else:
            self.send_response(200)
        body = data[start:]
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if server.cut_after:
            # Simulate a dropped connection: promise the whole body, send only part of it.
            cut = server.cut_after.pop(0)
            self.wfile.write(body[:cut])
            server.served += cut
            self.close_connection = True
            return
        self.wfile.write(body)
        server.served += len(body)


@pytest.fixture
def http_server(monkeypatch: pytest.MonkeyPatch):
    for var in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")
    server: Any = HTTPServer(("127.0.0.1", 0), _Handler)
    server.files, server.requests, server.cut_after, server.ranges, server.served = (
        {},
        [],
        [],
        True,
        0,
    )
    server.base = f"http://127.0.0.1:{server.server_address[1]}"
    server.status = None  # answer every request with this HTTP error
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    )
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


FAST = {"backoff": 0.0, "timeout": 5.0, "progress": False}


# -- archives ----------------------------------------------------------------------------------


def make_archive(kind: str, members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    if kind == "zip":
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zf:
            for name, data in members.items():
                zf.writestr(name, data)
    elif kind in ("tar.gz", "tar.bz2"):
        with tarfile.open(fileobj=buffer, mode="w:" + kind.split(".")[1]) as tf:
            for name, data in members.items():
                info = tarfile.TarInfo(name)
                info.size = len(data)
                tf.addfile(info, io.BytesIO(data))
    elif kind == "gz":
        (data,) = members.values()
        return gzip.compress(data)
    elif kind == "bz2":
        (data,) = members.values()
        return bz2.compress(data)
    return buffer.getvalue()


def tar_with_link(
    name: str, target: str, kind: int = tarfile.SYMTYPE, extra: dict[str, bytes] | None = None
) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tf:
        for member, data in (extra or {}).items():
            info = tarfile.TarInfo(member)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
        link = tarfile.TarInfo(name)
        link.type = kind
        link.linkname = target
        tf.addfile(link)
    return buffer.getvalue()


# -- mirror ------------------------------------------------------------------------------------


def test_mirror_copy_verifies_and_writes_manifest(tmp_path: Path) -> None:
    mirror = tmp_path / "mirror"
    (mirror / "fake").mkdir(parents=True)
    (mirror / "fake" / "a.txt").write_bytes(PAYLOAD)
    (mirror / "fake" / "b.txt").write_bytes(b"second\n")
    raw = tmp_path / "raw"
    dataset = FakeDataset(
        spec("a.txt", PAYLOAD, "https://example.invalid/a.txt"), RawFile("b.txt", None)
    )

    manifest = fetch_dataset(dataset, raw, str(mirror), **FAST)

    assert (raw / "a.txt").read_bytes() == PAYLOAD
    assert (raw / "b.txt").read_bytes() == b"second\n"
    assert manifest == {
        "dataset": "fake",
        "files": [
            {"name": "a.txt", "size": 10248, "sha256": sha(PAYLOAD), "source": "mirror:fake/a.txt"},
            {"name": "b.txt", "size": 7, "sha256": sha(b"second\n"), "source": "mirror:fake/b.txt"},
        ],
    }
    assert json.loads((raw / "manifest.json").read_text()) == manifest
    assert leftovers(raw) == ["a.txt", "b.txt", "manifest.json"]


@pytest.mark.parametrize(
    ("stored", "problem"),
    [
        (
            PAYLOAD[:-1] + b"X",
            f"sha256 mismatch: expected {sha(PAYLOAD)}, got {sha(PAYLOAD[:-1] + b'X')}",
        ),
        (PAYLOAD[:100], "size mismatch: expected 10248 bytes, got 100 bytes"),
    ],
)
def test_corrupt_mirror_file_raises_and_leaves_nothing(
    tmp_path: Path, stored: bytes, problem: str
) -> None:
    mirror = tmp_path / "mirror"
    (mirror / "fake").mkdir(parents=True)
    (mirror / "fake" / "a.txt").write_bytes(stored)
    raw = tmp_path / "raw"

    with pytest.raises(DownloadError) as caught:
        fetch_dataset(
            FakeDataset(spec("a.txt", PAYLOAD, "https://example.invalid/a.txt")),
            raw,
            str(mirror),
            **FAST,
        )

    message = str(caught.value)
    assert message.startswith("a.txt: ")
    assert problem in message
    assert str(mirror / "fake" / "a.txt") in message
    assert leftovers(raw) == []  # no final file, no temp file, no manifest


def test_mirror_holding_the_archive_is_extracted(tmp_path: Path) -> None:
    zipped = make_archive("zip", {"Corpus/a.txt": PAYLOAD, "Corpus/b.txt": b"bee\n"})
    mirror = tmp_path / "mirror"
    (mirror / "fake").mkdir(parents=True)
    (mirror / "fake" / "Corpus.zip").write_bytes(zipped)
    url = "https://example.invalid/dl/Corpus.zip"
    dataset = FakeDataset(
        spec(
            "a.txt",
            PAYLOAD,
            url,
            member="Corpus/a.txt",
            archive_size=len(zipped),
            archive_sha256=sha(zipped),
        ),
        spec("b.txt", b"bee\n", url, member="Corpus/b.txt", archive_size=len(zipped)),
    )

    manifest = fetch_dataset(dataset, tmp_path / "raw", str(mirror), **FAST)

    assert (tmp_path / "raw" / "a.txt").read_bytes() == PAYLOAD
    assert (tmp_path / "raw" / "b.txt").read_bytes() == b"bee\n"
    assert [f["source"] for f in manifest["files"]] == [
        "mirror:fake/Corpus.zip!Corpus/a.txt",
        "mirror:fake/Corpus.zip!Corpus/b.txt",
    ]


def test_missing_mirror_root_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(DownloadError, match="mirror folder .*nowhere does not exist"):
        fetch_dataset(
            FakeDataset(spec("a.txt", PAYLOAD, "https://example.invalid/a.txt")),
            tmp_path / "raw",
            str(tmp_path / "nowhere"),
        )


def test_resolve_mirror_flag_then_env_then_config(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RERANKLAB_MIRROR", raising=False)
    assert resolve_mirror(None) is None
    assert resolve_mirror(config_mirror="../shared/datasets") == "../shared/datasets"
    monkeypatch.setenv("RERANKLAB_MIRROR", "/data/mirror")
    # The environment wins over the study's data.mirror ...
    assert resolve_mirror(config_mirror="../shared/datasets") == "/data/mirror"
    assert resolve_mirror(None) == "/data/mirror"
    # ... and a flag typed on the command line wins over the environment (as score --mirror).
    assert resolve_mirror("/typed", "../shared/datasets") == "/typed"
    monkeypatch.setenv("RERANKLAB_MIRROR", "  ")
    assert resolve_mirror(None, "cfg") == "cfg"


def test_download_mirror_flag_wins_over_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mirror: Path
) -> None:
    from reranklab.cli import main

    monkeypatch.setenv("RERANKLAB_MIRROR", str(tmp_path / "nowhere"))
    out = tmp_path / "raw"
    argv = ["download", "--dataset", "wikiqa", "--out-dir", str(out), "--mirror", str(mirror)]
    assert main(argv) == 0
    assert (out / "manifest.json").is_file()


def test_a_file_without_published_checksum_is_trusted_on_first_use_only(tmp_path: Path) -> None:
    mirror = tmp_path / "mirror"
    (mirror / "fake").mkdir(parents=True)
    original, corrupt = b"first copy\n", b"other copy\n"  # same size: only the sha256 tells
    (mirror / "fake" / "b.txt").write_bytes(original)
    raw = tmp_path / "raw"
    dataset = FakeDataset(RawFile("b.txt", "https://example.invalid/b.txt"))
    manifest = fetch_dataset(dataset, raw, str(mirror), **FAST)  # the first fetch records it
    assert manifest["files"][0]["sha256"] == sha(original)

    # Gone from raw/, and the mirror now holds another copy: refused, both digests named.
    (raw / "b.txt").unlink()
    (mirror / "fake" / "b.txt").write_bytes(corrupt)
    with pytest.raises(DownloadError) as error:
        fetch_dataset(dataset, raw, str(mirror), **FAST)
    message = str(error.value)
    assert message.startswith(
        f"b.txt: sha256 mismatch: expected {sha(original)}, got {sha(corrupt)}"
    )
    assert f"what {raw / 'manifest.json'} recorded when it was first fetched" in message
    assert not (raw / "b.txt").exists()

    # An altered file in raw/ is fetched again from a mirror that still has the first copy.
    (mirror / "fake" / "b.txt").write_bytes(original)
    fetch_dataset(dataset, raw, str(mirror), **FAST)
    (raw / "b.txt").write_bytes(corrupt)
    manifest = fetch_dataset(dataset, raw, str(mirror), **FAST)
    assert (raw / "b.txt").read_bytes() == original and manifest["files"][0]["sha256"] == sha(
        original
    )


# -- already present, package, manual ---------------------------------------------------------


def test_present_verified_files_are_not_fetched_again(tmp_path: Path, http_server: Any) -> None:
    http_server.files["/a.txt"] = PAYLOAD
    raw = tmp_path / "raw"
    dataset = FakeDataset(spec("a.txt", PAYLOAD, http_server.base + "/a.txt"))
    first = fetch_dataset(dataset, raw, **FAST)
    assert len(http_server.requests) == 1
    mtime = (raw / "a.txt").stat().st_mtime_ns

    second = fetch_dataset(dataset, raw, **FAST)

    assert len(http_server.requests) == 1  # no second download
    assert (raw / "a.txt").stat().st_mtime_ns == mtime
    assert second == first  # the first source is kept as provenance
    assert first["files"][0]["source"] == http_server.base + "/a.txt"


def test_present_but_damaged_file_is_replaced(tmp_path: Path) -> None:
    mirror = tmp_path / "mirror"
    (mirror / "fake").mkdir(parents=True)
    (mirror / "fake" / "a.txt").write_bytes(PAYLOAD)
    raw = tmp_path / "raw"
    raw.mkdir()
    (raw / "a.txt").write_bytes(b"truncated")

    fetch_dataset(
        FakeDataset(spec("a.txt", PAYLOAD, "https://example.invalid/a.txt")),
        raw,
        str(mirror),
        **FAST,
    )

    assert (raw / "a.txt").read_bytes() == PAYLOAD


def test_damaged_file_with_corrupt_mirror_leaves_nothing(tmp_path: Path) -> None:
    mirror = tmp_path / "mirror"
    (mirror / "fake").mkdir(parents=True)
    (mirror / "fake" / "a.txt").write_bytes(b"also wrong")
    raw = tmp_path / "raw"
    raw.mkdir()
    (raw / "a.txt").write_bytes(b"truncated")
    with pytest.raises(
        DownloadError, match="a.txt: size mismatch: expected 10248 bytes, got 10 bytes"
    ):
        fetch_dataset(
            FakeDataset(spec("a.txt", PAYLOAD, "https://example.invalid/a.txt")),
            raw,
            str(mirror),
            **FAST,
        )
    assert leftovers(raw) == []


def test_damaged_manual_file_is_reported_not_deleted(tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    raw.mkdir()
    (raw / "c.tsv").write_bytes(b"wrong version")
    manual = spec("c.tsv", PAYLOAD, None, manual="ask the authors")
    with pytest.raises(DownloadError) as caught:
        fetch_dataset(FakeDataset(manual), raw, **FAST)
    assert str(caught.value) == (
        f"{raw / 'c.tsv'}: size mismatch: expected 10248 bytes, got 13 bytes; "
        "replace it with the right file (ask the authors)"
    )
    assert (raw / "c.tsv").read_bytes() == b"wrong version"


def test_package_url_is_copied(tmp_path: Path) -> None:
    import reranklab.io.atomic as shipped

    data = Path(shipped.__file__).read_bytes()
    manifest = fetch_dataset(
        FakeDataset(spec("atomic.py", data, "package:reranklab.io/atomic.py")), tmp_path, **FAST
    )
    assert (tmp_path / "atomic.py").read_bytes() == data
    assert manifest["files"][0]["source"] == "package:reranklab.io/atomic.py"
    with pytest.raises(DownloadError, match="package:reranklab.io/nope.txt: no such file"):
        fetch_dataset(
            FakeDataset(RawFile("nope.txt", "package:reranklab.io/nope.txt")),
            tmp_path / "x",
            **FAST,
        )


def test_manual_file_missing_names_files_and_places(tmp_path: Path) -> None:
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    dataset = FakeDataset(
        RawFile(
            "collection.tsv",
            "https://example.invalid/c.zip",
            member="c/collection.tsv",
            manual="accept the licence at https://example.invalid",
        ),
        RawFile("topics.txt", None, manual="request it from the authors"),
    )
    with pytest.raises(DownloadError) as caught:
        fetch_dataset(dataset, tmp_path / "raw", str(mirror), **FAST)
    assert str(caught.value) == (
        "dataset 'fake': 2 file(s) must be obtained by hand (licence):\n"
        "  - collection.tsv (or its archive c.zip): accept the licence at https://example.invalid\n"
        "  - topics.txt: request it from the authors\n"
        f"Place them, with exactly these names, in {mirror / 'fake'} or in {tmp_path / 'raw'}, then run again."
    )
    assert not (tmp_path / "raw" / "manifest.json").exists()

    (mirror / "fake").mkdir()
    (mirror / "fake" / "collection.tsv").write_bytes(b"c")
    (mirror / "fake" / "topics.txt").write_bytes(b"t")
    manifest = fetch_dataset(dataset, tmp_path / "raw", str(mirror), **FAST)
    assert [f["source"] for f in manifest["files"]] == [
        "mirror:fake/collection.tsv",
        "mirror:fake/topics.txt",
    ]


# -- HTTP ----------------------------------------------------------------------------------------


def test_part_file_is_resumed_with_range(tmp_path: Path, http_server: Any) -> None:
    http_server.files["/files/blob.bin"] = PAYLOAD
    raw = tmp_path / "raw"
    (raw / ".download").mkdir(parents=True)
    (raw / ".download" / "blob.bin.part").write_bytes(PAYLOAD[:4000])

    fetch_dataset(
        FakeDataset(spec("blob.bin", PAYLOAD, http_server.base + "/files/blob.bin")), raw, **FAST
    )

    assert (raw / "blob.bin").read_bytes() == PAYLOAD
    assert http_server.requests == [{"path": "/files/blob.bin", "range": "bytes=4000-"}]
    assert http_server.served == len(PAYLOAD) - 4000
    assert leftovers(raw) == ["blob.bin", "manifest.json"]  # .part and .download are gone


def test_dropped_connections_are_retried_and_resumed(tmp_path: Path, http_server: Any) -> None:
    http_server.files["/blob.bin"] = PAYLOAD
    http_server.cut_after = [3000, 5000]  # two broken responses, then a whole one

    fetch_dataset(
        FakeDataset(spec("blob.bin", PAYLOAD, http_server.base + "/blob.bin")), tmp_path, **FAST
    )

    assert (tmp_path / "blob.bin").read_bytes() == PAYLOAD
    assert [r["range"] for r in http_server.requests] == [None, "bytes=3000-", "bytes=8000-"]
    assert http_server.served == len(PAYLOAD)


def test_server_without_range_support_restarts_cleanly(tmp_path: Path, http_server: Any) -> None:
    http_server.files["/blob.bin"] = PAYLOAD
    http_server.ranges = False
    (tmp_path / ".download").mkdir()
    (tmp_path / ".download" / "blob.bin.part").write_bytes(b"stale bytes from another file")

    fetch_dataset(
        FakeDataset(spec("blob.bin", PAYLOAD, http_server.base + "/blob.bin")), tmp_path, **FAST
    )

    assert (tmp_path / "blob.bin").read_bytes() == PAYLOAD


def test_http_checksum_mismatch_discards_download(tmp_path: Path, http_server: Any) -> None:
    http_server.files["/blob.bin"] = PAYLOAD
    wrong = RawFile("blob.bin", http_server.base + "/blob.bin", size=len(PAYLOAD), sha256="0" * 64)
    with pytest.raises(
        DownloadError, match=f"blob.bin: sha256 mismatch: expected {'0' * 64}, got {sha(PAYLOAD)}"
    ):
        fetch_dataset(FakeDataset(wrong), tmp_path, **FAST)
    assert leftovers(tmp_path) == [".download"]
    assert leftovers(tmp_path / ".download") == []


def test_http_404_fails_without_retrying(tmp_path: Path, http_server: Any) -> None:
    with pytest.raises(DownloadError, match="missing.bin: HTTP 404"):
        fetch_dataset(
            FakeDataset(RawFile("missing.bin", http_server.base + "/missing.bin")),
            tmp_path,
            retries=3,
            **FAST,
        )
    assert len(http_server.requests) == 1


def test_gives_up_after_retries_and_keeps_part(tmp_path: Path, http_server: Any) -> None:
    http_server.files["/blob.bin"] = PAYLOAD
    http_server.cut_after = [1000, 1000, 1000]
    with pytest.raises(DownloadError, match="failed after 3 attempts.*next run resumes"):
        fetch_dataset(
            FakeDataset(spec("blob.bin", PAYLOAD, http_server.base + "/blob.bin")),
            tmp_path,
            retries=3,
            **FAST,
        )
    assert (tmp_path / ".download" / "blob.bin.part").read_bytes() == PAYLOAD[:3000]
    assert not (tmp_path / "blob.bin").exists()

    fetch_dataset(
        FakeDataset(spec("blob.bin", PAYLOAD, http_server.base + "/blob.bin")), tmp_path, **FAST
    )
    assert (tmp_path / "blob.bin").read_bytes() == PAYLOAD
    assert http_server.requests[-1]["range"] == "bytes=3000-"


@pytest.mark.parametrize("kind", ["zip", "tar.gz", "tar.bz2"])
def test_archive_members_are_extracted_from_one_download(
    tmp_path: Path, http_server: Any, kind: str
) -> None:
    archive = make_archive(
        kind, {"Corpus/README": b"readme", "Corpus/a.txt": PAYLOAD, "Corpus/b.txt": b"bee\n"}
    )
    http_server.files[f"/Corpus.{kind}"] = archive
    url = f"{http_server.base}/Corpus.{kind}"
    dataset = FakeDataset(
        spec(
            "a.txt",
            PAYLOAD,
            url,
            member="Corpus/a.txt",
            archive_size=len(archive),
            archive_sha256=sha(archive),
        ),
        spec("b.txt", b"bee\n", url, member="Corpus/b.txt", archive_size=len(archive)),
    )

    manifest = fetch_dataset(dataset, tmp_path, **FAST)

    assert (tmp_path / "a.txt").read_bytes() == PAYLOAD
    assert (tmp_path / "b.txt").read_bytes() == b"bee\n"
    assert len(http_server.requests) == 1  # the archive serves both files
    assert manifest["files"][0]["source"] == f"{url}!Corpus/a.txt"
    assert leftovers(tmp_path) == ["a.txt", "b.txt", "manifest.json"]


@pytest.mark.parametrize("kind", ["gz", "bz2"])
def test_single_compressed_file_is_decompressed(
    tmp_path: Path, http_server: Any, kind: str
) -> None:
    http_server.files[f"/a.txt.{kind}"] = make_archive(kind, {"a.txt": PAYLOAD})
    fetch_dataset(
        FakeDataset(spec("a.txt", PAYLOAD, f"{http_server.base}/a.txt.{kind}")), tmp_path, **FAST
    )
    assert (tmp_path / "a.txt").read_bytes() == PAYLOAD


def test_archive_size_mismatch_is_reported(tmp_path: Path, http_server: Any) -> None:
    archive = make_archive("zip", {"a.txt": PAYLOAD})
    http_server.files["/c.zip"] = archive
    bad = spec(
        "a.txt", PAYLOAD, http_server.base + "/c.zip", member="a.txt", archive_size=len(archive) + 1
    )
    with pytest.raises(
        DownloadError,
        match=f"archive c.zip: size mismatch: expected {len(archive) + 1} bytes, got {len(archive)} bytes",
    ):
        fetch_dataset(FakeDataset(bad), tmp_path, **FAST)
    assert not (tmp_path / "a.txt").exists()


def test_extracted_member_with_wrong_checksum_leaves_nothing(tmp_path: Path) -> None:
    archive = make_archive("tar.gz", {"d/a.txt": b"not the payload"})
    mirror = tmp_path / "mirror"
    (mirror / "fake").mkdir(parents=True)
    (mirror / "fake" / "d.tar.gz").write_bytes(archive)
    raw = tmp_path / "raw"
    with pytest.raises(
        DownloadError,
        match=r"a.txt: size mismatch: expected 10248 bytes, got 15 bytes \(from .*d.tar.gz!d/a.txt\)",
    ):
        fetch_dataset(
            FakeDataset(spec("a.txt", PAYLOAD, "https://x.invalid/d.tar.gz", member="d/a.txt")),
            raw,
            str(mirror),
            **FAST,
        )
    assert leftovers(raw) == []


# -- unsafe archives ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("archive", "member", "problem"),
    [
        (make_archive("zip", {"../evil.txt": b"x"}), "../evil.txt", "path traversal"),
        (make_archive("zip", {"/etc/evil.txt": b"x"}), "/etc/evil.txt", "absolute path"),
        (make_archive("tar.gz", {"d/../../evil.txt": b"x"}), "d/../../evil.txt", "path traversal"),
        (tar_with_link("d/a.txt", "/etc/passwd"), "d/a.txt", "link to absolute path '/etc/passwd'"),
        (
            tar_with_link("d/a.txt", "../../secret"),
            "d/a.txt",
            "link '../../secret' escapes the archive folder",
        ),
        (
            tar_with_link("d/a.txt", "../../secret", tarfile.LNKTYPE),
            "d/a.txt",
            "escapes the archive folder",
        ),
    ],
    # Named, not derived from the bytes: a gzip header holds its writing time, and pytest-xdist's
    # workers must collect the same ids.
    ids=["zip-up", "zip-absolute", "tar-up", "symlink-absolute", "symlink-up", "hardlink-up"],
)
def test_unsafe_members_are_refused(
    tmp_path: Path, archive: bytes, member: str, problem: str
) -> None:
    path = tmp_path / "bad.archive"
    path.write_bytes(archive)
    with pytest.raises(DownloadError, match="refusing member") as caught:
        extract_member(path, member, tmp_path / "out")
    assert problem in str(caught.value)
    assert not (tmp_path / "out").exists()
    assert not (tmp_path.parent / "evil.txt").exists()


def test_unsafe_member_through_fetch_leaves_nothing(tmp_path: Path) -> None:
    mirror = tmp_path / "mirror"
    (mirror / "fake").mkdir(parents=True)
    (mirror / "fake" / "c.zip").write_bytes(make_archive("zip", {"../a.txt": PAYLOAD}))
    raw = tmp_path / "raw"
    with pytest.raises(DownloadError, match=r"refusing member '../a.txt': path traversal"):
        fetch_dataset(
            FakeDataset(spec("a.txt", PAYLOAD, "https://x.invalid/c.zip", member="../a.txt")),
            raw,
            str(mirror),
            **FAST,
        )
    assert leftovers(raw) == []


def test_links_inside_the_archive_are_followed(tmp_path: Path) -> None:
    path = tmp_path / "ok.tar.gz"
    path.write_bytes(tar_with_link("d/latest.txt", "v2/a.txt", extra={"d/v2/a.txt": PAYLOAD}))
    extract_member(path, "d/latest.txt", tmp_path / "out")
    assert (tmp_path / "out").read_bytes() == PAYLOAD
    assert sha256_of(tmp_path / "out") == sha(PAYLOAD)


def test_missing_member_lists_the_archive(tmp_path: Path) -> None:
    path = tmp_path / "c.zip"
    path.write_bytes(make_archive("zip", {"c/a.txt": b"a", "c/b.txt": b"b"}))
    with pytest.raises(DownloadError, match=r"no member 'c/z.txt' \(it holds c/a.txt, c/b.txt\)"):
        extract_member(path, "c/z.txt", tmp_path / "out")


def test_the_members_of_a_tar_come_from_one_pass_over_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    members = {
        "c/collection.tsv": PAYLOAD,
        "c/queries.tsv": b"q1\tquery\n",
        "c/qrels.tsv": b"q1 0 p1 1\n",
    }
    mirror = tmp_path / "mirror"
    (mirror / "fake").mkdir(parents=True)
    (mirror / "fake" / "c.tar.gz").write_bytes(make_archive("tar.gz", members))
    streams: list[str] = []
    real_open = tarfile.open

    def counting_open(*args: Any, **kwargs: Any) -> Any:
        mode = kwargs.get("mode", args[1] if len(args) > 1 else "r")
        if "|" in mode:
            streams.append(mode)
        return real_open(*args, **kwargs)

    monkeypatch.setattr(tarfile, "open", counting_open)
    dataset = FakeDataset(
        *(
            spec(name.split("/")[1], data, "https://x.invalid/c.tar.gz", member=name)
            for name, data in members.items()
        )
    )
    raw = tmp_path / "raw"
    fetch_dataset(dataset, raw, str(mirror), **FAST)
    assert len(streams) == 1  # three members, one decompression
    assert {name: (raw / name.split("/")[1]).read_bytes() for name in members} == members
    assert leftovers(raw) == ["collection.tsv", "manifest.json", "qrels.tsv", "queries.tsv"]


def test_extract_members_resolves_links_to_members_before_and_after_them(tmp_path: Path) -> None:
    from reranklab.data.download import extract_members

    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tf:

        def add_file(name: str, data: bytes) -> None:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))

        def add_link(name: str, target: str) -> None:
            info = tarfile.TarInfo(name)
            info.type = tarfile.SYMTYPE
            info.linkname = target
            tf.addfile(info)

        add_file("d/early.txt", b"early")
        add_link("d/to-early", "early.txt")  # target already passed: copied
        add_link("d/to-late", "late.txt")  # target not yet seen: a second pass
        add_link("d/also-late", "late.txt")
        add_file("d/late.txt", b"late")
    archive = tmp_path / "links.tar.gz"
    archive.write_bytes(buffer.getvalue())
    wanted = {
        name: tmp_path / name.replace("/", "_")
        for name in ("d/to-early", "d/to-late", "d/also-late", "d/early.txt")
    }
    extract_members(archive, wanted)
    assert {name: dest.read_bytes() for name, dest in wanted.items()} == {
        "d/to-early": b"early",
        "d/to-late": b"late",
        "d/also-late": b"late",
        "d/early.txt": b"early",
    }
    with pytest.raises(
        DownloadError, match=r"no member 'd/none' \(it holds d/also-late, d/early.txt"
    ):
        extract_members(archive, {"d/none": tmp_path / "none"})


# -- only the files asked for; messages that say what is really left -----------------------------


@pytest.mark.parametrize("kind", ["zip", "tar.gz"])
def test_only_the_files_asked_for_are_fetched(tmp_path: Path, http_server: Any, kind: str) -> None:
    archive = make_archive(kind, {"Corpus/a.txt": PAYLOAD, "Corpus/b.txt": b"bee\n"})
    http_server.files[f"/Corpus.{kind}"] = archive
    url = f"{http_server.base}/Corpus.{kind}"
    a = spec("a.txt", PAYLOAD, url, member="Corpus/a.txt")
    dataset = FakeDataset(a, spec("b.txt", b"bee\n", url, member="Corpus/b.txt"))

    manifest = fetch_dataset(dataset, tmp_path, files=[a], **FAST)

    # The tar's other member is not extracted alongside: nothing but the wanted file is left.
    assert leftovers(tmp_path) == ["a.txt", "manifest.json"]
    assert [f["name"] for f in manifest["files"]] == ["a.txt"]


def _closed_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# What every network failure without a mirror ends with: the setting that would have avoided it.
MIRROR_HINT = (
    r"\. No mirror is set: to work without the network, put blob\.bin in <mirror>/fake/ and set"
    r" env RERANKLAB_MIRROR to <mirror> \(or params data\.mirror, or the --mirror option\)$"
)


def test_refused_connection_fails_at_once_and_names_the_mirror_setting(
    tmp_path: Path, http_server: Any
) -> None:
    # The default retries and back-off (2 + 4 + 8 + 16 s of waiting): none of it is spent.
    port = _closed_port()
    url = f"http://127.0.0.1:{port}/blob.bin"
    started = time.monotonic()
    with pytest.raises(DownloadError) as info:
        fetch_dataset(FakeDataset(spec("blob.bin", PAYLOAD, url)), tmp_path, progress=False)
    assert time.monotonic() - started < 5
    assert re.fullmatch(
        rf"blob\.bin: cannot connect to 127\.0\.0\.1:{port} for {re.escape(url)} \(.*refused\);"
        r" not retried: no network, or the host is down; no partial file is left to resume from"
        + MIRROR_HINT,
        str(info.value),
    ), str(info.value)
    assert leftovers(tmp_path) == [".download"]
    assert leftovers(tmp_path / ".download") == []  # no .part (not even an empty one)


def test_unknown_host_is_not_retried(tmp_path: Path, http_server: Any) -> None:
    # .invalid never resolves (RFC 2606), online or not.
    url = "http://reranklab.invalid/blob.bin"
    with pytest.raises(
        DownloadError,
        match=r"blob\.bin: cannot connect to reranklab\.invalid for .*; not retried: .*"
        + MIRROR_HINT,
    ):
        fetch_dataset(FakeDataset(spec("blob.bin", PAYLOAD, url)), tmp_path, retries=3, **FAST)


def test_archive_offline_names_the_file_and_its_archive(tmp_path: Path, http_server: Any) -> None:
    url = f"http://127.0.0.1:{_closed_port()}/bundle.zip"
    with pytest.raises(
        DownloadError,
        match=r"archive bundle\.zip: cannot connect .*put a\.txt \(or its archive bundle\.zip\) in"
        r" <mirror>/fake/ and set env RERANKLAB_MIRROR",
    ):
        fetch_dataset(FakeDataset(spec("a.txt", PAYLOAD, url, member="d/a.txt")), tmp_path, **FAST)


def test_unreachable_host_with_a_mirror_says_what_the_mirror_lacks(
    tmp_path: Path, http_server: Any
) -> None:
    mirror = tmp_path / "mirror"
    (mirror / "fake").mkdir(parents=True)
    url = f"http://127.0.0.1:{_closed_port()}/blob.bin"
    with pytest.raises(DownloadError) as info:
        fetch_dataset(
            FakeDataset(spec("blob.bin", PAYLOAD, url)), tmp_path / "raw", str(mirror), **FAST
        )
    assert str(info.value).startswith(
        f"blob.bin: the mirror {mirror / 'fake'} does not have blob.bin, and downloading it failed:"
        " blob.bin: cannot connect to"
    )
    assert "No mirror is set" not in str(info.value)


def test_time_outs_are_retried(tmp_path: Path, http_server: Any) -> None:
    # A server that takes the connection and never answers: each attempt times out.
    import socket

    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        url = f"http://127.0.0.1:{silent.getsockname()[1]}/blob.bin"
        with pytest.raises(
            DownloadError, match="failed after 2 attempts: .*timed out.*" + MIRROR_HINT
        ):
            fetch_dataset(
                FakeDataset(spec("blob.bin", PAYLOAD, url)),
                tmp_path,
                retries=2,
                backoff=0.0,
                timeout=0.3,
                progress=False,
            )


def test_server_errors_are_retried(tmp_path: Path, http_server: Any) -> None:
    # No file at the path, but a 503: the server is busy, so every attempt is made.
    http_server.status = 503
    with pytest.raises(DownloadError, match="failed after 3 attempts: HTTP Error 503"):
        fetch_dataset(
            FakeDataset(RawFile("blob.bin", http_server.base + "/blob.bin")),
            tmp_path,
            retries=3,
            **FAST,
        )
    assert len(http_server.requests) == 3


def test_partial_file_discarded_by_the_last_attempt_is_not_reported_kept(
    tmp_path: Path, http_server: Any
) -> None:
    # The .part is longer than the server's file but shorter than the size we expect: the
    # server answers 416, the stale .part is discarded, and the message must not call it kept.
    http_server.files["/blob.bin"] = PAYLOAD
    (tmp_path / ".download").mkdir()
    (tmp_path / ".download" / "blob.bin.part").write_bytes(PAYLOAD + b"x" * 50)
    wrong_size = RawFile("blob.bin", http_server.base + "/blob.bin", size=len(PAYLOAD) + 100)
    with pytest.raises(
        DownloadError,
        match="stale partial file discarded>; no partial file is left to resume from" + MIRROR_HINT,
    ):
        fetch_dataset(FakeDataset(wrong_size), tmp_path, retries=1, **FAST)
    assert leftovers(tmp_path / ".download") == []


def test_kept_partial_file_is_named_with_its_size(tmp_path: Path, http_server: Any) -> None:
    http_server.files["/blob.bin"] = PAYLOAD
    http_server.cut_after = [1000, 1000]
    part = tmp_path / ".download" / "blob.bin.part"
    with pytest.raises(
        DownloadError,
        match=f"the 2000 bytes received are kept in {part} and the next run resumes from them"
        + MIRROR_HINT,
    ):
        fetch_dataset(
            FakeDataset(spec("blob.bin", PAYLOAD, http_server.base + "/blob.bin")),
            tmp_path,
            retries=2,
            **FAST,
        )
    assert part.stat().st_size == 2000


def test_download_after_a_mirror_miss_says_what_the_mirror_lacks(
    tmp_path: Path, http_server: Any
) -> None:
    (tmp_path / "mirror" / "fake").mkdir(parents=True)
    url = http_server.base + "/jacana.tar.bz2"
    member = RawFile("train2393.cleanup.xml.gz", url, member="jacana/train2393.cleanup.xml.gz")
    with pytest.raises(DownloadError) as info:
        fetch_dataset(FakeDataset(member), tmp_path / "raw", str(tmp_path / "mirror"), **FAST)
    assert str(info.value) == (
        f"train2393.cleanup.xml.gz: the mirror {tmp_path / 'mirror' / 'fake'} has neither train2393.cleanup.xml.gz "
        f"nor its archive jacana.tar.bz2, and downloading it failed: archive jacana.tar.bz2: HTTP 404 Not Found ({url})"
    )
    assert leftovers(tmp_path / "raw" / ".download") == []


# -- nothing is ever written outside the target (tar: a `..` member, a symlink that escapes) --------


def _tar_mirror(tmp_path: Path, archive: bytes) -> Path:
    mirror = tmp_path / "mirror"
    (mirror / "fake").mkdir(parents=True)
    (mirror / "fake" / "d.tar.gz").write_bytes(archive)
    return mirror


def test_a_dotdot_member_beside_the_wanted_one_is_never_written(tmp_path: Path) -> None:
    archive = make_archive(
        "tar.gz", {"../evil.txt": b"x", "d/../../evil2.txt": b"x", "d/a.txt": PAYLOAD}
    )
    raw = tmp_path / "deep" / "raw"
    fetch_dataset(
        FakeDataset(spec("a.txt", PAYLOAD, "https://x.invalid/d.tar.gz", member="d/a.txt")),
        raw,
        str(_tar_mirror(tmp_path, archive)),
        **FAST,
    )
    assert (raw / "a.txt").read_bytes() == PAYLOAD
    assert leftovers(raw) == ["a.txt", "manifest.json"]
    assert sorted(p.name for p in tmp_path.rglob("evil*")) == []


@pytest.mark.parametrize(
    ("link", "problem"),
    [
        ("../../../outside.txt", "link '../../../outside.txt' escapes the archive folder"),
        ("/etc/hostname", "link to absolute path '/etc/hostname'"),
    ],
)
def test_a_symlink_escaping_the_target_is_refused(tmp_path: Path, link: str, problem: str) -> None:
    (tmp_path / "outside.txt").write_bytes(b"not yours")
    archive = tar_with_link("d/a.txt", link)
    raw = tmp_path / "raw"
    with pytest.raises(DownloadError, match=f"refusing member 'd/a.txt': {problem}"):
        fetch_dataset(
            FakeDataset(spec("a.txt", PAYLOAD, "https://x.invalid/d.tar.gz", member="d/a.txt")),
            raw,
            str(_tar_mirror(tmp_path, archive)),
            **FAST,
        )
    assert leftovers(raw) == []
    assert (tmp_path / "outside.txt").read_bytes() == b"not yours"


def test_a_symlink_inside_the_archive_gives_a_plain_file(tmp_path: Path) -> None:
    archive = tar_with_link("d/latest.txt", "v2/a.txt", extra={"d/v2/a.txt": PAYLOAD})
    raw = tmp_path / "raw"
    fetch_dataset(
        FakeDataset(spec("a.txt", PAYLOAD, "https://x.invalid/d.tar.gz", member="d/latest.txt")),
        raw,
        str(_tar_mirror(tmp_path, archive)),
        **FAST,
    )
    assert not (raw / "a.txt").is_symlink() and (raw / "a.txt").read_bytes() == PAYLOAD


def test_retries_back_off_exponentially(
    tmp_path: Path, http_server: Any, caplog: pytest.LogCaptureFixture
) -> None:
    http_server.files["/blob.bin"] = PAYLOAD
    http_server.cut_after = [1000, 1000, 1000]
    with caplog.at_level("WARNING", logger="reranklab.data.download"):
        fetch_dataset(
            FakeDataset(spec("blob.bin", PAYLOAD, http_server.base + "/blob.bin")),
            tmp_path,
            retries=4,
            backoff=0.1,
            timeout=5.0,
            progress=False,
        )
    waits = [line.rsplit("retrying in ", 1)[1] for line in caplog.messages if "retrying in" in line]
    assert waits == ["0.1s", "0.2s", "0.4s"]  # backoff, then doubled
    assert [
        m.split(": attempt ")[1].split(" failed")[0] for m in caplog.messages if "retrying in" in m
    ] == ["1/4", "2/4", "3/4"]
    assert (tmp_path / "blob.bin").read_bytes() == PAYLOAD
