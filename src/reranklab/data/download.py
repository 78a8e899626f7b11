"""The download step: put a dataset's raw files into ``raw/``, verified, with a manifest.

Each :class:`~reranklab.data.base.RawFile` is taken from the first source that has it:

1. ``raw/<name>`` itself, when it is already there and passes its checks (never re-fetched);
2. ``package:<package>/<resource>`` URLs: a file shipped inside reranklab or an installed
   package (before the mirror, so the manifest does not depend on whether one is set);
3. the local mirror ``<mirror>/<dataset.mirror_folder>/<name>``, or the archive of its URL
   stored there under the URL's base name (the member is extracted from it);
4. HTTP(S): retried with exponential back-off (``tenacity``) and resumed with ``Range`` from a
   ``.part`` file; archives (zip, tar.gz, tar.bz2, single .gz/.bz2) are checked, then the
   member is extracted. A host that cannot be reached at all (its name does not resolve, the
   connection is refused, no route to it: offline, as a sandbox or a compute node is) fails
   at once, not after the back-off, and the error says how to use a mirror instead; time-outs,
   cut connections and 408/429/5xx answers are retried.

Every file is checked (size, then sha256, where known) before it is renamed onto its final
path, so a failed or corrupt fetch never leaves a file there. ``raw/manifest.json`` is written
last: a DAG step can take it as its output. A file with no published checksum is trusted on
first use: the size and sha256 the manifest recorded when it was first fetched are checked on
every later fetch, and a copy that differs is refused.

Downloads go through ``raw/.download/<URL base name>`` (and ``.part`` while incomplete), the same
name under which a mirror may hold an archive; the URLs of one dataset must differ in base name.

Archives are read by ``zipfile`` and ``tarfile`` (a tar as one stream, ``r|*``), each wanted
member copied into a file this module names; ``extractall`` is not used, since it would write
every member under its own name (a dataset needs a few files of a multi-GB archive). No member's
path is ever joined to a folder, so ``tarfile``'s extraction filters (``filter="data"``, which
guard ``extract`` into a folder) have nothing to guard here; instead a member that could escape
(an absolute path, a ``..`` component, a link that leaves the archive) is refused, in zip and
tar alike (:func:`extract_member`).
"""

from __future__ import annotations

import bz2
import contextlib
import dataclasses
import errno
import gzip
import hashlib
import http.client
import importlib
import importlib.resources
import logging
import os
import posixpath
import shutil
import socket
import stat
import tarfile
import urllib.error
import urllib.request
import zipfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import tenacity
from tqdm import tqdm

from reranklab.data.base import Dataset, RawFile
from reranklab.errors import DownloadError
from reranklab.io import atomic_path, read_json, write_json
from reranklab.io.digest import sha256_of

log = logging.getLogger(__name__)

MIRROR_ENV = "RERANKLAB_MIRROR"
MANIFEST = "manifest.json"
DOWNLOAD_DIR = ".download"  # archives and .part files, inside raw/ so renames stay atomic
CHUNK = 1 << 20
USER_AGENT = "reranklab (+https://github.com/reranklab/reranklab)"
_RETRY_HTTP = {408, 425, 429, 500, 502, 503, 504}
# Connection failures that another attempt a few seconds later would meet again (no network,
# no such host, nothing listening): not retried. Time-outs are not among them (a slow server).
_UNREACHABLE_ERRNOS = frozenset(
    getattr(errno, name)
    for name in ("ECONNREFUSED", "ENETUNREACH", "EHOSTUNREACH", "ENETDOWN", "EHOSTDOWN")
    if hasattr(errno, name)
)


def resolve_mirror(flag: str | None = None, config_mirror: str | None = None) -> str | None:
    """The mirror folder to use: a command-line flag, else env ``RERANKLAB_MIRROR``, else ``data.mirror``.

    What a person types wins over the environment, and the environment over the study's
    configuration (as ``reranklab score --mirror`` does): the workflow passes ``data.mirror`` as
    ``--config-mirror``, so ``RERANKLAB_MIRROR`` still redirects a whole study.

    Args:
        flag: ``--mirror`` of the command line (``None`` = not given).
        config_mirror: the ``data.mirror`` value of the params (``None`` = no mirror).

    Returns:
        The folder (as given, ``~`` expanded), or ``None`` when none is set (or empty).

    Example:
        >>> resolve_mirror("/data/mirror", "../shared/datasets")
        '/data/mirror'
    """
    for value in (flag, os.environ.get(MIRROR_ENV), config_mirror):
        if value is not None and value.strip():
            return os.path.expanduser(value.strip())
    return None


