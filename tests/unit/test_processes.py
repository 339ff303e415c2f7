"""A process that ends before it is ready is reported with how it ended and its log's last
line, so that a failed start-up says whether it crashed, was killed or gave up."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import pytest

from swift_dss.deploy.processes import ProcessSet, StateFile, exit_reason


class StartError(Exception):
    pass


def never() -> bool:
    return False


def start_and_wait(tmp_path: Path, script: str) -> str:
    procs = ProcessSet(StateFile(tmp_path / "state.json"), tmp_path, StartError)
    procs.spawn("server", [sys.executable, "-c", script], tmp_path / "server.log")
    with pytest.raises(StartError) as err:
        procs.wait_ready([("server", never)], timeout=30, interval=0.05, exited="exited early")
    return str(err.value)


def test_a_crash_is_named_by_its_signal(tmp_path: Path) -> None:
    message = start_and_wait(tmp_path, "import os, signal; os.kill(os.getpid(), signal.SIGSEGV)")
    assert message.startswith("server exited early (killed by SIGSEGV): no output"), message


def test_an_error_exit_gives_its_status_and_last_line(tmp_path: Path) -> None:
    message = start_and_wait(tmp_path, "import sys; print('bad port'); sys.exit(3)")
    assert message.startswith("server exited early (exit status 3): bad port"), message


@pytest.mark.parametrize(
    ("code", "reason"),
    [
        (0, "exit status 0"),
        (1, "exit status 1"),
        (-signal.SIGKILL, "killed by SIGKILL"),
        (-200, "killed by signal 200"),
        (None, "no longer runs its recorded command"),
    ],
)
def test_exit_reason(code: int | None, reason: str) -> None:
    assert exit_reason(code) == reason


def test_a_child_is_alive_until_it_exits_whatever_proc_shows(tmp_path: Path) -> None:
    procs = ProcessSet(StateFile(tmp_path / "state.json"), tmp_path, StartError)
    procs.spawn("server", [sys.executable, "-c", "import time; time.sleep(60)"], tmp_path / "l")
    # As if /proc had shown another command line for the pid at that moment.
    procs.records["server"]["cmd"] = ["something", "else"]
    assert procs.alive("server")
    pid = procs.records["server"]["pid"]
    os.kill(pid, signal.SIGKILL)
    procs._child(pid).wait(10)  # type: ignore[union-attr]
    assert not procs.alive("server")
    assert procs.ended("server") == "killed by SIGKILL"
