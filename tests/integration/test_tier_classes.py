"""Class-driven caching through the real ioctls (dssio's tier backend), observed through
`dss-tier stats --json` and `dss-tier dump --json`."""

from __future__ import annotations

import os
import time

import pytest

from swift_dss.dssio import get_backend
from tests.integration.tier_helpers import (  # noqa: F401
    LRU,
    Tier,
    class_stats,
    make_tier,
    tiers,
    tmpfs,
)

BLOCK = 4096
HIGH = 24  # user0, priority 2 in the reference policy
LOW = 20  # files > 256 KB, priority 10: bypasses the cache under pressure
USER7 = 31  # large objects, priority 9: the lowest class the paper fences off
CACHE = "256KiB"  # 64 entries: low watermark 4 free, high 10


def settle(tier: Tier) -> dict:
    """Stats once the syncer has brought the cache back above its high watermark."""
    deadline = time.monotonic() + 30
    while True:
        s = tier.stats()
        if not s["syncer_active"] or time.monotonic() > deadline:
            return s
        time.sleep(0.01)


def write_class(tier: Tier, name: str, cls: int, size: int, chunk: int = 3 * BLOCK) -> None:
    """Write ``size`` bytes of class ``cls``, letting the syncer catch up between chunks so
    that eviction, not a full cache, decides what stays. Out of pressure at least the low
    watermark's 4 entries are free, and a chunk has fewer blocks than that, so a write
    never finds the cache full: what bypasses is selective allocation's doing alone."""
    b = get_backend("tier")
    fd = os.open(tier.mnt / name, os.O_CREAT | os.O_WRONLY, 0o644)
    try:
        for off in range(0, size, chunk):
            n = min(chunk, size - off)
            assert b.pdwrite(fd, cls, bytes([cls]) * n, off) == n
            settle(tier)
    finally:
        b.release(fd)
        os.close(fd)


HIGH_BYTES = 38 * BLOCK
LOW_BYTES = 2 * 1024 * 1024


def fill(tier: Tier, low: int = LOW) -> dict:
    write_class(tier, "hot", HIGH, HIGH_BYTES)
    write_class(tier, "bulk", low, LOW_BYTES)
    return settle(tier)


@pytest.mark.parametrize("low", [LOW, USER7])
def test_dss_keeps_the_high_class_and_bypasses_the_low_one(
    make_tier: object,  # noqa: F811
    low: int,
) -> None:
    t = make_tier()
    t.mount(cache_size=CACHE, mode="dss")
    s = fill(t, low)
    hi, lo = class_stats(s, HIGH), class_stats(s, low)
    assert hi["cached_bytes"] == HIGH_BYTES
    assert hi["evicted_bytes"] == 0
    assert hi["bypassed_bytes"] == 0
    assert lo["bypassed_bytes"] > 0
    assert lo["evicted_bytes"] > 0
    assert lo["cached_bytes"] < HIGH_BYTES
    # The dump agrees with the counters, and names the file's blocks.
    d = t.dump()
    assert d["classes"][str(HIGH)]["cached_bytes"] == HIGH_BYTES
    assert d["classes"][str(HIGH)]["files"] == 1
    hot = os.stat(t.mnt / "hot").st_ino
    assert sum(e["blocks"] for e in d["extents"] if e["file"] == hot) == HIGH_BYTES // BLOCK
    # Reading the high class back is all hits.
    before = class_stats(t.stats(), HIGH)["hits"]
    b = get_backend("tier")
    fd = os.open(t.mnt / "hot", os.O_RDONLY)
    try:
        # The tier sits below the page cache: drop the file's pages so reads reach it.
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        assert b.pdread(fd, HIGH, HIGH_BYTES, 0) == bytes([HIGH]) * HIGH_BYTES
    finally:
        b.release(fd)
        os.close(fd)
    after = class_stats(t.stats(), HIGH)
    assert after["hits"] > before
    assert after["misses"] == class_stats(s, HIGH)["misses"]


@pytest.mark.parametrize("how", ["mode", "policy"])
def test_lru_lets_recency_alone_decide(make_tier: object, how: str) -> None:  # noqa: F811
    t = make_tier()
    if how == "mode":
        t.mount(cache_size=CACHE, mode="lru")
    else:
        t.mount(cache_size=CACHE, policy=LRU)
    s = fill(t)
    assert s["mode"] == "lru"
    hi, lo = class_stats(s, HIGH), class_stats(s, LOW)
    assert hi["evicted_bytes"] > 0
    assert hi["cached_bytes"] < HIGH_BYTES
    # The cache was under pressure (the low class was written back and evicted), yet a
    # class-blind cache never bypasses.
    assert lo["evicted_bytes"] > 0
    assert hi["bypassed_bytes"] == lo["bypassed_bytes"] == 0
    # The most recent blocks are the low class's.
    assert lo["cached_bytes"] > hi["cached_bytes"]


