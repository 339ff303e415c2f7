"""A dss-tier daemon for one mount point: started, waited for until its mount shows, settled,
stopped, killed, and its mount undone.

The daemon runs in the foreground of a session of its own (not `--daemon`, whose log is
the SSD directory's daemon.log) so that its messages, a refused option included, land in the
log the cluster names, and its pid is the daemon's own. A `Daemon` is what a
cluster's state file keeps of it (`record`, `from_record`), so that a later command finds
it by pid and command line.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from swift_dss.dssio.detect import TIER_FSTYPE
from swift_dss.mountinfo import mount_type
from swift_dss.procinfo import runs
from swift_dss.tierctl.binary import find
from swift_dss.tierctl.errors import TierError
from swift_dss.tierctl.options import MountOptions, mount_command

#: The root's xattr where the daemon answers its counters, its pid among them.
STATS_XATTR = "user.dss-tier.stats"
#: How long a daemon may take to show its mount.
MOUNT_TIMEOUT = 30.0
#: How long `dss-tier umount` waits for the daemon's write-back.
UMOUNT_TIMEOUT = 300
#: The "kind" of a tier mount's record in a cluster's state file.
KIND = "tier"

# Daemons this process started: reaped once they exit, so that none lingers as a zombie in
# a long-lived caller (a test session).
_children: list[subprocess.Popen[bytes]] = []


@dataclass
class Daemon:
    """A dss-tier daemon started for the mount point PATH."""

    path: str
    pid: int
    cmd: list[str]
    #: Its log, None if its output was discarded; its messages start at byte LOG_START.
    log: str | None
    log_start: int = 0
    #: A dss-tier mount was on PATH when it started (one whose daemon died, which it
    #: unmounts, or another daemon's, which makes it fail): its own is the one that
    #: names its pid.
    over_mount: bool = field(default=False, compare=False)
    _child: subprocess.Popen[bytes] | None = field(default=None, repr=False, compare=False)

    @property
    def process(self) -> subprocess.Popen[bytes] | None:
        """The daemon as a child of this process, if this process started it."""
        if self._child is not None:
            return self._child
        return next((c for c in _children if c.pid == self.pid), None)

    def record(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "kind": KIND,
            "pid": self.pid,
            "cmd": self.cmd,
            "log": self.log,
            "log_start": self.log_start,
            "over_mount": self.over_mount,
        }

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> Daemon:
        return cls(
            path=record["path"],
            pid=int(record.get("pid") or 0),
            cmd=list(record.get("cmd", [])),
            log=record.get("log"),
            log_start=int(record.get("log_start", 0)),
            over_mount=bool(record.get("over_mount", False)),
        )


def spawn(
    binary: str,
    ssd: Path,
    hdd: Path,
    mountpoint: Path,
    options: MountOptions,
    log: Path | None,
) -> Daemon:
    """Start a daemon mounting SSD and HDD on MOUNTPOINT, without waiting for the mount
    (`wait_mounted` does). Its output is appended to LOG, or discarded if LOG is None."""
    for path in (ssd, hdd, mountpoint):
        path.mkdir(parents=True, exist_ok=True)
    cmd = mount_command(binary, ssd, hdd, mountpoint, options)
    over_mount = mount_type(mountpoint) == TIER_FSTYPE
    start = 0
    if log is None:
        child = _start(cmd, subprocess.DEVNULL)
    else:
        log.parent.mkdir(parents=True, exist_ok=True)
        with open(log, "ab") as out:
            # Where this daemon's messages start: the log may hold those of an earlier run.
            start = out.tell()
            child = _start(cmd, out)
    _children.append(child)
    return Daemon(
        str(mountpoint), child.pid, cmd, None if log is None else str(log), start, over_mount, child
    )


def _start(cmd: list[str], out: Any) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
    )


def alive(daemon: Daemon) -> bool:
    # A daemon this process started is judged by its Popen: until it has exec'd, its
    # command line is still ours, and a check by command line would think it gone.
    child = daemon.process
    if child is not None:
        return child.poll() is None
    return bool(daemon.pid) and runs(daemon.pid, [daemon.cmd])


def mounted(daemon: Daemon) -> bool:
    """A dss-tier mount shows on the daemon's mount point (its own, if another was there)."""
    if mount_type(daemon.path) != TIER_FSTYPE:
        return False
    if not daemon.over_mount:
        return True
    try:
        stats = json.loads(os.getxattr(daemon.path, STATS_XATTR))
    except (OSError, ValueError):
        return False
    return isinstance(stats, dict) and stats.get("pid") == daemon.pid