def fetch_dataset(
    dataset: Dataset,
    raw_dir: str | os.PathLike[str],
    mirror: str | None = None,
    *,
    files: Sequence[RawFile] | None = None,
    retries: int = 5,
    backoff: float = 2.0,
    timeout: float = 60.0,
    progress: bool = True,
) -> dict[str, Any]:
    """Put the raw files of ``dataset`` into ``raw_dir``, verified; write the manifest last.

    Args:
        dataset: the registered dataset (its ``files`` say how to fetch and check each file).
        raw_dir: destination folder (``raw/<dataset>``); created if missing.
        mirror: local mirror folder (see :func:`resolve_mirror`), or ``None``.
        files: the files to fetch, e.g. ``dataset.raw_files(options, splits)``; default: all
            of ``dataset.files``. The manifest lists exactly these.
        retries: HTTP attempts per URL before giving up (the bytes received so far stay in a
            ``.part`` file that the next run resumes from; the error says whether there is one).
            A host that cannot be reached (unknown name, connection refused, no route) gets one
            attempt: offline, the error comes at once and names the mirror setting.
        backoff: seconds before the first retry; doubles with each further retry.
        timeout: socket timeout per HTTP request, in seconds.
        progress: show a tqdm bar while downloading.

    Returns:
        The manifest: ``{"dataset", "files": [{"name", "size", "sha256", "source"}]}``.

    Raises:
        DownloadError: a file could not be fetched, failed its size/sha256 check, an archive
            member is unsafe, or a ``manual`` file is in neither ``raw_dir`` nor the mirror.

    Example:
        >>> from reranklab.data import get_dataset
        >>> fetch_dataset(get_dataset("wikiqa"), "raw/wikiqa", resolve_mirror(None))  # doctest: +SKIP
        {'dataset': 'wikiqa', 'files': [{'name': 'WikiQA-train.tsv', 'size': 4379303, ...}, ...]}
    """
    wanted = tuple(dataset.files if files is None else files)
    raw = Path(raw_dir)
    raw.mkdir(parents=True, exist_ok=True)
    mirror_dir = _mirror_dataset_dir(mirror, dataset)
    # Only the wanted files: a tar's other members are not extracted alongside them either.
    fetcher = _Fetcher(
        raw,
        mirror_dir,
        wanted,
        mirror_folder=dataset.mirror_folder,
        retries=retries,
        backoff=backoff,
        timeout=timeout,
        progress=progress,
    )
    previous = _previous_sources(raw / MANIFEST)
    recorded = _recorded_checks(raw / MANIFEST)
    entries: list[dict[str, Any]] = []
    manual_missing: list[RawFile] = []
    try:
        for spec in wanted:
            pinned = _trust_on_first_use(spec, recorded.get(spec.name))
            try:
                source = fetcher.fetch(pinned)
            except _ManualMissing:
                manual_missing.append(spec)
                continue
            except DownloadError as exc:
                if pinned is spec or "mismatch" not in str(exc):
                    raise
                raise DownloadError(
                    f"{exc}; no checksum is published for {spec.name}: the one expected is what {raw / MANIFEST}"
                    " recorded when it was first fetched (remove its entry there to accept this copy)"
                ) from None
            target = raw / spec.name
            sha256 = sha256_of(target)
            if source == "present":
                # The source the file was verified against, so the manifest does not depend on
                # whether an earlier run was killed between placing the file and writing it.
                earlier = previous.get(spec.name)
                source = (
                    earlier["source"]
                    if earlier is not None and earlier.get("sha256") == sha256
                    else fetcher.origin(pinned, target, sha256)
                )
            entries.append(
                {
                    "name": spec.name,
                    "size": target.stat().st_size,
                    "sha256": sha256,
                    "source": source,
                }
            )
    finally:
        fetcher.discard_staged()  # downloaded archives stay for a retry; extracted leftovers do not
    if manual_missing:
        raise DownloadError(_manual_message(dataset, manual_missing, raw, mirror))
    fetcher.cleanup()
    manifest = {"dataset": dataset.name, "files": entries}
    write_json(raw / MANIFEST, manifest)
    return manifest


class _ManualMissing(Exception):
    """A ``manual`` file is nowhere to be found (collected, then reported together)."""


