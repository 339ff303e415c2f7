"""Crash safety: a write load with fsync, kill -9 of the daemon at random (seeded) moments,
remount, and every fsync-acknowledged file must read back exactly, with nothing staler
than what was acknowledged."""

from __future__ import annotations

import errno
import hashlib
import os
import random
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from swift_dss.mountinfo import mount_type
from tests.integration.tier_helpers import (  # noqa: F401
    BIN,
    REFERENCE,
    Tier,
    kill_with_its_helper,
    make_tier,
    tiers,
    tmpfs,
)

SEED = 20240611
ITERATIONS = 4

# The writer runs in its own process (it dies with the mount). Each file version is a
# deterministic function of (name, version), so the checker needs only the log. Lines:
# "begin NAME V" before a version is written, "ack NAME V" once its fsync returned.
# Half the versions are written Swift's way (temp file, fsync, rename), half in place.
WRITER = r"""
import hashlib, os, random, sys
mnt, log_path, seed, start = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])

def content(name, v):
    size = random.Random(f"{name}-{v}").choice([100, 4096, 5000, 70000, 300000])
    return hashlib.shake_256(f"{name}-{v}".encode()).digest(size)

rng = random.Random(seed)
log = open(log_path, "a", buffering=1)
versions = {}
for line in open(log_path):
    kind, name, v = line.split()
    versions[name] = max(versions.get(name, 0), int(v))
os.makedirs(f"{mnt}/objects", exist_ok=True)
os.makedirs(f"{mnt}/tmp", exist_ok=True)
for i in range(start, start + 100000):
    name = f"f{rng.randrange(40)}"
    v = versions.get(name, 0) + 1
    versions[name] = v
    data = content(name, v)
    log.write(f"begin {name} {v}\n"); os.fsync(log.fileno())
    path = f"{mnt}/objects/{name}"
    if v % 2 == 0 and os.path.exists(path):
        fd = os.open(path, os.O_WRONLY)
        os.pwrite(fd, data, 0)
        os.ftruncate(fd, len(data))
    else:
        tmp = f"{mnt}/tmp/{name}.{i}"
        fd = os.open(tmp, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o644)
        os.write(fd, data)
        os.fsync(fd)
        os.rename(tmp, path)
    os.fsync(fd)
    os.close(fd)
    log.write(f"ack {name} {v}\n"); os.fsync(log.fileno())
"""


def content(name: str, v: int) -> bytes:
    size = random.Random(f"{name}-{v}").choice([100, 4096, 5000, 70000, 300000])
    return hashlib.shake_256(f"{name}-{v}".encode()).digest(size)


def read_log(log: Path) -> tuple[dict[str, int], dict[str, int]]:
    begun: dict[str, int] = {}
    acked: dict[str, int] = {}
    for line in log.read_text().splitlines():
        kind, name, v = line.split()
        target = begun if kind == "begin" else acked
        target[name] = max(target.get(name, 0), int(v))
    return begun, acked


def closest(name: str, got: bytes, newest: int) -> str:
    """Which version ``got`` shares the longest prefix with, and where it departs: a
    failure then tells a torn write from a stale block or a wrong size."""

    def common(a: bytes, b: bytes) -> int:
        n = min(len(a), len(b))
        return next((i for i in range(n) if a[i] != b[i]), n)

    u = max(range(1, newest + 1), key=lambda u: common(got, content(name, u)))
    want = content(name, u)
    return f"{len(got)} bytes, closest v{u} ({len(want)} bytes) departs at {common(got, want)}"


def check(root: Path, log: Path) -> int:
    """Every acknowledged file holds its last acknowledged version, or (when a later
    version was under way at the crash) that later version whole or, for an in-place
    write, anything but an older version. Returns how many files were checked."""
    begun, acked = read_log(log)
    for name, v in acked.items():
        got = (root / "objects" / name).read_bytes()
        if begun[name] == v:
            assert got == content(name, v), (
                f"{name}: acknowledged version {v} lost: {closest(name, got, v)}"
            )
            continue
        older = {content(name, u) for u in range(1, v)}
        assert got not in older, f"{name}: a version older than acknowledged {v} served"
        later = {content(name, u) for u in range(v, begun[name] + 1)}
        if begun[name] % 2 == 1:  # the version under way was written by rename
            assert got in later, (
                f"{name}: neither acknowledged v{v} nor a later version up to "
                f"v{begun[name]}: {closest(name, got, begun[name])}"
            )
    return len(acked)