def wait_mounted(daemon: Daemon, timeout: float = MOUNT_TIMEOUT) -> None:
    """Return once the daemon's mount shows; TierError if it exits first or takes longer
    than TIMEOUT seconds."""
    deadline = time.monotonic() + timeout
    where = f" ({daemon.log})" if daemon.log else ""
    while not mounted(daemon):
        if not alive(daemon):
            reason = log_error(Path(daemon.log), daemon.log_start) if daemon.log else "no output"
            raise TierError(f"dss-tier mount of {daemon.path} failed: {reason}{where}")
        if time.monotonic() > deadline:
            see = f" (see {daemon.log})" if daemon.log else ""
            raise TierError(
                f"dss-tier mount of {daemon.path} did not appear within {timeout:.0f} s{see}"
            )
        time.sleep(0.05)


def log_error(log: Path, start: int = 0) -> str:
    """The daemon's error in LOG from byte START on: its last "dss-tier: " line (a parse
    error continues on further lines, whose last one says what was wrong), and that last
    line if different."""
    try:
        with open(log, "rb") as f:
            f.seek(start)
            lines = [line.strip() for line in f.read().decode(errors="replace").splitlines()]
    except OSError:
        return "no output"
    lines = [line for line in lines if line]
    if not lines:
        return "no output"
    first = next((line for line in reversed(lines) if line.startswith("dss-tier: ")), lines[-1])
    return first if first == lines[-1] else f"{first}: {lines[-1]}"


def settle(daemon: Daemon, timeout: float = 5.0) -> None:
    """Wait until a starting daemon has shown its mount or exited (a start that failed
    elsewhere may leave one half-started), so that what follows sees which it is."""
    deadline = time.monotonic() + timeout
    while alive(daemon) and mount_type(daemon.path) is None and time.monotonic() < deadline:
        time.sleep(0.05)


def kill(daemon: Daemon) -> None:
    """SIGKILL the daemon if it runs: no write-back. Only the daemon, not its process
    group, so that FUSE's auto-unmount helper still lets the mount go."""
    if alive(daemon):
        with contextlib.suppress(ProcessLookupError):
            os.kill(daemon.pid, signal.SIGKILL)


def wait_exit(daemon: Daemon, timeout: float = 10) -> None:
    """Wait for a daemon this process started to exit (no-op for others)."""
    child = daemon.process
    if child is not None:
        child.wait(timeout)


def stop(daemon: Daemon, timeout: float = 5.0) -> None:
    """Kill a daemon still running TIMEOUT seconds after its unmount (stuck, or never
    mounted)."""
    deadline = time.monotonic() + timeout
    while alive(daemon) and time.monotonic() < deadline:
        time.sleep(0.05)
    if alive(daemon):
        kill(daemon)
        wait_exit(daemon)


def discard(daemons: list[Daemon]) -> None:
    """Kill every daemon in DAEMONS without its final write-back (their dirty data is lost);
    their mounts are left for the caller to undo."""
    for daemon in daemons:
        settle(daemon)
        kill(daemon)
    for daemon in daemons:
        wait_exit(daemon)


def clean_umount(
    mountpoint: str | Path, binary: str | Path | None = None, timeout: int = UMOUNT_TIMEOUT
) -> None:
    """`dss-tier umount`: return once the daemon has written every dirty block back and
    exited; TierError if it fails."""
    tier = str(binary) if binary is not None else find()
    if tier is None:
        raise TierError(f"cannot unmount {mountpoint}: the dss-tier binary is missing")
    proc = subprocess.run(
        [tier, "umount", "--timeout", str(timeout), str(mountpoint)],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        reason = (proc.stderr or proc.stdout).strip().splitlines()
        last = reason[-1] if reason else f"exit {proc.returncode}"
        raise TierError(f"dss-tier umount of {mountpoint} failed: {last}")


def unmount(mountpoint: str | Path, timeout: int = UMOUNT_TIMEOUT) -> None:
    """Undo the tier mount on MOUNTPOINT whichever way works, each tried only while it is
    still mounted: `dss-tier umount` (after the write-back), then fusermount3 -u."""
    path = str(mountpoint)
    attempts = []
    tier = find()
    if tier:
        attempts.append([tier, "umount", "--timeout", str(timeout), path])
    attempts.append(["fusermount3", "-u", path])
    for cmd in attempts:
        if mount_type(path) is None:
            return
        subprocess.run(cmd, capture_output=True, check=False)


def detach(mountpoint: str | Path) -> None:
    """Detach whatever is mounted on MOUNTPOINT (a dead FUSE mount included) at once, to be
    freed once unused."""
    path = str(mountpoint)
    for cmd in (["fusermount3", "-u", "-z", path], ["umount", "-l", path]):
        if mount_type(path) is None:
            return
        subprocess.run(cmd, capture_output=True, check=False)


def reap() -> None:
    """Forget the daemons that have exited (collecting their exit status)."""
    _children[:] = [c for c in _children if c.poll() is None]
