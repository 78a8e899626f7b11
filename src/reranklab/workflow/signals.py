"""A SIGTERM that stops Snakemake instead of hanging it: the Snakefile's ``onstart`` hook.

Snakemake 9 (9.27.1 and before) installs ``JobScheduler.exit_gracefully`` as its SIGTERM
handler. The handler takes the scheduler's lock, a non-reentrant ``threading.Lock``, and Python
runs a signal handler in the main thread, between two bytecodes of whatever it is doing. When
that is ``_finish_jobs`` or ``_handle_error`` (both run holding the lock, e.g. while a failed
job is cleaned up), the handler waits for a lock its own thread holds: Snakemake stays alive
with no job, holding the study's lock, until it is killed by hand. SLURM's walltime and
``scancel`` send exactly this signal. :func:`defer_sigterm` runs Snakemake's own handler in a
thread of its own instead, which waits until the main thread lets the lock go; Snakemake then
shuts down as it always does (no new job; the running ones, signalled with it, end).

Example:
    >>> import signal
    >>> previous = signal.signal(signal.SIGTERM, signal.SIG_DFL)
    >>> defer_sigterm()  # not Snakemake's handler: left alone
    False
    >>> _ = signal.signal(signal.SIGTERM, previous)
"""

from __future__ import annotations

import logging
import signal
import threading
from types import FrameType
from typing import Any

log = logging.getLogger("reranklab")

# The name of the handler Snakemake's JobScheduler installs for SIGTERM.
SNAKEMAKE_HANDLER = "exit_gracefully"


def defer_sigterm() -> bool:
    """Re-install Snakemake's SIGTERM handler so that it runs outside the main thread.

    Called from the ``onstart`` hook, after Snakemake's scheduler installed its handler and
    before it schedules a job. Any other handler (a test's, a later Snakemake's of another
    name) is left as it is.

    Returns:
        True when Snakemake's handler was found and deferred.
    """
    handler = signal.getsignal(signal.SIGTERM)
    if not callable(handler) or getattr(handler, "__name__", "") != SNAKEMAKE_HANDLER:
        return False

    def deferred(signum: int, frame: FrameType | None) -> None:
        # Only start a thread here: the main thread may hold the lock the handler takes.
        threading.Thread(
            target=_call, args=(handler, signum), name="snakemake-sigterm", daemon=True
        ).start()

    signal.signal(signal.SIGTERM, deferred)
    return True


def _call(handler: Any, signum: int) -> None:
    log.info("SIGTERM: Snakemake stops scheduling; the running jobs end with the signal")
    handler(signum, None)
