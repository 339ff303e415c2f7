"""A tier whose HDD or SSD fills up. A full HDD fails writes with ENOSPC; a full SSD sends
them around the cache to the HDD. None hangs, the mount goes on serving, and what the
tier acknowledged stays readable, across a remount too.

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
import time
from pathlib import Path

import pytest

from swift_dss.dssio import get_backend
from tests.integration.tier_helpers import (  # noqa: F401
    BIN,
    REFERENCE,
    MakeTier,
    Tier,
    class_stats,
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


def fill_up(path: Path) -> None:
    """Writes PATH until its file system has no byte left."""
    with open(path, "ab", buffering=0) as f:
        for chunk in (bytes(64 << 10), bytes(4096)):
            try:
                while True:
                    f.write(chunk)
            except OSError as e:
                assert e.errno == errno.ENOSPC, e


def test_a_daemon_whose_log_is_full_goes_on(make_tier: MakeTier) -> None:  # noqa: F811
    """A detached daemon logs to its SSD directory. With the HDD full, every write-back
    fails and the syncer says so; once something else fills the SSD too, those lines
    cannot be written. A line the daemon cannot write must not stop the thread that had
    it to say: that poisoned the engine's lock, and every request on the mount, a stat
    of its root included, answered EIO."""
    t = make_tier()
    for d, size in ((t.ssd, "8m"), (t.hdd, "4m")):
        subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(d)], check=True)
    mount = ["mount", "--ssd", str(t.ssd), "--hdd", str(t.hdd), "--cache-size", "4MiB"]
    mount += ["--policy", str(REFERENCE), "--daemon"]
    try:
        detached(t, *mount)
        acknowledged, failed = fill(t)
        assert acknowledged and failed and set(failed) == {errno.ENOSPC}, failed
        log = t.ssd / "daemon.log"
        assert "write-back failed" in log.read_text()
        # No page of the log left to append into, and none free.
        os.truncate(log, 0)
        fill_up(t.ssd / "filler")
        # The syncer retries (and says so) every 100 ms: it must still be there.
        time.sleep(1)
        tasks = Path(f"/proc/{t.stats()['pid']}/task")
        assert "syncer" in {(task / "comm").read_text().strip() for task in tasks.iterdir()}
        assert sorted(p.name for p in t.mnt.iterdir()) == sorted(f"f{i}" for i in range(FILES))
        assert_readable(t, acknowledged)
        # Across an unmount, whose write-back the full HDD stops part-way, and a mount:
        # the journal keeps what the HDD could not take.
        (t.ssd / "filler").unlink()
        detached(t, "umount")
        detached(t, *mount)
        assert_readable(t, acknowledged)
        detached(t, "umount")
    finally:
        force_unmount(t.mnt)
        force_unmount(t.ssd)
        force_unmount(t.hdd)


def test_writes_the_full_ssd_cannot_take_go_around_it(make_tier: MakeTier) -> None:  # noqa: F811
    """Something else holds the SSD's file system full, under a cache that fits it: the
    cache's new slots cannot be written. Their blocks are forgotten (read or written
    back, they replaced the file's bytes with what the slots held: a failed overwrite
    zeroed 64 KiB on the HDD), and the writes go to the HDD, which has room, as a bypass
    would. The journal took its room at mount, so its records are still written."""
    t = make_tier()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(t.ssd)], check=True)
    try:
        body = os.urandom(MIB)
        t.mount(cache_size="4MiB", mode="hdd")
        write_file(t.mnt / "a", 25, body)
        t.umount()
        t.mount(cache_size="4MiB", mode="dss")
        fill_up(t.ssd / "filler")
        bypassed = class_stats(t.stats(), 25)["bypassed_bytes"]
        body = b"Z" * (64 << 10) + body[64 << 10 :]
        write_file(t.mnt / "a", 25, body[: 64 << 10])
        # Counted where an operator looks for what the cache did not take.
        assert class_stats(t.stats(), 25)["bypassed_bytes"] - bypassed == 64 << 10
        others = {f"b{i}": os.urandom(MIB) for i in range(8)}
        for name, data in others.items():
            write_file(t.mnt / name, 29, data)
        assert (t.mnt / "a").read_bytes() == body
        assert_readable(t, others)
        t.umount()
        assert (t.hdd / "a").read_bytes() == body
        for name, data in others.items():
            assert (t.hdd / name).read_bytes() == data, name
    finally:
        force_unmount(t.mnt)
        force_unmount(t.ssd)


def test_a_write_over_a_cached_block_goes_around_a_full_ssd(make_tier: MakeTier) -> None:  # noqa: F811
    """A write whose blocks are a cached block and new ones, in adjacent slots, while
    something else holds the SSD's file system full: the cached block takes its new bytes
    in its slot, and the new blocks go to the HDD. The slab write of the whole run fails
    on the new slots' holes; the write used to fail with it (ENOSPC, or short at the
    cached block), though the HDD had room."""
    t = make_tier()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(t.ssd)], check=True)
    try:
        t.mount(cache_size="4MiB", mode="dss")
        head = os.urandom(4096)
        write_file(t.mnt / "c", 25, head)
        assert class_stats(t.stats(), 25)["cached_bytes"] == 4096, "the block was not cached"
        fill_up(t.ssd / "filler")
        bypassed = class_stats(t.stats(), 25)["bypassed_bytes"]
        body = os.urandom(64 << 10)
        write_file(t.mnt / "c", 25, body)
        assert class_stats(t.stats(), 25)["bypassed_bytes"] - bypassed == len(body) - 4096
        assert (t.mnt / "c").read_bytes() == body
        t.umount()
        assert (t.hdd / "c").read_bytes() == body
    finally:
        force_unmount(t.mnt)
        force_unmount(t.ssd)
