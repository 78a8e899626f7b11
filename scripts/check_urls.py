#!/usr/bin/env python
"""Opt-in liveness check of the canonical URLs of every registered dataset (needs internet).

One HEAD request per distinct HTTP(S) URL (a ranged GET of one byte where HEAD is refused);
reports the status and compares the size the server announces with the size the dataset
module declares. Never run by the tests; run it by hand or in a scheduled CI job:

    python scripts/check_urls.py            # every registered dataset
    python scripts/check_urls.py wikiqa     # some of them

Exit status: 0 when every URL answers 2xx with the declared size (where both are known), 1 otherwise.
"""

from __future__ import annotations

import argparse
import sys
import urllib.error
import urllib.request

from reranklab.data import dataset_names, get_dataset
from reranklab.data.download import USER_AGENT

_HEAD_REFUSED = {403, 405, 501}


def _announced_size(response: object) -> int | None:
    headers = response.headers  # type: ignore[attr-defined]
    total = headers.get("Content-Range", "")
    if "/" in total and total.rsplit("/", 1)[1].isdigit():
        return int(total.rsplit("/", 1)[1])
    length = headers.get("Content-Length")
    return int(length) if length and length.isdigit() else None


def probe(url: str, timeout: float = 30.0) -> tuple[int | None, int | None, str]:
    """Status code, announced size and a note for ``url`` (HEAD, else a 1-byte ranged GET).

    Example:
        >>> probe("https://download.microsoft.com/download/E/5/F/E5FCFCEE-7005-4814-853D-DAA7C66507E0/WikiQACorpus.zip")  # doctest: +SKIP
        (200, 7094233, 'HEAD')
    """
    for method, headers in (("HEAD", {}), ("GET", {"Range": "bytes=0-0"})):
        request = urllib.request.Request(
            url, method=method, headers={"User-Agent": USER_AGENT, **headers}
        )
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                return response.status, _announced_size(response), method
        except urllib.error.HTTPError as exc:
            if method == "HEAD" and exc.code in _HEAD_REFUSED:
                continue
            return exc.code, None, f"{method}: {exc.reason}"
        except (urllib.error.URLError, OSError) as exc:
            return None, None, f"{method}: {exc}"
    return None, None, "no answer"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("datasets", nargs="*", help="dataset names (default: all registered)")
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds per request")
    args = parser.parse_args(argv)

    failures = 0
    for name in args.datasets or dataset_names():
        dataset = get_dataset(name)
        expected: dict[str, int | None] = {}
        for spec in dataset.files:
            if spec.url and spec.url.startswith(("http://", "https://")):
                # An archive URL announces the archive's size; a plain file its own.
                size = (
                    spec.archive_size if spec.member or spec.archive_size is not None else spec.size
                )
                expected.setdefault(spec.url, size)
        if not expected:
            print(f"{name}: no HTTP(S) URLs (packaged or manual files only)")
        for url, size in expected.items():
            status, announced, note = probe(url, args.timeout)
            ok = status is not None and 200 <= status < 300
            if ok and size is not None and announced is not None and announced != size:
                ok = False
                note += f"; size {announced} != declared {size}"
            failures += not ok
            print(
                f"{'OK  ' if ok else 'FAIL'} {name}: {url} status={status} size={announced} ({note})"
            )
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