class _Fetcher:
    """Fetch the raw files of one dataset; archives are shared between files of one call."""

    def __init__(
        self,
        raw: Path,
        mirror_dir: Path | None,
        files: Sequence[RawFile],
        *,
        mirror_folder: str,
        retries: int,
        backoff: float,
        timeout: float,
        progress: bool,
    ) -> None:
        self.raw = raw
        self.mirror_dir = mirror_dir
        self.mirror_folder = mirror_folder
        self.files = list(files)
        self.staged: dict[
            tuple[Path, str], Path
        ] = {}  # (archive, member) -> extracted, not yet verified
        self.retries = max(1, retries)
        self.backoff = backoff
        self.timeout = timeout
        self.progress = progress
        self.downloads = raw / DOWNLOAD_DIR
        self.fetched_archives: set[Path] = set()

    def fetch(self, spec: RawFile) -> str:
        """Place ``spec`` at ``raw/<name>``; returns a description of the source used."""
        target = self.raw / spec.name
        bad_manual: str | None = None
        if target.is_file():
            problem = _check(target, spec.size, spec.sha256, spec.md5)
            if problem is None:
                log.info("%s: already present and verified", spec.name)
                return "present"
            if spec.manual:
                # Placed by hand and maybe costly to get again: report it, never delete it.
                bad_manual = problem
            else:
                log.warning("%s: present but %s; fetching it again", target, problem)
                target.unlink()
        package_error: DownloadError | None = None
        if spec.url is not None and spec.url.startswith("package:"):
            # An installed package before the mirror: the same pinned bytes offline, and the
            # manifest (a DVC-tracked output) then names the package on every machine, whether
            # or not a mirror is set there. The mirror serves only where the package is absent.
            try:
                return self._from_package(spec, target)
            except DownloadError as exc:
                package_error = exc
        if self.mirror_dir is not None:
            source = self._from_mirror(spec, target)
            if source is not None:
                return source
        if package_error is not None:
            raise package_error
        if bad_manual is not None:
            raise DownloadError(
                f"{target}: {bad_manual}; replace it with the right file ({spec.manual})"
            )
        if spec.manual:
            raise _ManualMissing(spec.name)
        if spec.url is None:
            raise DownloadError(f"{spec.name}: no URL and not found in {self.raw} or the mirror")
        scheme = urlparse(spec.url).scheme
        if scheme not in ("http", "https"):
            raise DownloadError(f"{spec.name}: unsupported URL scheme {scheme!r} in {spec.url}")
        try:
            return self._from_http(spec, target)
        except _NetworkFailed as exc:
            if self.mirror_dir is None:
                # Offline, a mirror is the way out: say which setting and which path.
                raise DownloadError(f"{exc}. {self._mirror_hint(spec)}") from None
            raise DownloadError(
                f"{spec.name}: {self._mirror_lacks(spec)}, and downloading it failed: {exc}"
            ) from None
        except DownloadError as exc:
            if self.mirror_dir is None:
                raise
            # Say why the network was tried at all: the mirror lacks the file.
            raise DownloadError(
                f"{spec.name}: {self._mirror_lacks(spec)}, and downloading it failed: {exc}"
            ) from None

    def origin(self, spec: RawFile, target: Path, sha256: str) -> str:
        """The source that ``target``, present and verified, is a copy of: the one :meth:`fetch`
        would take, in the same order. ``present`` when none can vouch for it (a file placed by
        hand, or one without a published checksum that differs from the mirror's copy).

        A file with a published (or first-use) checksum is the same bytes as any source that
        passes that checksum; one without is compared with the mirror's or the package's copy.
        """
        checked = bool(spec.sha256 or spec.md5)
        if checked and spec.url is not None and spec.url.startswith("package:"):
            with contextlib.suppress(DownloadError):  # the package first, as fetch takes it
                _package_resource(spec.url)
                return spec.url
        if self.mirror_dir is not None:
            plain = self.mirror_dir / spec.name
            if plain.is_file():
                if checked or sha256_of(plain) == sha256:
                    return self._mirror_label(plain)
                return "present"
            if spec.url and _unpacks(spec):
                archive = self.mirror_dir / _url_basename(spec.url)
                if archive.is_file():
                    return f"{self._mirror_label(archive)}!{spec.member or archive.name}"
        if spec.manual or spec.url is None:
            return "present"
        if spec.url.startswith("package:"):
            if not checked:
                with importlib.resources.as_file(_package_resource(spec.url)) as path:
                    if sha256_of(Path(path)) != sha256:
                        return "present"
            return spec.url
        if _unpacks(spec):
            return f"{spec.url}!{spec.member or _url_basename(spec.url)}"
        return spec.url

    def cleanup(self) -> None:
        # Archives are only kept to serve several members of one call; raw/ keeps the files.
        for archive in self.fetched_archives:
            with contextlib.suppress(FileNotFoundError):
                archive.unlink()
        self.discard_staged()
        with contextlib.suppress(OSError):
            self.downloads.rmdir()

    def discard_staged(self) -> None:
        """Delete members extracted ahead of their turn that were not placed."""
        for staged in self.staged.values():
            with contextlib.suppress(FileNotFoundError):
                staged.unlink()
        self.staged.clear()

    def _place_extracted(self, archive: Path, spec: RawFile, target: Path) -> None:
        """Put ``spec.member`` of ``archive`` at ``target``, verified.

        The first member asked of a tar extracts, in the same pass, every other member of it
        that this dataset still lacks and the mirror does not hold as a plain file (a tar.gz is
        decompressed once, not once per file; a zip has an index and needs no such thing).
        """
        if spec.member and (archive, spec.member) not in self.staged and _is_tar(archive):
            siblings = [spec] + [
                other
                for other in self.files
                if other is not spec
                and other.member
                and other.url
                and _unpacks(other)
                and _url_basename(other.url) == archive.name
                and not (self.raw / other.name).is_file()
                and not (self.mirror_dir is not None and (self.mirror_dir / other.name).is_file())
            ]
            if len(siblings) > 1:
                self.downloads.mkdir(parents=True, exist_ok=True)
                dests = {
                    other.member: self.downloads / f".{archive.name}.{i}.member"
                    for i, other in enumerate(siblings)
                }
                try:
                    extract_members(archive, dests)
                except BaseException:
                    for dest in dests.values():
                        with contextlib.suppress(FileNotFoundError):
                            dest.unlink()
                    raise
                self.staged.update({(archive, member): dest for member, dest in dests.items()})
        staged = self.staged.pop((archive, spec.member), None) if spec.member else None
        with atomic_path(target) as tmp:
            if staged is not None:
                os.replace(staged, tmp)
            else:
                extract_member(archive, spec.member, tmp)
            _verify(
                tmp,
                spec.size,
                spec.sha256,
                what=spec.name,
                source=f"{archive}!{spec.member or archive.name}",
                md5=spec.md5,
            )

    # -- sources ---------------------------------------------------------------------------

    def _from_mirror(self, spec: RawFile, target: Path) -> str | None:
        assert self.mirror_dir is not None
        plain = self.mirror_dir / spec.name
        if plain.is_file():
            _place_copy(plain, target, spec, label=str(plain))
            return self._mirror_label(plain)
        if spec.url and _unpacks(spec):
            archive = self.mirror_dir / _url_basename(spec.url)
            if archive.is_file():
                _verify(
                    archive,
                    spec.archive_size,
                    spec.archive_sha256,
                    what=f"archive {archive.name} (for {spec.name})",
                    md5=spec.archive_md5,
                )
                self._place_extracted(archive, spec, target)
                return f"{self._mirror_label(archive)}!{spec.member or archive.name}"
        return None

    def _mirror_lacks(self, spec: RawFile) -> str:
        assert self.mirror_dir is not None
        if spec.url and _unpacks(spec):
            return f"the mirror {self.mirror_dir} has neither {spec.name} nor its archive {_url_basename(spec.url)}"
        return f"the mirror {self.mirror_dir} does not have {spec.name}"

    def _mirror_hint(self, spec: RawFile) -> str:
        alt = f" (or its archive {_url_basename(spec.url)})" if spec.url and _unpacks(spec) else ""
        return (
            f"No mirror is set: to work without the network, put {spec.name}{alt} in"
            f" <mirror>/{self.mirror_folder}/ and set env {MIRROR_ENV} to <mirror> (or params"
            " data.mirror, or the --mirror option)"
        )

    def _mirror_label(self, path: Path) -> str:
        # Relative to the mirror root, so the manifest is the same on every machine.
        assert self.mirror_dir is not None
        return f"mirror:{self.mirror_dir.name}/{path.name}"

    def _from_package(self, spec: RawFile, target: Path) -> str:
        assert spec.url is not None
        resource = _package_resource(spec.url)
        with importlib.resources.as_file(resource) as path:
            _place_copy(Path(path), target, spec, label=spec.url)
        return spec.url

    def _from_http(self, spec: RawFile, target: Path) -> str:
        assert spec.url is not None
        if not _unpacks(spec):
            # The URL is the file itself: its checks are the file's checks.
            self.downloads.mkdir(parents=True, exist_ok=True)
            with atomic_path(target) as tmp:
                self._download(spec.url, tmp, spec.size, spec.sha256, what=spec.name, md5=spec.md5)
            return spec.url
        archive = self.downloads / _url_basename(spec.url)
        if archive not in self.fetched_archives:
            if not (
                archive.is_file()
                and _check(archive, spec.archive_size, spec.archive_sha256, spec.archive_md5)
                is None
            ):
                self.downloads.mkdir(parents=True, exist_ok=True)
                with atomic_path(archive) as tmp:
                    self._download(
                        spec.url,
                        tmp,
                        spec.archive_size,
                        spec.archive_sha256,
                        what=f"archive {archive.name}",
                        md5=spec.archive_md5,
                    )
            self.fetched_archives.add(archive)
        self._place_extracted(archive, spec, target)
        return f"{spec.url}!{spec.member or archive.name}"

    # -- HTTP --------------------------------------------------------------------------------

    def _download(
        self,
        url: str,
        dest: Path,
        size: int | None,
        sha256: str | None,
        what: str,
        md5: str | None = None,
    ) -> None:
        """Download ``url`` to ``dest`` via ``<downloads>/<basename>.part``, resuming, then verify."""
        part = self.downloads / (_url_basename(url) + ".part")

        def warn(state: tenacity.RetryCallState) -> None:
            error = state.outcome.exception() if state.outcome else None
            delay = state.next_action.sleep if state.next_action else 0.0
            log.warning(
                "%s: attempt %d/%d failed (%s); retrying in %.1fs",
                url,
                state.attempt_number,
                self.retries,
                error,
                delay,
            )

        # Each attempt is a whole request that resumes from the .part (a body cut half-way is
        # retried too, which urllib3's Retry, retrying a request before its body, does not do).
        retrying = tenacity.Retrying(
            retry=tenacity.retry_if_exception_type(_TRANSIENT),
            stop=tenacity.stop_after_attempt(self.retries),
            wait=tenacity.wait_exponential(multiplier=self.backoff),  # backoff, 2x, 4x, ...
            before_sleep=warn,
            reraise=True,
        )
        try:
            retrying(self._download_once, url, part, size)
        except _Fatal as exc:
            raise DownloadError(f"{what}: {exc} ({url}){_partial_note(part, fatal=True)}") from None
        except _Unreachable as exc:
            raise _NetworkFailed(
                f"{what}: cannot connect to {urlparse(url).netloc} for {url} ({exc}); not retried:"
                f" no network, or the host is down{_partial_note(part)}"
            ) from None
        except _TRANSIENT as exc:
            # Say what is really left: a .part may never have been created (no connection), or
            # been discarded by the last attempt (stale, or resumed at the wrong byte).
            raise _NetworkFailed(
                f"{what}: download of {url} failed after {self.retries} attempts: {exc}{_partial_note(part)}"
            ) from None
        problem = _check(part, size, sha256, md5)
        if problem is not None:
            # A complete but wrong file cannot be resumed into a right one: start over next time.
            part.unlink()
            raise DownloadError(
                f"{what}: {problem} (downloaded from {url}); the download was discarded"
            )
        shutil.move(part, dest)

    def _download_once(self, url: str, part: Path, size: int | None) -> None:
        """One request; appends to ``part``.

        Raises:
            _Fatal: an HTTP answer that retrying will not change.
            _Unreachable: no connection could be made (DNS, refused, no route): not retried.
            ConnectionError and the other ``_TRANSIENT`` errors: worth another attempt (the
                file is not complete yet).
        """
        offset = part.stat().st_size if part.exists() else 0
        if size is not None and offset == size:
            return  # a previous run got every byte; only the checks are left
        if size is not None and offset > size:
            part.unlink()
            offset = 0
        headers = {"User-Agent": USER_AGENT, "Accept-Encoding": "identity"}
        if offset:
            headers["Range"] = f"bytes={offset}-"
        request = urllib.request.Request(url, headers=headers)
        try:
            response = urllib.request.urlopen(request, timeout=self.timeout)
        except urllib.error.HTTPError as exc:
            if exc.code == 416 and offset:
                # Range not satisfiable: either the .part is already whole, or it is stale.
                if size is None or offset == size:
                    return
                part.unlink()
                raise urllib.error.URLError("stale partial file discarded") from None
            if exc.code in _RETRY_HTTP:
                raise
            raise _Fatal(f"HTTP {exc.code} {exc.reason}") from None
        except urllib.error.URLError as exc:
            if _unreachable(exc.reason):
                raise _Unreachable(str(exc.reason)) from None
            raise
        with response:
            if offset and response.status == 206:
                start = _content_range_start(response.headers.get("Content-Range"))
                if start != offset:
                    part.unlink()
                    raise urllib.error.URLError(
                        f"server resumed at byte {start}, not {offset}; starting over"
                    )
                mode = "ab"
            else:
                # 200 to a Range request: the server does not resume, so start from zero.
                offset, mode = 0, "wb"
            length = response.headers.get("Content-Length")
            expected = offset + int(length) if length is not None and length.isdigit() else size
            bar = tqdm(
                total=expected,
                initial=offset,
                unit="B",
                unit_scale=True,
                unit_divisor=1024,
                desc=_url_basename(url),
                disable=not self.progress,
            )
            log.info("downloading %s%s", url, f" from byte {offset}" if offset else "")
            received = offset
            with bar, open(part, mode) as out:
                while True:
                    block = response.read(CHUNK)
                    if not block:
                        break
                    out.write(block)
                    received += len(block)
                    bar.update(len(block))
        if expected is not None and received < expected:
            raise ConnectionError("connection closed before the end of the file")


