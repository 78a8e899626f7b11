"""Each failed job's own error, on the terminal: Snakemake's ``onerror`` handler reads them.

Snakemake prints a failed job as ``Error in rule prepare: ... log: results/logs/prepare/x.log
(check log file(s) for error details)`` and the job's shell command; the one line that says
what is wrong (the file, the line, the key) is the last line of the job's log, where nobody
looks. :func:`failed_job_lines` finds each failed job in Snakemake's own log and returns that
line, which the root ``Snakefile``'s ``onerror`` prints.

Example:
    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> _ = (folder / "job.log").write_text("reading\\nreranklab prepare: error: q.tsv, line 3: no tab\\n")
    >>> _ = (folder / "snakemake.log").write_text(
    ...     f"Error in rule prepare:\\n    jobid: 3\\n    log: {folder / 'job.log'} (check log file(s) for error details)\\n")
    >>> failed_job_lines(folder / "snakemake.log")
    ['rule prepare: reranklab prepare: error: q.tsv, line 3: no tab']
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path

_ERROR = re.compile(r"^Error in rule (\S+):")
_LOG = re.compile(r"^\s+log: (.+?)(?: \(check log file\(s\) for error details\))?$")
_TAIL_BYTES = 8192  # the end of a job's log is enough for its last line


def _last_line(path: Path) -> str | None:
    try:
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            handle.seek(max(0, handle.tell() - _TAIL_BYTES))
            tail = handle.read().decode("utf-8", errors="replace")
    except OSError:
        return None
    lines = [line.strip() for line in tail.splitlines() if line.strip()]
    return lines[-1] if lines else None


def failed_job_lines(
    snakemake_log: str | os.PathLike[str] | Sequence[str | os.PathLike[str]] | None,
) -> list[str]:
    """``rule <name>: <the last line of its log>`` for each failed job of a Snakemake run
    (a job with an empty log is named with where its log is). ``snakemake_log``: what
    ``onerror`` gets as ``log`` (a path, or a list of them in Snakemake 9)."""
    if not snakemake_log:
        return []
    logs = [snakemake_log] if isinstance(snakemake_log, str | os.PathLike) else snakemake_log
    text = "\n".join(
        Path(path).read_text(encoding="utf-8", errors="replace")
        for path in logs
        if Path(path).is_file()
    )
    out: list[str] = []
    rule: str | None = None
    for line in text.splitlines():
        error = _ERROR.match(line)
        if error:
            rule = error.group(1)
            continue
        found = _LOG.match(line)
        if rule and found:
            for path in found.group(1).split(", "):
                last = _last_line(Path(path))
                out.append(f"rule {rule}: {last}" if last else f"rule {rule}: see {path} (empty)")
            rule = None
    return list(dict.fromkeys(out))
