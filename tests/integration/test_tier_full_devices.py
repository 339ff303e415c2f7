"""A tier whose HDD or SSD fills up: writes fail with ENOSPC, none hangs, the mount goes
on serving, and what the tier acknowledged stays readable, across a remount too.

With a write-back cache, a full HDD makes every write-back fail. The dirty blocks then
fill the cache, and a writer that needs room waits for write-back that never makes any.
It must give up after its patience (10 s) and write around the cache, which fails on the
HDD with ENOSPC; the writers after it must not each wait as long again.
"""

from __future__ import annotations

import errno
import os
import subprocess
import threading
from pathlib import Path

import pytest

from swift_dss.dssio import get_backend
from tests.integration.tier_helpers import (  # noqa: F401
    BIN,
    REFERENCE,
    MakeTier,
    Tier,
    force_unmount,
    make_tier,
    tiers,
    tmpfs,
)

pytestmark = pytest.mark.integration

TIER = get_backend("tier")
MIB = 1 << 20
#: More than the 4 MiB HDD and the 8 MiB cache hold between them.
FILES = 24


def write_file(path: Path, cls: int, body: bytes) -> None:
    """Writes BODY as Swift's object server does: after a short write (a device filled
    part-way through) it writes the rest, which fails with the reason."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        done = 0
        while done < len(body):
            n = TIER.pdwrite(fd, cls, body[done:], done)
            assert n > 0
            done += n
        os.fsync(fd)
    finally:
        TIER.release(fd)
        os.close(fd)


def fill(t: Tier) -> tuple[dict[str, bytes], list[int]]:
    """Write FILES files of 1 MiB; returns those acknowledged and the errnos of the rest.
    A write that hangs fails the test: the daemon is killed so that it returns."""
    acknowledged: dict[str, bytes] = {}
    failed: list[int] = []

    def run() -> None:
        for i in range(FILES):
            name, body = f"f{i}", os.urandom(MIB)
            try:
                write_file(t.mnt / name, 25 if i % 2 else 29, body)
                acknowledged[name] = body
            except OSError as e:
                failed.append(e.errno or 0)

    writer = threading.Thread(target=run)
    writer.start()
    writer.join(timeout=180)
    if writer.is_alive():
        t.kill()
        writer.join()
        pytest.fail(f"a write still waited after {len(acknowledged) + len(failed)} files")
    return acknowledged, failed


def assert_readable(t: Tier, files: dict[str, bytes]) -> None:
    for name, body in files.items():
        assert (t.mnt / name).read_bytes() == body, name


@pytest.mark.parametrize("mode", ["dss", "lru", "hdd"])
def test_a_full_hdd_fails_writes_and_keeps_what_was_acknowledged(
    make_tier: MakeTier,  # noqa: F811
    mode: str,
) -> None:
    t = make_tier()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(t.hdd)], check=True)
    try:
        t.mount(cache_size="8MiB", mode=mode)
        acknowledged, failed = fill(t)
        assert acknowledged, "nothing was written before the HDD filled"
        assert failed and set(failed) == {errno.ENOSPC}, failed
        assert t.proc.poll() is None, t.log.read_text()
        assert_readable(t, acknowledged)
        # Room again: the next write is acknowledged, and write-back goes on.
        for name in list(acknowledged)[: len(acknowledged) // 2 + 1]:
            os.unlink(t.mnt / name)
            del acknowledged[name]
        acknowledged["after"] = os.urandom(MIB // 2)
        write_file(t.mnt / "after", 25, acknowledged["after"])
        assert_readable(t, acknowledged)
        # A kill keeps in the journal what the full HDD could not take.
        t.kill()
        t.mount(cache_size="8MiB", mode=mode)
        assert_readable(t, acknowledged)
        # The files whose write failed are there too, as open(O_CREAT) made them.
        assert set(acknowledged) <= {p.name for p in t.mnt.iterdir()}
    finally:
        t.kill()
        force_unmount(t.hdd)


def detached(t: Tier, *args: str) -> None:
    """Runs `dss-tier ARGS` on T's directories (a mount with --daemon, or umount)."""
    command = [str(BIN), *args, str(t.mnt)]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr


def test_a_full_ssd_fails_writes_and_the_mount_goes_on(make_tier: MakeTier) -> None:  # noqa: F811
    """Something else fills the SSD's file system under a cache that fits it. The journal's
    writes fail, and the daemon says so in its log: a detached daemon's log is on that
    same SSD, so the line cannot be written either. A line it cannot write must not stop
    the request that had it to say (that poisoned the locks, and every later request on
    the mount, a stat of its root included, answered EIO)."""
    t = make_tier()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(t.ssd)], check=True)
    mount = ["mount", "--ssd", str(t.ssd), "--hdd", str(t.hdd), "--cache-size", "4MiB"]
    mount += ["--policy", str(REFERENCE), "--daemon"]
    try:
        filler = t.ssd / "filler"
        filler.write_bytes(bytes(6 * MIB))
        detached(t, *mount)
        acknowledged, failed = fill(t)
        assert acknowledged, "nothing was written before the SSD filled"
        assert failed and set(failed) == {errno.ENOSPC}, failed
        assert sorted(p.name for p in t.mnt.iterdir()) == sorted(f"f{i}" for i in range(FILES))
        assert_readable(t, acknowledged)
        # Room again: writes are acknowledged, and an unmount writes every one back.
        filler.unlink()
        acknowledged["after"] = os.urandom(MIB)
        write_file(t.mnt / "after", 25, acknowledged["after"])
        detached(t, "umount")
        for name, body in acknowledged.items():
            assert (t.hdd / name).read_bytes() == body, name
        detached(t, *mount)
        assert_readable(t, acknowledged)
        detached(t, "umount")
    finally:
        force_unmount(t.mnt)
        force_unmount(t.ssd)


def fill_up(path: Path) -> None:
    """Writes PATH until its file system has no byte left."""
    with open(path, "wb", buffering=0) as f:
        for chunk in (bytes(64 << 10), bytes(4096)):
            try:
                while True:
                    f.write(chunk)
            except OSError as e:
                assert e.errno == errno.ENOSPC, e


def test_a_write_the_full_ssd_cannot_take_leaves_the_files_bytes(make_tier: MakeTier) -> None:  # noqa: F811
    """An overwrite of a file cached nowhere, once the SSD's file system is full: the
    cache's new slots cannot be written, and the write fails. The blocks it had given
    those slots must be forgotten: read or written back, they replaced the file's bytes
    with what the slots held (zeros: a failed overwrite zeroed 64 KiB on the HDD)."""
    t = make_tier()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(t.ssd)], check=True)
    try:
        body = os.urandom(MIB)
        t.mount(cache_size="4MiB", mode="hdd")
        write_file(t.mnt / "a", 25, body)
        t.umount()
        t.mount(cache_size="4MiB", mode="dss")
        fill_up(t.ssd / "filler")
        fd = os.open(t.mnt / "a", os.O_WRONLY)
        try:
            with pytest.raises(OSError) as failed:
                TIER.pdwrite(fd, 25, b"Z" * (64 << 10), 0)
            assert failed.value.errno == errno.ENOSPC
            os.fsync(fd)
        finally:
            TIER.release(fd)
            os.close(fd)
        assert (t.mnt / "a").read_bytes() == body
        # Room again: the same write is taken, and everything reaches the HDD.
        (t.ssd / "filler").unlink()
        body = b"Z" * (64 << 10) + body[64 << 10 :]
        write_file(t.mnt / "a", 25, body[: 64 << 10])
        assert (t.mnt / "a").read_bytes() == body
        t.umount()
        assert (t.hdd / "a").read_bytes() == body
    finally:
        force_unmount(t.mnt)
        force_unmount(t.ssd)