@pytest.mark.parametrize("mode", ["dss", "hdd"])  # hdd: files in kernel passthrough
def test_kill_9_at_random_moments_loses_nothing_acknowledged(
    make_tier: object,  # noqa: F811
    mode: str,
) -> None:
    rng = random.Random(SEED)
    t = make_tier()
    log = t.base / "writer.log"
    log.touch()
    start = 0
    for it in range(ITERATIONS):
        # A small cache keeps the syncer writing back (and blocks turning clean) under load.
        t.mount(cache_size="1MiB", mode=mode)
        writer = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(t.mnt), str(log), str(SEED + it), str(start)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        time.sleep(rng.uniform(0.3, 1.5))
        t.kill()
        writer.kill()
        writer.wait(timeout=30)
        start += 100000
        assert log.read_text().count("ack ") > 0, "the load ran"
        fsck = t.fsck()
        assert fsck.returncode == 0, fsck.stdout + fsck.stderr
        assert "last shutdown unclean" in fsck.stdout
        t.mount(cache_size="1MiB", mode=mode)
        assert check(t.mnt, log) > 0
        t.kill()
    # Once more through fsck --repair: the HDD alone then holds everything acknowledged.
    repaired = t.fsck(repair=True)
    assert repaired.returncode == 0, repaired.stdout + repaired.stderr
    check(t.hdd, log)
    # And through a clean unmount after a remount.
    t.mount(cache_size="1MiB", mode=mode)
    check(t.mnt, log)
    t.umount()
    check(t.hdd, log)
    assert re.search(r"last shutdown clean, \d+ s ago", t.fsck().stdout)


# Holds FILE open, unlinks it, says so, and waits to die with the mount.
HOLDER = r"""
import os, sys, time
fd = os.open(sys.argv[1], os.O_RDONLY)
os.unlink(sys.argv[1])
print(os.fstat(fd).st_ino, flush=True)
time.sleep(600)
"""


@pytest.mark.parametrize("mode", ["tiered", "dss"])
def test_kill_9_while_a_removed_file_is_still_open(
    make_tier: object,  # noqa: F811
    mode: str,
) -> None:
    """The daemon dies while a file whose last name went is still open, its blocks (in
    tiered mode their only copy) still cached: after a restart the named files read
    back exactly, the removed file's blocks are written back into its nameless inode and
    let go, and nothing of it shows anywhere."""
    from swift_dss.dssio import get_backend

    tier = get_backend("tier")
    t = make_tier()
    t.mount(cache_size="1MiB", mode=mode)
    bodies = {name: content(name, 1)[:4096] * 20 for name in ("keep", "gone", "new")}
    for name in ("keep", "gone"):
        fd = os.open(t.mnt / name, os.O_RDWR | os.O_CREAT, 0o644)
        tier.pdwrite(fd, 25, bodies[name], 0)  # class 25: on the SSD in tiered mode
        os.fsync(fd)
        tier.release(fd)
        os.close(fd)
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(t.mnt / "gone")],
                              stdout=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert holder.stdout is not None
        gone_ino = int(holder.stdout.readline())
        with open(t.mnt / "new", "wb") as f:
            f.write(bodies["new"])
            f.flush()
            os.fsync(f.fileno())
        assert any(e["file"] == gone_ino for e in t.dump()["extents"])
        t.kill()
    finally:
        holder.kill()
        holder.wait(timeout=30)
    t.mount(cache_size="1MiB", mode=mode)
    assert sorted(os.listdir(t.mnt)) == ["keep", "new"]
    for name in ("keep", "new"):
        assert (t.mnt / name).read_bytes() == bodies[name], name
    subprocess.run([str(BIN), "flush", str(t.mnt)], check=True, capture_output=True)
    assert not any(e["file"] == gone_ino for e in t.dump()["extents"])
    t.umount()
    assert sorted(p.name for p in t.hdd.iterdir() if p.name != ".dss-tier") == ["keep", "new"]
    assert re.search(r"last shutdown clean, \d+ s ago", t.fsck().stdout)


def test_a_mount_left_by_a_daemon_killed_with_its_helper_is_replaced(
    make_tier: object,  # noqa: F811
) -> None:
    """A service manager stopping a unit kills its whole control group: the daemon and the
    fusermount3 that would have unmounted its mount. The next mount unmounts the one left
    behind, says so, and serves what the dead daemon acknowledged; a mount whose daemon
    lives is still refused."""
    t = make_tier()
    t.mount(mode="dss")
    body = content("kept", 1)
    with open(t.mnt / "kept", "wb") as f:
        f.write(body)
        f.flush()
        os.fsync(f.fileno())
    # Read just now: the kernel keeps the root's attributes a while, so a plain stat of
    # the dead mount would still succeed.
    assert (t.mnt / "kept").read_bytes() == body
    assert t.proc is not None
    kill_with_its_helper(t.proc.pid, t.mnt)
    t.proc.wait(timeout=30)
    t.daemon = None
    assert mount_type(t.mnt) == "fuse.dss-tier"
    with pytest.raises(OSError) as dead:
        os.statvfs(t.mnt)
    assert dead.value.errno == errno.ENOTCONN
    start = t.log.stat().st_size
    t.mount(mode="dss")
    assert "unmounted the mount of a daemon that died" in t.log.read_text()[start:]
    assert (t.mnt / "kept").read_bytes() == body
    again = subprocess.run([str(BIN), "mount", "--ssd", str(t.ssd), "--hdd", str(t.hdd),
                            "--cache-size", "16MiB", "--policy", str(REFERENCE), str(t.mnt)],
                           capture_output=True, text=True, timeout=60)  # fmt: skip
    assert again.returncode == 1 and "already a dss-tier mount" in again.stderr
    assert (t.mnt / "kept").read_bytes() == body