class _Fatal(Exception):
    """An HTTP failure that retrying will not fix (404, 403, ...)."""


class _Unreachable(Exception):
    """No connection to the host at all (offline, unknown host, nothing listening)."""


class _NetworkFailed(DownloadError):
    """A download that failed for want of a connection: a mirror would have served the file."""


def _unreachable(reason: object) -> bool:
    """Whether a ``URLError``'s reason is a connection that cannot be made (see _UNREACHABLE_ERRNOS)."""
    if isinstance(reason, socket.gaierror):
        return True  # the name does not resolve: offline, or no such host
    if isinstance(reason, TimeoutError):
        return False
    return isinstance(reason, OSError) and reason.errno in _UNREACHABLE_ERRNOS


# Failures another attempt may get past (HTTPError, for the codes of _RETRY_HTTP, is a URLError).
_TRANSIENT = (urllib.error.URLError, http.client.HTTPException, ConnectionError, TimeoutError)


def _partial_note(part: Path, fatal: bool = False) -> str:
    """What a failed download leaves for the next run, as the end of its error message.

    An empty ``.part`` resumes nothing, so it is removed rather than reported as kept.
    """
    try:
        received = part.stat().st_size
    except FileNotFoundError:
        received = 0
    if received:
        if fatal:
            return f"; the partial file {part} ({received} bytes, from an earlier run) is kept"
        return (
            f"; the {received} bytes received are kept in {part} and the next run resumes from them"
        )
    with contextlib.suppress(FileNotFoundError):
        part.unlink()
    return "" if fatal else "; no partial file is left to resume from"


