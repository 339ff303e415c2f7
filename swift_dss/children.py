"""Stopping the child processes a command started, whatever state they are in: a polite
signal first, then, past a grace period, one that cannot be ignored, so that no run
leaves a child behind and none waits on one forever.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import signal
import subprocess
from collections.abc import Iterable, Iterator
from typing import Any


def stop(proc: subprocess.Popen, grace: float = 10.0) -> None:
    """SIGTERM PROC, then SIGKILL it if it has not exited within GRACE seconds; reaped."""
    if proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(grace)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def join(procs: Iterable[multiprocessing.Process], grace: float) -> None:
    """Wait up to GRACE seconds for each of PROCS, then SIGTERM the ones still running."""
    for p in procs:
        p.join(timeout=grace)
        if p.is_alive():
            p.terminate()
            p.join(timeout=grace)


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM unwinds like Ctrl-C, so that every `finally` takes down what it started
    (clusters, mounts, namespaces) when a command is stopped by `kill` or `timeout`."""

    def handler(_sig: int, _frame: Any) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
