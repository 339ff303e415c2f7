"""Kernel passthrough on a real mount: which files the kernel serves from the HDD itself,
and that data stays right when an inode moves in and out of passthrough (policy reloads,
handles held across them, fsync, shared mappings, a killed daemon)."""

from __future__ import annotations

import hashlib
import mmap
import os
import subprocess
from pathlib import Path

from tests.integration.tier_helpers import (  # noqa: F401
    BIN,
    MIB,
    REFERENCE,
    MakeTier,
    Tier,
    make_tier,
    tiers,
    tmpfs,
)


def data(n: int, seed: int) -> bytes:
    return hashlib.shake_256(f"passthrough {seed}".encode()).digest(n)


def policy_in_mode(tmp_path: Path, mode: str) -> Path:
    p = tmp_path / f"reference-{mode}.toml"
    p.write_text(REFERENCE.read_text().replace('mode = "dss"', f'mode = "{mode}"', 1))
    return p


def reload(tier: Tier, policy: Path) -> None:
    proc = subprocess.run(
        [str(BIN), "reload-policy", "--policy", str(policy), str(tier.mnt)],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr


def hdd_bytes(tier: Tier) -> int:
    return tier.stats()["devices"]["hdd"]["bytes"]


def test_mode_hdd_data_never_reaches_the_daemon(make_tier: MakeTier) -> None:  # noqa: F811
    """The same 8 MiB written and read back twice: through passthrough the daemon
    counts only metadata; without it, every byte."""
    counted = {}
    for name, extra in (("on", ()), ("off", ("--no-passthrough",))):
        tier = make_tier(name)
        tier.mount(mode="hdd", extra=extra)
        body = data(8 * MIB, 1)
        (tier.mnt / "f").write_bytes(body)
        assert (tier.mnt / "f").read_bytes() == body
        assert (tier.hdd / "f").read_bytes() == body
        s = tier.stats()
        counted[name] = s["devices"]["hdd"]["bytes"]
        assert s["passthrough"] is (name == "on")
        assert s["passthrough_opens"] == (2 if name == "on" else 0)
        # The daemon's own count of what reached it: no read or write request at all.
        asked = s["fuse_requests"]
        assert asked["create"] >= 1 and asked["lookup"] >= 1
        if name == "on":
            assert "write" not in asked and "read" not in asked, asked
        else:
            # (Its reads come from the mount's page cache: the file was just written.)
            assert asked["write"] >= 8, asked
            # Those writes, again by the class of the file (its size class as it grew).
            by_class = s["fuse_class_requests"]
            assert sum(k["write"][0] for k in by_class.values()) == asked["write"], by_class
        # Every kind it answered is timed (the stats read itself, a getxattr, is still
        # under way), and each arrival met itself at least.
        timed = s["fuse_request_s"]
        assert set(timed) == set(asked), (timed, asked)
        assert all(t > 0 for kind, t in timed.items() if kind != "getxattr"), timed
        assert s["fuse_under_way_seen"] >= sum(asked.values())
        tier.umount()
    assert counted["off"] >= 8 * MIB
    assert counted["on"] < MIB, counted


def test_a_caching_mode_or_a_modelled_hdd_keeps_every_io_in_the_daemon(
    make_tier: MakeTier,  # noqa: F811
) -> None:
    for name, kwargs in (
        ("dss", {"mode": "dss"}),
        ("ssd", {"mode": "ssd"}),
        ("model", {"mode": "hdd", "extra": ("--hdd-model", "hdd")}),
    ):
        tier = make_tier(name)
        tier.mount(**kwargs)
        (tier.mnt / "f").write_bytes(data(MIB, 2))
        assert (tier.mnt / "f").read_bytes() == data(MIB, 2)
        s = tier.stats()
        assert s["passthrough"] is True
        assert s["passthrough_opens"] == 0, name
        tier.umount()


def test_dirty_cached_blocks_reach_the_hdd_before_the_kernel_reads_it(
    make_tier: MakeTier,  # noqa: F811
    tmp_path: Path,
) -> None:
    tier = make_tier()
    tier.mount(mode=None)  # the policy's own mode, so that a reload can change it
    first = data(3 * MIB + 5, 3)
    (tier.mnt / "f").write_bytes(first)
    assert tier.stats()["dirty_entries"] > 0
    assert (tier.hdd / "f").read_bytes() != first, "still only in the cache"
    reload(tier, policy_in_mode(tmp_path, "hdd"))
    # Open in passthrough: written back, and the cached copies dropped.
    assert (tier.mnt / "f").read_bytes() == first
    s = tier.stats()
    assert s["passthrough_opens"] == 1
    assert (tier.hdd / "f").read_bytes() == first
    assert sum(c["cached_bytes"] for c in s["classes"].values() if c) < MIB
    # Overwritten through the kernel; back in a caching mode, the daemon must not serve
    # a stale copy (from its cache or from the mount's page cache).
    second = data(3 * MIB + 5, 4)
    with open(tier.mnt / "f", "r+b") as f:
        f.write(second)
    reload(tier, REFERENCE)
    assert (tier.mnt / "f").read_bytes() == second
    assert tier.stats()["passthrough_opens"] == 2
    tier.umount()
    assert (tier.hdd / "f").read_bytes() == second


def test_an_inode_keeps_its_io_mode_while_handles_hold_it(
    make_tier: MakeTier,  # noqa: F811
    tmp_path: Path,
) -> None:
    """The kernel refuses (EIO) an open whose mode differs from the handles already open;
    the daemon must keep an inode's mode while any handle holds it, policy or not."""
    tier = make_tier()
    tier.mount(mode=None)
    hdd, dss = policy_in_mode(tmp_path, "hdd"), REFERENCE
    (tier.mnt / "cached").write_bytes(data(MIB, 5))
    (tier.mnt / "direct").write_bytes(data(MIB, 6))
    with open(tier.mnt / "cached", "r+b") as held:
        held.read(10)  # a page-cached handle, opened in mode dss
        reload(tier, hdd)
        with open(tier.mnt / "cached", "r+b") as second:
            second.seek(MIB - 4)
            second.write(b"tail")
        held.seek(0)
        assert held.read() == data(MIB, 5)[:-4] + b"tail"
    assert tier.stats()["passthrough_opens"] == 0
    with open(tier.mnt / "direct", "r+b") as held:  # passthrough, in mode hdd
        reload(tier, dss)
        with open(tier.mnt / "direct", "r+b") as second:
            second.write(b"head")
        assert held.read() == b"head" + data(MIB, 6)[4:]
        assert tier.stats()["passthrough_opens"] == 2
    # Closed: the next open follows the policy again.
    assert (tier.mnt / "direct").read_bytes() == b"head" + data(MIB, 6)[4:]
    assert tier.stats()["passthrough_opens"] == 2


def test_fsync_mmap_truncate_and_append_through_passthrough(make_tier: MakeTier) -> None:  # noqa: F811
    tier = make_tier()
    tier.mount(mode="hdd")
    p = tier.mnt / "f"
    fd = os.open(p, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o644)
    try:
        os.write(fd, data(256 * 1024, 7))
        os.fsync(fd)
        os.fdatasync(fd)
        with mmap.mmap(fd, 256 * 1024) as m:
            m[:5] = b"mmap!"
            m.flush()
        os.ftruncate(fd, 100_000)
        assert os.fstat(fd).st_size == 100_000
    finally:
        os.close(fd)
    with open(p, "ab") as f:
        f.write(b"appended")
    expect = b"mmap!" + data(256 * 1024, 7)[5:100_000] + b"appended"
    assert p.read_bytes() == expect
    assert os.stat(p).st_size == len(expect)
    assert (tier.hdd / "f").read_bytes() == expect
    assert tier.stats()["passthrough_opens"] >= 3


def test_fsynced_passthrough_data_survives_a_killed_daemon(make_tier: MakeTier) -> None:  # noqa: F811
    tier = make_tier()
    tier.mount(mode="hdd")
    tmp = tier.mnt / "tmp.x"
    fd = os.open(tmp, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    os.write(fd, data(2 * MIB, 8))
    os.fsync(fd)
    os.close(fd)
    os.rename(tmp, tier.mnt / "obj")
    assert tier.stats()["passthrough_opens"] == 1
    tier.kill()
    assert tier.fsck().returncode == 0
    tier.mount(mode="hdd")
    assert (tier.mnt / "obj").read_bytes() == data(2 * MIB, 8)