# -- checks ------------------------------------------------------------------------------------


def _check(path: Path, size: int | None, sha256: str | None, md5: str | None = None) -> str | None:
    """None when ``path`` has the expected size, sha256 and md5 (where known), else the problem."""
    actual_size = path.stat().st_size
    if size is not None and actual_size != size:
        return f"size mismatch: expected {size} bytes, got {actual_size} bytes"
    wanted = {
        name: value.lower()
        for name, value in (("sha256", sha256), ("md5", md5))
        if value is not None
    }
    if wanted:
        # One pass computes every published digest (some datasets publish only an MD5).
        digests = {name: hashlib.new(name) for name in wanted}
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(CHUNK), b""):
                for digest in digests.values():
                    digest.update(block)
        for name, expected in wanted.items():
            actual = digests[name].hexdigest()
            if actual != expected:
                return f"{name} mismatch: expected {expected}, got {actual}"
    return None


def _verify(
    path: Path,
    size: int | None,
    sha256: str | None,
    what: str,
    source: str | None = None,
    md5: str | None = None,
) -> None:
    problem = _check(path, size, sha256, md5)
    if problem is not None:
        origin = f" (from {source})" if source else ""
        raise DownloadError(f"{what}: {problem}{origin}")


def _place_copy(origin: Path, target: Path, spec: RawFile, label: str) -> None:
    """Copy ``origin`` to ``target`` through a temp file; rename only if the copy verifies."""
    with atomic_path(target) as tmp:
        shutil.copyfile(origin, tmp)
        _verify(tmp, spec.size, spec.sha256, what=spec.name, source=label, md5=spec.md5)