def test_reclassify_moves_cached_bytes_between_classes(make_tier: object) -> None:  # noqa: F811
    t = make_tier()
    t.mount(cache_size="4MiB")
    write_class(t, "obj", HIGH, 10 * BLOCK)
    assert class_stats(t.stats(), HIGH)["cached_bytes"] == 10 * BLOCK
    b = get_backend("tier")
    fd = os.open(t.mnt / "obj", os.O_RDWR)
    try:
        b.reclassify(fd, 4 * BLOCK, 2 * BLOCK, 25)
        s = t.stats()
        assert class_stats(s, HIGH)["cached_bytes"] == 8 * BLOCK
        assert class_stats(s, 25)["cached_bytes"] == 2 * BLOCK
        b.reclassify(fd, 0, 0, 31)
    finally:
        b.release(fd)
        os.close(fd)
    s = t.stats()
    assert class_stats(s, HIGH)["cached_bytes"] == 0
    assert class_stats(s, 25)["cached_bytes"] == 0
    assert class_stats(s, 31)["cached_bytes"] == 10 * BLOCK
    assert (t.mnt / "obj").read_bytes() == bytes([HIGH]) * 10 * BLOCK


def test_unclassified_io_gets_the_policys_default_classes(make_tier: object) -> None:  # noqa: F811
    t = make_tier()
    t.mount(cache_size="4MiB")
    (t.mnt / "small").write_bytes(b"s" * 3000)  # <= 4096: class 11
    (t.mnt / "c.db").write_bytes(b"d" * 20_000)  # a database by name: class 5
    (t.mnt / "dir").mkdir()  # directory: class 3, inode: class 2
    os.setxattr(t.mnt / "small", "user.k", b"v" * 100)  # xattr: class 4
    with open(t.mnt / "grow", "wb") as f:  # 16 KiB < size <= 64 KiB when written: class 13
        f.write(b"g" * 20_000)
        f.flush()
        f.write(b"h" * 20_000)
    s = t.stats()
    assert class_stats(s, 11)["cached_bytes"] >= BLOCK
    assert class_stats(s, 5)["cached_bytes"] == 5 * BLOCK
    for meta in (2, 3, 4):
        c = class_stats(s, meta)
        assert c["hits"] + c["misses"] + c["cached_bytes"] > 0, meta
    assert class_stats(s, 13)["cached_bytes"] > 0
    assert class_stats(s, 0)["cached_bytes"] == 0


def test_stats_document_has_the_contract_keys(make_tier: object) -> None:  # noqa: F811
    t = make_tier()
    t.mount(cache_size="1MiB")
    (t.mnt / "f").write_bytes(b"x" * 10_000)
    s = t.stats()
    assert s["mode"] == "dss"
    assert isinstance(s["pid"], int) and s["pid"] == t.proc.pid
    for c in s["classes"].values():
        assert {
            "cached_bytes",
            "dirty_bytes",
            "hits",
            "misses",
            "bypassed_bytes",
            "evicted_bytes",
        } <= set(c)
    for dev in ("ssd", "hdd"):
        assert {"ops", "bytes", "busy_s"} <= set(s["devices"][dev])
    assert s["devices"]["ssd"]["bytes"] > 0


