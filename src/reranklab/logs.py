"""Logging for the CLI steps: one readable stream per job (Snakemake sends it to the rule's log)."""

from __future__ import annotations

import io
import logging
import os
import re
import sys
import time
import warnings
from typing import TextIO

_LINE_ENDS = re.compile(r"([\r\n])")
PROGRESS_INTERVAL = 30.0  # seconds between two progress lines of one bar in a log file


class ProgressLines(io.TextIOBase):
    r"""A text stream for log files that turns tqdm's in-place updates into whole lines.

    On a terminal tqdm redraws its bar with carriage returns; in a rule's log file that makes
    one endless line. Wrapped in this stream, each bar leaves a line at most every ``interval``
    seconds plus its final state, and everything else (log records) passes through as is.

    Args:
        stream: where the lines go (the job's ``stderr``).
        interval: seconds between two intermediate lines of a bar.

    Example:
        >>> out = io.StringIO()
        >>> lines = ProgressLines(out, interval=3600)
        >>> _ = lines.write("\rtrain:  10%|#  | 1/10\rtrain: 100%|###| 10/10  \n")
        >>> out.getvalue()
        'train: 100%|###| 10/10\n'
    """

    def __init__(self, stream: TextIO, interval: float = PROGRESS_INTERVAL) -> None:
        super().__init__()
        self.stream = stream
        self.interval = interval
        self._current = ""  # text since the last \r or \n
        self._drawing = False  # whether _current is a bar's redraw (it followed a \r)
        self._last_line = time.monotonic()

    def write(self, text: str) -> int:
        if self._drawing and self._current and text[:1] not in ("\r", "\n", ""):
            # A log record written while a bar is drawn gets a line of its own; the bar's
            # state is dropped, its next redraw (at the latest when it closes) supersedes it.
            self._current, self._drawing = "", False
        for piece in _LINE_ENDS.split(text):
            if piece == "\r":
                if (
                    self._drawing
                    and self._current.strip()
                    and time.monotonic() - self._last_line >= self.interval
                ):
                    self._emit(self._current)
                self._current, self._drawing = "", True
            elif piece == "\n":
                self._emit(self._current)
                self._current, self._drawing = "", False
            elif piece:
                self._current += piece
        return len(text)

    def _emit(self, line: str) -> None:
        self.stream.write(line.rstrip() + "\n")
        self._last_line = time.monotonic()

    def flush(self) -> None:
        self.stream.flush()

    def isatty(self) -> bool:
        return False

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self.stream.fileno()


def setup_logging(verbose: bool = False) -> None:
    # Progress bars as lines when stderr is a file (a rule's log), so `cat`/`grep` read it.
    if not sys.stderr.isatty() and not isinstance(sys.stderr, ProgressLines):
        sys.stderr = ProgressLines(sys.stderr)
    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        datefmt="%H:%M:%S",
    )
    # Third-party chatter that says nothing about the study.
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    for noisy in ("alembic", "urllib3", "filelock", "httpx", "mlflow", "bm25s"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    warnings.filterwarnings("ignore", category=FutureWarning)
