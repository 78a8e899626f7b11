"""What a benchmark's child process measures of itself: peak resident memory and CPU time."""

from __future__ import annotations

import resource
from pathlib import Path


def peak_rss_kib() -> int:
    """This process's peak resident memory in KiB.

    ``VmHWM`` of ``/proc/self/status`` where there is one: ``ru_maxrss`` of a child started by
    ``vfork`` + ``exec`` (as ``subprocess`` does) starts at its parent's size, not at its own.

    Example:
        >>> peak_rss_kib() > 0
        True
    """
    status = Path("/proc/self/status")
    if status.is_file():
        for line in status.read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def cpu_seconds() -> float:
    """User + system CPU seconds of this process so far, all its threads together.

    Example:
        >>> cpu_seconds() > 0
        True
    """
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime
