"""A SIGTERM stops Snakemake instead of hanging it (reranklab.workflow.signals, the Snakefile's
onstart hook): Snakemake 9's handler takes its scheduler's non-reentrant lock in the main
thread, which may already hold it while a failed job is cleaned up."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

# Snakemake's own handler, bound to a scheduler's lock and semaphore; SIGTERM arrives while the
# main thread holds the lock, as in JobScheduler._finish_jobs and _handle_error.
SCENARIO = textwrap.dedent(
    """
    import os, signal, sys, threading, types
    from snakemake.scheduling.job_scheduler import JobScheduler
    from reranklab.workflow.signals import defer_sigterm

    scheduler = types.SimpleNamespace(
        _lock=threading.Lock(), _open_jobs=threading.Semaphore(0), _user_kill=None
    )
    signal.signal(signal.SIGTERM, types.MethodType(JobScheduler.exit_gracefully, scheduler))
    if sys.argv[1] == "deferred":
        assert defer_sigterm()
    with scheduler._lock:
        os.kill(os.getpid(), signal.SIGTERM)
        sum(range(100_000))  # the handler runs here, in the main thread
    assert scheduler._open_jobs.acquire(timeout=20)
    print(scheduler._user_kill)
    """
)


def _scenario(mode: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", SCENARIO, mode], capture_output=True, text=True, timeout=15
    )


def test_snakemakes_own_sigterm_handler_hangs_while_its_lock_is_held():
    pytest.importorskip("snakemake")
    # The bug, as found: the process never ends (the test would hang without the timeout).
    with pytest.raises(subprocess.TimeoutExpired):
        _scenario("plain")


def test_the_deferred_handler_stops_the_scheduler_once_the_lock_is_free():
    pytest.importorskip("snakemake")
    done = _scenario("deferred")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "graceful"  # Snakemake's own shutdown, as it would run