# -- archives ----------------------------------------------------------------------------------


def extract_member(
    archive: str | os.PathLike[str], member: str | None, dest: str | os.PathLike[str]
) -> None:
    """Write one member of a zip / tar(.gz/.bz2/.xz) archive, or a single .gz/.bz2 file, to ``dest``.

    The format is told by content, not by name. Unsafe members are refused: absolute paths,
    ``..`` components, and links whose target leaves the archive's folder. Links inside it are
    followed to the file they name.

    Args:
        archive: the archive file.
        member: path inside the archive; ``None`` only for a single compressed file.
        dest: where to write the member's bytes (overwritten).

    Raises:
        DownloadError: unknown format, missing or unsafe member.

    Example:
        >>> extract_member("WikiQACorpus.zip", "WikiQACorpus/WikiQA-dev.tsv", "WikiQA-dev.tsv")  # doctest: +SKIP
    """
    path = Path(archive)
    if zipfile.is_zipfile(path):
        _extract_zip(path, _need_member(path, member), Path(dest))
    elif _is_tar(path):
        _extract_tar_members(path, {_need_member(path, member): Path(dest)})
    else:
        opener = _single_file_opener(path)
        if opener is None:
            raise DownloadError(f"{path}: not a zip, tar, gzip or bzip2 archive")
        try:
            with opener(path) as src, open(dest, "wb") as out:
                shutil.copyfileobj(src, out, CHUNK)
        except (OSError, EOFError) as exc:
            raise DownloadError(f"{path}: cannot decompress: {exc}") from None


def extract_members(
    archive: str | os.PathLike[str], wanted: Mapping[str, str | os.PathLike[str]]
) -> None:
    """Write several members of a zip or tar archive, each to its destination.

    A tar (plain or compressed) is read in one pass whatever the number of members; a zip has
    an index, so each member is read directly. Safety checks as :func:`extract_member`.

    Example:
        >>> extract_members("collectionandqueries.tar.gz", {"collection.tsv": "raw/collection.tsv",
        ...                 "queries.train.tsv": "raw/queries.train.tsv"})  # doctest: +SKIP
    """
    path = Path(archive)
    if zipfile.is_zipfile(path):
        for member, dest in wanted.items():
            _extract_zip(path, _need_member(path, member), Path(dest))
    elif _is_tar(path):
        _extract_tar_members(
            path, {_need_member(path, member): Path(dest) for member, dest in wanted.items()}
        )
    else:
        raise DownloadError(f"{path}: not a zip or tar archive")


