"""Mounting dss-tier for the tier tests: a tmpfs of their own, the built binary, and a
teardown that always unmounts and kills, whatever the test did. No tests here."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from swift_dss.mountinfo import mount_type
from swift_dss.policies import policy_path
from swift_dss.procinfo import DEAD_STATES, read_proc
from swift_dss.tierctl import TierError, binary, daemon, report
from swift_dss.tierctl.daemon import Daemon
from swift_dss.tierctl.fsck import fsck
from swift_dss.tierctl.options import MountOptions

MIB = 1 << 20
BIN = binary.SOURCE_BUILD
REFERENCE = policy_path("reference")
LRU = policy_path("lru")


def _unusable() -> str | None:
    if not BIN.exists():
        return f"{BIN} is not built (make setup)"
    if binary.fuse_missing():
        return "no FUSE"
    if os.geteuid() != 0:
        return "mounting a tmpfs needs root"
    return None


def mounted(mountpoint: Path) -> bool:
    return mount_type(mountpoint.resolve()) is not None


def kill_with_its_helper(pid: int, mountpoint: str | Path) -> None:
    """SIGKILL dss-tier daemon PID together with the fusermount3 that would unmount
    MOUNTPOINT once it died, as a service manager kills a unit's control group; return
    once the daemon is gone. Its mount stays, dead."""
    helpers = [
        int(entry.name)
        for entry in Path("/proc").iterdir()
        if entry.name.isdigit()
        and (info := read_proc(int(entry.name)))
        and info[2][:1] == ["fusermount3"]
        and str(mountpoint) in info[2]
    ]
    assert len(helpers) == 1, f"fusermount3 processes waiting on {mountpoint}: {helpers}"
    for victim in (*helpers, pid):
        os.kill(victim, signal.SIGKILL)
    deadline = time.monotonic() + 30
    while (info := read_proc(pid)) and info[0] not in DEAD_STATES:
        assert time.monotonic() < deadline, f"pid {pid} survived SIGKILL"
        time.sleep(0.05)


def force_unmount(path: Path) -> None:
    """Unmount whatever is at ``path`` (a dead FUSE mount included), lazily if busy."""
    daemon.detach(path.resolve())


class Tier:
    """One dss-tier daemon in the foreground, so that the test holds its process."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.ssd, self.hdd, self.mnt = base / "ssd", base / "hdd", base / "mnt"
        for d in (self.ssd, self.hdd, self.mnt):
            d.mkdir(parents=True, exist_ok=True)
        self.daemon: Daemon | None = None
        self.log = base / "daemon.log"

    @property
    def proc(self) -> subprocess.Popen[bytes] | None:
        return None if self.daemon is None else self.daemon.process

    def mount(
        self,
        cache_size: str = "16MiB",
        policy: Path = REFERENCE,
        mode: str | None = None,
        extra: tuple[str, ...] = (),
    ) -> None:
        options = MountOptions(cache_size=cache_size, policy=policy, mode=mode, extra=extra)
        self.daemon = daemon.spawn(str(BIN), self.ssd, self.hdd, self.mnt, options, self.log)
        try:
            daemon.wait_mounted(self.daemon)
        except TierError as err:
            raise RuntimeError(f"{err}: {self.log.read_text()}") from None

    def stats(self) -> dict:
        return report.stats(self.mnt, binary=BIN).raw

    def dump(self) -> dict:
        return report.dump(self.mnt, binary=BIN).raw

    def umount(self) -> None:
        """Clean unmount: returns once the daemon wrote back and exited."""
        daemon.clean_umount(self.mnt, binary=BIN)
        if self.proc is not None:
            assert self.proc.wait(timeout=60) == 0, self.log.read_text()
        self.daemon = None

    def kill(self) -> None:
        """kill -9 the daemon and clean up the dead mount it leaves."""
        if self.daemon is not None:
            daemon.kill(self.daemon)
            daemon.wait_exit(self.daemon, timeout=30)
            self.daemon = None
        force_unmount(self.mnt)

    def fsck(self, repair: bool = False) -> subprocess.CompletedProcess[str]:
        return fsck(self.ssd, self.hdd, repair, binary=BIN)


#: What the `make_tier` fixture hands a test: make_tier(name="t") -> Tier.
MakeTier = Callable[..., Tier]


def class_stats(stats: dict, cls: int) -> dict:
    """CLS's counters in a `stats()` document, zero for a class the tier left out."""
    return {**dataclasses.asdict(report.ClassStats()), **stats["classes"].get(str(cls), {})}


@pytest.fixture
def tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A fresh tmpfs for the test's directories, unmounted afterwards."""
    reason = _unusable()
    if reason:
        pytest.skip(reason)
    base = tmp_path / "tmpfs"
    base.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1g", "tmpfs", str(base)], check=True)
    try:
        yield base
    finally:
        force_unmount(base)


@pytest.fixture
def tiers(tmpfs: Path) -> Iterator[list[Tier]]:
    """Tiers the test creates (``make_tier``); each is killed and unmounted afterwards."""
    made: list[Tier] = []
    try:
        yield made
    finally:
        for t in made:
            if t.proc is not None and t.proc.poll() is None:
                with contextlib.suppress(TierError, subprocess.SubprocessError, AssertionError):
                    t.umount()
            t.kill()
        daemon.reap()


@pytest.fixture
def make_tier(tmpfs: Path, tiers: list[Tier]) -> object:
    def make(name: str = "t") -> Tier:
        t = Tier(tmpfs / name)
        tiers.append(t)
        return t

    return make
