"""The processes a cluster starts on this machine, and the state file that records them, so
that a later command (`status`, `down`, a test's teardown) finds and stops exactly what an
earlier one started, and nothing else.

Each process runs in a session of its own: it outlives the command that started it, and
its workers share its process group, whose id is its pid. A process counts as the
recorded one only while it runs the recorded command line, so a recycled pid is never
mistaken for it, let alone signalled.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from swift_dss.procinfo import group_members, runs

#: One readiness check: the process it waits for, and a probe that is true once it answers.
Check = tuple[str, Callable[[], bool]]


def exit_reason(returncode: int | None) -> str:
    """How a child ended, from Popen's RETURNCODE (None: it still runs, but not the recorded
    command any more)."""
    if returncode is None:
        return "no longer runs its recorded command"
    if returncode < 0:
        try:
            return f"killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"killed by signal {-returncode}"
    return f"exit status {returncode}"


def log_tail(path: Path, lines: int = 1) -> str:
    try:
        text = path.read_text(errors="replace").strip().splitlines()
    except OSError:
        return ""
    return " | ".join(text[-lines:])


class StateFile:
    """A cluster's JSON state (config, ports, processes, mounts) and the file it lives in.

    The file is replaced whole, never rewritten in place, so that a reader sees either the
    previous state or the new one.
    """

    def __init__(self, path: Path, data: dict[str, Any] | None = None) -> None:
        self.path = path
        self.data: dict[str, Any] = data or {}

    @classmethod
    def load(cls, path: Path, error: type[Exception], missing: str) -> StateFile:
        """The state in PATH; ERROR(MISSING) if there is none, ERROR(why) if it is unreadable."""
        try:
            data = json.loads(path.read_text())
        except FileNotFoundError:
            raise error(missing) from None
        except (OSError, ValueError) as err:
            raise error(f"cannot read {path}: {err}") from None
        return cls(path, data)

    def exists(self) -> bool:
        return self.path.exists()

    def save(self) -> None:
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.data, indent=2) + "\n")
        tmp.replace(self.path)

    def mounts(self) -> list[dict[str, str]]:
        return self.data.get("mounts", [])

    def forget(self) -> None:
        """Delete the file once everything it records is gone."""
        self.path.unlink(missing_ok=True)
        self.data["processes"] = {}
        self.data["mounts"] = []


class ProcessSet:
    """The processes recorded under "processes" in a state file, by name.

    A record holds the pid, the command line, the log file and whatever the cluster adds.
    A process started through a wrapper that execs it in place (`ip netns exec`) also
    records that "launch" command line: until the exec the process runs that one.
    """

    def __init__(self, state: StateFile, cwd: Path, error: type[Exception]) -> None:
        self.state = state
        self.cwd = cwd
        self.error = error
        self._children: list[subprocess.Popen[bytes]] = []

    @property
    def records(self) -> dict[str, dict[str, Any]]:
        return self.state.data.setdefault("processes", {})

    @staticmethod
    def commands(record: dict[str, Any]) -> list[list[str]]:
        return [record["cmd"], record["launch"]] if "launch" in record else [record["cmd"]]

    def spawn(
        self,
        name: str,
        cmd: list[str],
        log: Path,
        launch: list[str] | None = None,
        **extra: Any,
    ) -> None:
        """Start CMD (by way of LAUNCH if given) in a session of its own, output to LOG."""
        log.parent.mkdir(parents=True, exist_ok=True)
        with open(log, "ab") as out:
            child = subprocess.Popen(
                launch or cmd,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                cwd=self.cwd,
                start_new_session=True,
            )
        self._children.append(child)
        record: dict[str, Any] = {"pid": child.pid, "cmd": cmd}
        if launch is not None:
            record["launch"] = launch
        self.records[name] = {**record, "log": str(log), **extra}
        self.state.save()

    def _reap(self) -> None:
        # Children this object started and that have exited would linger as zombies.
        for child in self._children:
            child.poll()

    def ended(self, name: str) -> str:
        """How NAME's process ended, for a process this object started (else "exited")."""
        child = self._child(self.records[name]["pid"])
        return "exited" if child is None else exit_reason(child.poll())

    def _child(self, pid: int) -> subprocess.Popen[bytes] | None:
        return next((c for c in self._children if c.pid == pid), None)

    def alive(self, name: str) -> bool:
        record = self.records[name]
        child = self._child(record["pid"])
        if child is not None:
            # An unreaped child's pid cannot be reused, so its exit status is the whole
            # truth; /proc was once seen to miss a live server's command line at start-up.
            return child.poll() is None
        self._reap()
        return runs(record["pid"], self.commands(record))

    def any_alive(self) -> bool:
        return any(self.alive(name) for name in self.records)

    def all_alive(self) -> bool:
        return bool(self.records) and all(self.alive(name) for name in self.records)

    def members(self, record: dict[str, Any]) -> list[int]:
        return group_members(record["pid"], self.commands(record))

    def cpu_seconds(self) -> float:
        """User plus system CPU time used so far by every live process of the set."""
        tick = os.sysconf("SC_CLK_TCK")
        total = 0
        for record in self.records.values():
            for pid in self.members(record):
                try:
                    stat = Path(f"/proc/{pid}/stat").read_text()
                except OSError:
                    continue  # gone since it was listed
                # Fields after the parenthesised command name; utime and stime are 14 and 15.
                fields = stat.rsplit(")", 1)[1].split()
                total += int(fields[11]) + int(fields[12])
        return total / tick

    def survivors(self, records: list[dict[str, Any]]) -> list[int]:
        self._reap()
        return [pid for record in records for pid in self.members(record)]

    def signal(self, records: list[dict[str, Any]], sig: signal.Signals) -> int:
        """Send SIG to every member of RECORDS' groups, newest first; return how many got it."""
        count = 0
        for record in reversed(records):
            for pid in self.members(record):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, sig)
                    count += 1
        return count

    def wait_gone(self, records: list[dict[str, Any]], timeout: float, interval: float) -> None:
        deadline = time.monotonic() + timeout
        while self.survivors(records) and time.monotonic() < deadline:
            time.sleep(interval)

    def stop_all(self, timeout: float) -> list[int]:
        """SIGTERM everything, SIGKILL what is left after TIMEOUT; return the pids still alive."""
        records = list(self.records.values())
        self.signal(records, signal.SIGTERM)
        self.wait_gone(records, timeout, 0.1)
        if self.survivors(records):
            self.signal(records, signal.SIGKILL)
            time.sleep(0.5)
        return self.survivors(records)

    def wait_ready(
        self, checks: list[Check], timeout: float, interval: float, exited: str = "exited"
    ) -> None:
        """Return once every check has passed, in order. Fail as soon as any process has
        exited (the message says it EXITED, how it ended and its log's last line) or once
        TIMEOUT is up."""
        deadline = time.monotonic() + timeout
        for name, check in checks:
            while not check():
                for pname, record in self.records.items():
                    if not self.alive(pname):
                        tail = log_tail(Path(record["log"]))
                        raise self.error(
                            f"{pname} {exited} ({self.ended(pname)}): "
                            f"{tail or 'no output'} ({record['log']})"
                        )
                if time.monotonic() > deadline:
                    raise self.error(
                        f"{name} did not answer within {timeout:.0f} s "
                        f"(see {self.records[name]['log']})"
                    )
                time.sleep(interval)

    def status(self, *fields: str) -> dict[str, dict[str, Any]]:
        """Name -> pid, whether it is alive, and FIELDS of its record."""
        return {
            name: {
                "pid": record["pid"],
                "alive": self.alive(name),
                **{f: record[f] for f in fields},
            }
            for name, record in self.records.items()
        }