def _need_member(archive: Path, member: str | None) -> str:
    if not member:
        raise DownloadError(f"{archive}: an archive, but the raw file names no member to extract")
    return _safe_name(archive, member)


def _safe_name(archive: Path, name: str) -> str:
    """Normalised member path, or DownloadError when it could escape the extraction folder."""
    if name.startswith(("/", "\\")) or (len(name) > 1 and name[1] == ":"):
        raise DownloadError(f"{archive}: refusing member {name!r}: absolute path")
    normal = posixpath.normpath(name.replace("\\", "/"))
    if normal == ".." or normal.startswith("../") or ".." in name.replace("\\", "/").split("/"):
        raise DownloadError(f"{archive}: refusing member {name!r}: path traversal ('..')")
    return normal


def _link_target(archive: Path, member: str, link: str, relative_to_member: bool) -> str:
    """The in-archive path a link points to; refused when it leaves the archive's folder."""
    if link.startswith("/"):
        raise DownloadError(
            f"{archive}: refusing member {member!r}: link to absolute path {link!r}"
        )
    base = posixpath.dirname(member) if relative_to_member else ""
    resolved = posixpath.normpath(posixpath.join(base, link))
    if resolved == ".." or resolved.startswith("../"):
        raise DownloadError(
            f"{archive}: refusing member {member!r}: link {link!r} escapes the archive folder"
        )
    return resolved


def _extract_zip(archive: Path, member: str, dest: Path) -> None:
    with zipfile.ZipFile(archive) as zf:
        infos = {posixpath.normpath(info.filename): info for info in zf.infolist()}
        name = member
        for _ in range(16):  # bounded link chain
            info = infos.get(name)
            if info is None:
                raise DownloadError(f"{archive}: no member {name!r} (it holds {_preview(infos)})")
            _safe_name(archive, info.filename)
            if stat.S_ISLNK(info.external_attr >> 16):
                link = zf.read(info).decode("utf-8", "replace")
                name = _link_target(archive, info.filename, link, relative_to_member=True)
                continue
            with zf.open(info) as src, open(dest, "wb") as out:
                shutil.copyfileobj(src, out, CHUNK)
            return
        raise DownloadError(f"{archive}: member {member!r}: too many links")


def _extract_tar_members(archive: Path, wanted: dict[str, Path]) -> None:
    """Write each wanted member of a tar to its destination, in one pass over the archive.

    A compressed tar is a stream: listing it (``getmembers``) and then extracting a member
    decompresses it twice, and once more per further member. Streaming it once serves every
    wanted member; a link is resolved after the pass (its target copied when it was extracted,
    else fetched by a further pass).
    """
    remaining: dict[str, list[Path]] = {}
    for member, dest in wanted.items():
        remaining.setdefault(_safe_name(archive, member), []).append(dest)
    for _ in range(16):  # bounded link chain
        extracted: dict[str, Path] = {}
        links: dict[str, str] = {}
        seen: dict[str, None] = {}
        try:
            # A 1 MiB read buffer: the default (10 KiB records) makes streaming several times slower.
            with tarfile.open(archive, "r|*", bufsize=1 << 20) as tf:
                for info in tf:
                    name = posixpath.normpath(info.name)
                    seen[name] = None
                    if name not in remaining:
                        continue
                    _safe_name(archive, info.name)
                    if info.issym() or info.islnk():
                        # Symlinks are relative to their folder, hard links to the archive root.
                        links[name] = _link_target(
                            archive, info.name, info.linkname, relative_to_member=info.issym()
                        )
                        continue
                    if not info.isfile():
                        raise DownloadError(f"{archive}: member {name!r} is not a regular file")
                    src = tf.extractfile(info)
                    assert src is not None
                    first, *others = remaining[name]
                    with src, open(first, "wb") as out:
                        shutil.copyfileobj(src, out, CHUNK)
                    for other in others:
                        shutil.copyfile(first, other)
                    extracted[name] = first
                    if len(extracted) + len(links) == len(remaining):
                        break  # all found: the rest of the stream need not be decompressed
        except (tarfile.TarError, EOFError, OSError) as exc:
            raise DownloadError(f"{archive}: cannot read the tar archive ({exc})") from None
        missing = [name for name in remaining if name not in extracted and name not in links]
        if missing:
            raise DownloadError(f"{archive}: no member {missing[0]!r} (it holds {_preview(seen)})")
        further: dict[str, list[Path]] = {}
        for name, target in links.items():
            if target in extracted:
                for dest in remaining[name]:
                    shutil.copyfile(extracted[target], dest)
            else:
                further.setdefault(target, []).extend(remaining[name])
        if not further:
            return
        remaining = further
    raise DownloadError(f"{archive}: members {sorted(wanted)}: too many links")


