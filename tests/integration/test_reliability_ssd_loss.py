"""A dss-tier whose SSD is lost: the files whose latest blocks were only in the write-back
cache must never be served from the stale HDD copy. Found at mount (and by fsck before it),
set aside on the HDD, recorded, and reported by `dss-tier stats`."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.integration.tier_helpers import (  # noqa: F401
    Tier,
    make_tier,
    tiers,
    tmpfs,
)

pytestmark = pytest.mark.integration


def write_synced(path: Path, data: bytes) -> None:
    with open(path, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())


def lose_ssd(t: Tier) -> None:
    """kill -9 (no write-back) and an empty SSD in place of the old one."""
    t.kill()
    shutil.rmtree(t.ssd)
    t.ssd.mkdir()


def test_a_lost_ssd_is_reported_and_nothing_stale_is_served(make_tier: object) -> None:  # noqa: F811
    t: Tier = make_tier()
    t.mount()
    (t.mnt / "dir").mkdir()
    # Written back (a clean unmount), so the HDD holds them: these survive the loss.
    write_synced(t.mnt / "dir" / "old", b"old version " * 1000)
    write_synced(t.mnt / "kept", b"kept " * 1000)
    t.umount()
    t.mount()
    # Overwritten and new data, acknowledged by fsync, dirty in the SSD cache only.
    write_synced(t.mnt / "dir" / "old", b"new version " * 1000)
    write_synced(t.mnt / "dir" / "new", os.urandom(50_000))
    assert t.stats()["dirty_entries"] > 0
    assert t.stats()["ssd_loss"] == []
    lose_ssd(t)

    check = t.fsck()
    assert check.returncode == 1
    assert "problem: SSD cache lost: the SSD holds no journal" in check.stdout
    assert "2 files on the HDD" in check.stdout

    t.mount()
    assert "dss-tier: SSD cache lost" in t.log.read_text()
    # Never the stale "old version", never a hole where "new" was: both are gone.
    assert sorted(p.name for p in (t.mnt / "dir").iterdir()) == []
    assert (t.mnt / "kept").read_bytes() == b"kept " * 1000
    events = t.stats()["ssd_loss"]
    assert len(events) == 1
    assert events[0]["reason"] == "the SSD holds no journal"
    assert sorted(events[0]["files"]) == ["dir/new", "dir/old"]
    # Set aside on the HDD, out of the mount's view, for the operator. What the HDD held
    # is neither version: the overwrite's truncate reached it, the new blocks did not.
    aside = t.hdd / events[0]["moved_to"] / "dir" / "old"
    assert aside.read_bytes() not in (b"old version " * 1000, b"new version " * 1000)
    assert ".dss-tier" not in os.listdir(t.mnt)
    # The tier works on: new data is cached and read back.
    write_synced(t.mnt / "dir" / "again", b"again")
    assert (t.mnt / "dir" / "again").read_bytes() == b"again"
    t.umount()
    # A clean unmount wrote everything back: a second SSD loss now loses nothing.
    shutil.rmtree(t.ssd)
    t.ssd.mkdir()
    assert t.fsck().returncode == 0
    t.mount()
    assert (t.mnt / "dir" / "again").read_bytes() == b"again"
    assert len(t.stats()["ssd_loss"]) == 1


def test_fsck_repair_sets_the_stale_files_aside(make_tier: object) -> None:  # noqa: F811
    t: Tier = make_tier()
    t.mount()
    write_synced(t.mnt / "f", b"x" * 10_000)
    lose_ssd(t)
    repaired = t.fsck(repair=True)
    assert repaired.returncode == 0, repaired.stdout
    assert "repaired: 1 stale files moved to .dss-tier/lost/" in repaired.stdout
    assert t.fsck().returncode == 0
    t.mount()
    assert not (t.mnt / "f").exists()
    assert "SSD cache lost" not in t.log.read_text()
    assert [e["files"] for e in t.stats()["ssd_loss"]] == [["f"]]
