"""Mounting dss-tier for the tier tests: a tmpfs of their own, the built binary, and a
teardown that always unmounts and kills, whatever the test did. No tests here."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BIN = ROOT / "tier" / "target" / "release" / "dss-tier"
REFERENCE = ROOT / "swift_dss" / "policies" / "reference.toml"
LRU = ROOT / "swift_dss" / "policies" / "lru.toml"


def _unusable() -> str | None:
    if not BIN.exists():
        return f"{BIN} is not built (make setup)"
    if not Path("/dev/fuse").exists() or shutil.which("fusermount3") is None:
        return "no FUSE"
    if os.geteuid() != 0:
        return "mounting a tmpfs needs root"
    return None


def mounted(mountpoint: Path) -> bool:
    mp = str(mountpoint.resolve())
    with open("/proc/self/mountinfo") as f:
        return any(line.split(" ")[4] == mp for line in f)


def force_unmount(path: Path) -> None:
    """Unmount whatever is at ``path`` (a dead FUSE mount included), lazily if busy."""
    for cmd in (["fusermount3", "-u", "-z", str(path)], ["umount", "-l", str(path)]):
        if not mounted(path):
            return
        subprocess.run(cmd, capture_output=True, check=False)


class Tier:
    """One dss-tier daemon in the foreground, so that the test holds its process."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.ssd, self.hdd, self.mnt = base / "ssd", base / "hdd", base / "mnt"
        for d in (self.ssd, self.hdd, self.mnt):
            d.mkdir(parents=True, exist_ok=True)
        self.proc: subprocess.Popen[bytes] | None = None
        self.log = base / "daemon.log"

    def mount(
        self,
        cache_size: str = "16MiB",
        policy: Path = REFERENCE,
        mode: str | None = None,
        extra: tuple[str, ...] = (),
    ) -> None:
        args = [str(BIN), "mount", "--ssd", str(self.ssd), "--hdd", str(self.hdd)]
        args += ["--cache-size", cache_size, "--policy", str(policy)]
        if mode:
            args += ["--mode", mode]
        args += [*extra, str(self.mnt)]
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(args, stdout=log, stderr=log)
        deadline = time.monotonic() + 30
        while not mounted(self.mnt):
            if self.proc.poll() is not None:
                raise RuntimeError(f"dss-tier mount failed: {self.log.read_text()}")
            if time.monotonic() > deadline:
                raise RuntimeError("dss-tier mount did not appear in 30 s")
            time.sleep(0.02)

    def stats(self) -> dict:
        out = subprocess.run(
            [str(BIN), "stats", "--json", str(self.mnt)], capture_output=True, check=True
        )
        return json.loads(out.stdout)

    def dump(self) -> dict:
        out = subprocess.run(
            [str(BIN), "dump", "--json", str(self.mnt)], capture_output=True, check=True
        )
        return json.loads(out.stdout)

    def umount(self) -> None:
        """Clean unmount: returns once the daemon wrote back and exited."""
        subprocess.run([str(BIN), "umount", str(self.mnt)], check=True, capture_output=True)
        if self.proc is not None:
            assert self.proc.wait(timeout=60) == 0, self.log.read_text()
            self.proc = None

    def kill(self) -> None:
        """kill -9 the daemon and clean up the dead mount it leaves."""
        if self.proc is not None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(timeout=30)
            self.proc = None
        force_unmount(self.mnt)

    def fsck(self, repair: bool = False) -> subprocess.CompletedProcess[str]:
        args = [str(BIN), "fsck", "--ssd", str(self.ssd), "--hdd", str(self.hdd)]
        return subprocess.run(
            [*args, "--repair"] if repair else args, capture_output=True, text=True, check=False
        )


def class_stats(stats: dict, cls: int) -> dict:
    zero = dict.fromkeys(
        ("cached_bytes", "dirty_bytes", "hits", "misses", "bypassed_bytes", "evicted_bytes"), 0
    )
    return {**zero, **stats["classes"].get(str(cls), {})}


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
                with contextlib.suppress(subprocess.SubprocessError, AssertionError):
                    t.umount()
            t.kill()


@pytest.fixture
def make_tier(tmpfs: Path, tiers: list[Tier]) -> object:
    def make(name: str = "t") -> Tier:
        t = Tier(tmpfs / name)
        tiers.append(t)
        return t

    return make