def _is_tar(path: Path) -> bool:
    try:
        with tarfile.open(path, "r:*") as tf:
            return tf.next() is not None
    except (tarfile.TarError, OSError, EOFError):
        return False


def _single_file_opener(path: Path) -> Any:
    with open(path, "rb") as handle:
        magic = handle.read(3)
    if magic[:2] == b"\x1f\x8b":
        return gzip.open
    if magic == b"BZh":
        return bz2.open
    return None


def _preview(infos: dict[str, Any], limit: int = 8) -> str:
    names = sorted(infos)
    more = f", ... {len(names) - limit} more" if len(names) > limit else ""
    return ", ".join(names[:limit]) + more if names else "no files"


# -- helpers -----------------------------------------------------------------------------------


def _unpacks(spec: RawFile) -> bool:
    """Whether the URL is an archive (or compressed file) that holds the raw file."""
    if spec.member:
        return True
    if spec.url is None or spec.url.startswith("package:"):
        return False
    base = _url_basename(spec.url)
    return base.endswith((".gz", ".bz2")) and not spec.name.endswith((".gz", ".bz2"))


def _url_basename(url: str) -> str:
    name = posixpath.basename(unquote(urlparse(url).path))
    if not name or name in (".", ".."):
        raise DownloadError(f"cannot tell a file name from the URL {url!r}")
    return name


def _content_range_start(value: str | None) -> int | None:
    # "bytes 100-199/200"
    if not value or not value.startswith("bytes "):
        return None
    try:
        return int(value[6:].split("-", 1)[0])
    except ValueError:
        return None


def _package_resource(url: str) -> Any:
    """``package:pkg.sub/dir/file`` → the resource (the longest importable package prefix)."""
    spec = url[len("package:") :]
    package, _, resource = spec.partition("/")
    if not package or not resource:
        raise DownloadError(f"bad package URL {url!r}: expected 'package:<package>/<file>'")
    parts = package.split(".")
    # A data folder need not be a package: walk up to the nearest importable one.
    for cut in range(len(parts), 0, -1):
        try:
            importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        node = importlib.resources.files(".".join(parts[:cut]))
        for piece in [*parts[cut:], *resource.split("/")]:
            node = node.joinpath(piece)
        if not node.is_file():
            raise DownloadError(f"{url}: no such file shipped with reranklab")
        return node
    raise DownloadError(f"{url}: package {package!r} cannot be imported")


def _mirror_dataset_dir(mirror: str | None, dataset: Dataset) -> Path | None:
    if mirror is None:
        return None
    root = Path(mirror).expanduser()
    if not root.is_dir():
        raise DownloadError(
            f"mirror folder {root} does not exist (set by env {MIRROR_ENV} or params data.mirror); "
            "fix the path or unset it to download from the canonical URLs"
        )
    return root / dataset.mirror_folder


def _previous_sources(manifest: Path) -> dict[str, dict[str, Any]]:
    # Keeps the provenance of files that a re-run finds already present (with the same bytes).
    try:
        data = read_json(manifest)
        return {
            entry["name"]: {"source": entry["source"], "sha256": entry.get("sha256")}
            for entry in data.get("files", [])
        }
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return {}


def _recorded_checks(manifest: Path) -> dict[str, dict[str, Any]]:
    # What an earlier fetch recorded of each file: its size and sha256.
    try:
        return {
            entry["name"]: entry
            for entry in read_json(manifest).get("files", [])
            if isinstance(entry, dict)
        }
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return {}


def _trust_on_first_use(spec: RawFile, recorded: Mapping[str, Any] | None) -> RawFile:
    """``spec`` with the size and sha256 recorded at its first fetch, when none is published."""
    if spec.sha256 or spec.md5 or not recorded:
        return spec
    sha256, size = recorded.get("sha256"), recorded.get("size")
    if not (isinstance(sha256, str) and len(sha256) == 64 and isinstance(size, int)):
        return spec
    return dataclasses.replace(
        spec, sha256=sha256, size=spec.size if spec.size is not None else size
    )


def _manual_message(dataset: Dataset, missing: list[RawFile], raw: Path, mirror: str | None) -> str:
    lines = [
        f"dataset {dataset.name!r}: {len(missing)} file(s) must be obtained by hand (licence):"
    ]
    for spec in missing:
        alt = f" (or its archive {_url_basename(spec.url)})" if spec.url and _unpacks(spec) else ""
        lines.append(f"  - {spec.name}{alt}: {spec.manual}")
    places = [str(raw)]
    if mirror is not None:
        places.insert(0, str(Path(mirror).expanduser() / dataset.mirror_folder))
    else:
        places.append(
            f"<mirror>/{dataset.mirror_folder}/ with env {MIRROR_ENV} or params data.mirror set to <mirror>"
        )
    lines.append(
        "Place them, with exactly these names, in " + " or in ".join(places) + ", then run again."
    )
    return "\n".join(lines)
