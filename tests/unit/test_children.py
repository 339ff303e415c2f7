"""Stopping child processes: a child that ignores SIGTERM is still stopped, and one that
has exited is left alone."""

from __future__ import annotations

import multiprocessing
import signal
import subprocess
import sys
import time

from swift_dss import children

IGNORES_TERM = (
    "import signal, sys, time\n"
    "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
    "print('ready', flush=True)\n"
    "time.sleep(60)\n"
)


def test_stop_terminates_a_child_that_obeys() -> None:
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    children.stop(proc, grace=10)
    assert proc.returncode == -signal.SIGTERM


def test_stop_kills_a_child_that_ignores_sigterm() -> None:
    proc = subprocess.Popen([sys.executable, "-c", IGNORES_TERM], stdout=subprocess.PIPE)
    assert proc.stdout is not None and proc.stdout.readline() == b"ready\n"
    children.stop(proc, grace=0.2)
    assert proc.returncode == -signal.SIGKILL
    proc.stdout.close()


def test_stop_leaves_an_exited_child_alone() -> None:
    proc = subprocess.Popen([sys.executable, "-c", "raise SystemExit(3)"])
    proc.wait()
    children.stop(proc)
    assert proc.returncode == 3


def test_join_terminates_only_the_processes_still_running() -> None:
    # spawn, not fork: the test process may hold eventlet's hub, which must not fork.
    ctx = multiprocessing.get_context("spawn")
    quick = ctx.Process(target=time.sleep, args=(0,))
    slow = ctx.Process(target=time.sleep, args=(60,))
    quick.start()
    slow.start()
    children.join([quick, slow], grace=1.0)
    assert quick.exitcode == 0
    assert slow.exitcode == -signal.SIGTERM