@pytest.mark.parametrize("mode", ["dss", "ssd"])
def test_new_inodes_are_cached_not_read_from_the_hdd(make_tier: object, mode: str) -> None:  # noqa: F811
    """Creating a file or directory writes its inode through the cache, so looking it up
    afterwards finds it there: creation costs no HDD read per new inode."""
    t = make_tier()
    t.mount(cache_size="4MiB", mode=mode)
    before = t.stats()["devices"]["hdd"]["read_ops"]
    n = 40
    for i in range(n):
        d = t.mnt / f"d{i}"
        d.mkdir()
        with open(d / "f", "wb") as f:  # O_CREAT without O_EXCL
            f.write(b"x")
        os.close(os.open(d / "g", os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
        os.symlink("f", d / "l")
    for i in range(n):
        for name in ("f", "g", "l"):
            os.lstat(t.mnt / f"d{i}" / name)
    s = t.stats()
    # Every inode (4 per round) and every new directory block is a metadata write. Inodes
    # share inode-table blocks (16 to a block) as on ext4, so there are fewer blocks
    # than inodes; each directory has a block of its own.
    inode, directory = class_stats(s, 2), class_stats(s, 3)
    assert BLOCK <= inode["cached_bytes"] < 2 * n * BLOCK
    assert directory["cached_bytes"] >= n * BLOCK
    # The root directory's first lookup may miss; none of the 4n new inodes does.
    assert s["devices"]["hdd"]["read_ops"] - before < n


def test_removed_files_and_directories_free_their_metadata_blocks(make_tier: object) -> None:  # noqa: F811
    """A removed inode's directory and xattr blocks leave the cache (the backing file
    system may never reuse its number); a file that keeps another name keeps its own."""
    t = make_tier()
    t.mount(cache_size="4MiB")
    n = 20
    for i in range(n):
        d = t.mnt / f"d{i}"
        d.mkdir()
        os.setxattr(d, "user.swift.metadata", b"m" * 300)
        (d / "f").write_bytes(b"x")
        os.setxattr(d / "f", "user.swift.metadata", b"m" * 300)
    os.link(t.mnt / "d0" / "f", t.mnt / "kept")
    s = t.stats()
    assert class_stats(s, 3)["cached_bytes"] >= n * BLOCK
    assert class_stats(s, 4)["cached_bytes"] == 2 * n * BLOCK
    for i in range(n):
        (t.mnt / f"d{i}" / "f").unlink()
        (t.mnt / f"d{i}").rmdir()
    s = t.stats()
    assert class_stats(s, 4)["cached_bytes"] == BLOCK  # "kept"'s
    assert class_stats(s, 3)["cached_bytes"] < n * BLOCK
    assert os.getxattr(t.mnt / "kept", "user.swift.metadata") == b"m" * 300


def test_warm_mount_keeps_what_a_clean_unmount_left_cached_till_changed(make_tier: object) -> None:  # noqa: F811
    tier = make_tier()
    tier.mount(cache_size="16MiB")
    data = os.urandom(40 * BLOCK)
    with open(tier.mnt / "hot", "wb") as f:
        backend = get_backend("tier")
        backend.dwrite(f.fileno(), HIGH, data)
        backend.release(f.fileno())
    tier.umount()

    def remount_and_read(*extra: str) -> tuple[dict, dict]:
        tier.mount(cache_size="16MiB", extra=extra)
        before = tier.stats()
        assert (tier.mnt / "hot").read_bytes() == data
        after = tier.stats()
        tier.umount()
        return before, after

    def holding_the_file(stats: dict) -> set[str]:
        return {k for k, c in stats["classes"].items() if c.get("cached_bytes", 0) >= len(data)}

    # Cold, as by default: the file is not cached, the read goes to the HDD and caches it
    # again (under the class of an unclassified read of that size).
    before, after = remount_and_read()
    assert holding_the_file(before) == set()
    assert after["devices"]["hdd"]["read_ops"] > before["devices"]["hdd"]["read_ops"]
    (cls,) = holding_the_file(after)
    # Warm: what the clean unmount left cached is there, and serves the read.
    before, after = remount_and_read("--warm")
    assert holding_the_file(before) == {cls}
    assert after["devices"]["hdd"]["read_ops"] == before["devices"]["hdd"]["read_ops"]
    assert "warm start" in tier.log.read_text()
    # Changed on the HDD behind the unmounted tier, its size kept: the warm mount drops
    # the kept copy when the file is looked up, and serves the new bytes.
    changed = data[:BLOCK] + os.urandom(BLOCK) + data[2 * BLOCK :]
    with open(tier.hdd / "hot", "r+b") as f:
        f.seek(BLOCK)
        f.write(changed[BLOCK : 2 * BLOCK])
    tier.mount(cache_size="16MiB", extra=("--warm",))
    assert (tier.mnt / "hot").read_bytes() == changed
    assert "changed on the HDD after the clean unmount" in tier.log.read_text()
    tier.umount()


def test_warm_mount_serves_what_the_hdd_holds_whatever_changed_behind_it(
    make_tier: object,  # noqa: F811
) -> None:
    """Files cached, unmounted cleanly, then changed on the HDD in every way a tool
    could, right after the unmount: each read through the warm mount is the HDD's."""
    tier = make_tier()
    tier.mount(cache_size="16MiB")
    backend = get_backend("tier")
    names = [f"f{i}" for i in range(12)]
    for i, name in enumerate(names):
        with open(tier.mnt / name, "wb") as f:
            backend.dwrite(f.fileno(), HIGH, os.urandom((i % 4 + 1) * 3 * BLOCK + 100))
            backend.release(f.fileno())
    tier.umount()
    hdd = {name: tier.hdd / name for name in names}
    with open(hdd["f0"], "r+b") as f:  # rewritten in place
        f.seek(BLOCK)
        f.write(os.urandom(BLOCK))
    os.truncate(hdd["f1"], BLOCK + 7)  # shortened
    with open(hdd["f2"], "ab") as f:  # grown
        f.write(os.urandom(2 * BLOCK))
    hdd["f3"].unlink()  # replaced by a new file, same name
    hdd["f3"].write_bytes(os.urandom(3 * BLOCK + 100))
    hdd["f4"].unlink()  # gone, another name made in its stead
    (tier.hdd / "g4").write_bytes(os.urandom(2 * BLOCK))
    os.replace(hdd["f6"], hdd["f5"])  # renamed over another
    tier.mount(cache_size="16MiB", extra=("--warm",))
    assert "kept from the last clean unmount" in tier.log.read_text()
    for path in sorted(tier.hdd.iterdir()):
        if path.name != ".dss-tier":
            assert (tier.mnt / path.name).read_bytes() == path.read_bytes(), path.name
    tier.umount()
