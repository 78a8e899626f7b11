"""A long step's progress as one status line every ~12 s, in the job's log and on the terminal.

Training, encoding and re-ranking report where they are::

    train insuranceqa biencoder-L128 fold0: step 40/120, 33%, 12.1 pairs/s, eta 45 s

The line goes to the job's log (``logging``, i.e. stderr, which the rule sends to its log file)
and, when the environment names one in ``RERANKLAB_STATUS_FD``, to that file descriptor too:
the workflow opens it on Snakemake's own stderr before a job's redirections (``exec 3>&2`` in
its shell prefix, ``workflow/rules/common.smk``), so the line reaches the terminal while the
rest of the job's output stays in its log. The CLI names the job (:func:`set_job`).
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import time
from collections.abc import Callable

log = logging.getLogger(__name__)

STATUS_FD_ENV = "RERANKLAB_STATUS_FD"
INTERVAL = 12.0  # seconds between two status lines of one step

_job: str | None = None


def set_job(label: str | None) -> None:
    """Name the job in every status line of this process (``None``: each step names itself).

    Example:
        >>> set_job("rerank sample pointwise-L128 fold0"); set_job(None)
    """
    global _job
    _job = label


def job_label(step: str, dataset: str, cell: str, fold: int | str) -> str:
    """``<step> <dataset> <cell> fold<k>``, how a status line names its job.

    Example:
        >>> job_label("train", "insuranceqa", "biencoder-L128", 0)
        'train insuranceqa biencoder-L128 fold0'
    """
    fold = str(fold)
    return f"{step} {dataset} {cell} {fold if fold.startswith('fold') else f'fold{fold}'}"


def duration(seconds: float) -> str:
    """A duration the way a person reads it.

    Example:
        >>> duration(4.2), duration(45), duration(98), duration(3725)
        ('4 s', '45 s', '1 min 38 s', '1 h 2 min')
    """
    seconds = max(0, round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60} s"
    return f"{seconds // 3600} h {seconds % 3600 // 60} min"


def _status_fd() -> int | None:
    # The descriptor named by RERANKLAB_STATUS_FD, when it is open and is not stderr itself
    # (a job run by hand in a terminal would print each line twice).
    value = os.environ.get(STATUS_FD_ENV, "").strip()
    if not value.isdigit():
        return None
    fd = int(value)
    try:
        target = os.fstat(fd)
    except OSError:
        return None
    try:
        err = os.fstat(sys.stderr.fileno())
    except (OSError, ValueError, AttributeError):
        return fd
    return None if (target.st_dev, target.st_ino) == (err.st_dev, err.st_ino) else fd


def emit(line: str) -> None:
    """Write one status line to the log and, if one is named, the status descriptor."""
    log.info("%s", line)
    fd = _status_fd()
    if fd is not None:
        # The terminal may have gone away: the log still has the line.
        with contextlib.suppress(OSError):
            os.write(fd, (line + "\n").encode("utf-8", "replace"))


class Status:
    """Counts a step's units and emits a status line every ``interval`` seconds and at the end.

    Args:
        what: the step, e.g. ``train biencoder`` (replaced by the job's name when the CLI set one).
        total: units to do (steps, pairs).
        unit: the unit's name in the line.
        rate_unit: what the rate counts (``pairs``); ``None`` = units.
        initial: units already done (a resumed job): they count toward the total, not the rate.
        interval: seconds between two lines.
        clock: seconds, monotonic (tests pass their own).
        sink: where lines go (default :func:`emit`).
        enabled: False = count but emit nothing (a DDP rank other than the first).

    Example:
        >>> t = [0.0]
        >>> lines = []
        >>> status = Status("train x", 120, unit="step", rate_unit="pairs", interval=10,
        ...                 clock=lambda: t[0], sink=lines.append)
        >>> t[0] = 11.0; status.update(40, items=133)
        >>> lines[-1]
        'train x: step 40/120, 33%, 12.1 pairs/s, eta 22 s'
        >>> t[0] = 30.0; status.update(80, items=267); status.close()
        >>> lines[-1]
        'train x: step 120/120, 100%, 13.3 pairs/s, done in 30 s'
    """

    def __init__(
        self,
        what: str,
        total: int,
        *,
        unit: str = "step",
        rate_unit: str | None = None,
        initial: int = 0,
        interval: float = INTERVAL,
        clock: Callable[[], float] = time.monotonic,
        sink: Callable[[str], None] | None = None,
        enabled: bool = True,
    ) -> None:
        self.what = what
        self.total = int(total)
        self.unit = unit
        self.rate_unit = rate_unit
        self.done = int(initial)
        self.initial = int(initial)
        self.items = 0
        self.interval = float(interval)
        self.clock = clock
        self.sink = sink or emit
        self.started = clock()
        self.last = self.started
        self.enabled = enabled
        self.closed = False

    def update(self, n: int = 1, items: int | None = None) -> None:
        """Count ``n`` more units (and ``items`` more of the rate's unit); emit a line when due."""
        self.done += int(n)
        self.items += int(n if items is None else items)
        now = self.clock()
        if self.enabled and now - self.last >= self.interval:
            self.last = now
            self.sink(self.line(now))

    def line(self, now: float | None = None, final: bool = False) -> str:
        """The status line at ``now``."""
        now = self.clock() if now is None else now
        elapsed = max(now - self.started, 1e-9)
        name = self.name()
        parts = [f"{self.unit} {self.done}/{self.total}"]
        if self.total > 0:
            parts.append(f"{100 * self.done // self.total}%")
        parts.append(f"{self.items / elapsed:.1f} {self.rate_unit or self.unit + 's'}/s")
        if final:
            parts.append(f"done in {duration(elapsed)}")
        elif self.done > self.initial and self.total > self.done:
            remaining = (self.total - self.done) * elapsed / (self.done - self.initial)
            parts.append(f"eta {duration(remaining)}")
        return f"{name}: {', '.join(parts)}"

    def name(self) -> str:
        """The job's name (when the CLI set one), with the step when it is another step's.

        Example:
            >>> set_job("train wikiqa dmn-L256 fold0")
            >>> Status("train dmn", 9).name(), Status("validate", 9).name()
            ('train wikiqa dmn-L256 fold0', 'train wikiqa dmn-L256 fold0 (validate)')
            >>> set_job(None)
        """
        if _job is None:
            return self.what
        step = self.what.split()[0].replace("-", "") if self.what.strip() else ""
        return _job if step == _job.split()[0] else f"{_job} ({self.what})"

    def close(self) -> None:
        """Emit the final line (once)."""
        if self.enabled and not self.closed:
            self.sink(self.line(final=True))
        self.closed = True
