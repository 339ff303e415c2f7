"""The policies beyond the paper (swift_dss/policies/dss-slru.toml, dss-readcut.toml,
dss-slru-readcut.toml, slru.toml, dss-secondmiss.toml, dss-clockpro.toml) on a real mount:
`dss-tier mount --policy` takes each, data goes through intact, and the read-allocation rule
is visible in the stats."""

from __future__ import annotations

import os

import pytest

from swift_dss.dssio import get_backend
from swift_dss.policies import policy_path
from tests.integration.tier_helpers import (  # noqa: F401
    Tier,
    class_stats,
    make_tier,
    tiers,
    tmpfs,
)

BLOCK = 4096
LARGE = 20  # files > 256 KB: priority 10, past the reference cut-off
SIZE = 64 * BLOCK


def write_and_remount(t: Tier, policy: str) -> bytes:
    """A file of class LARGE, written and then unmounted: the next mount starts with an
    empty cache, so a read of it misses."""
    data = os.urandom(SIZE)
    b = get_backend("tier")
    fd = os.open(t.mnt / "big", os.O_CREAT | os.O_WRONLY, 0o644)
    try:
        assert b.pdwrite(fd, LARGE, data, 0) == SIZE
    finally:
        b.release(fd)
        os.close(fd)
    t.umount()
    t.mount(cache_size="4MiB", policy=policy_path(policy))
    return data


def read_back(t: Tier) -> bytes:
    b = get_backend("tier")
    fd = os.open(t.mnt / "big", os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        return b.pdread(fd, LARGE, SIZE, 0)
    finally:
        b.release(fd)
        os.close(fd)


@pytest.mark.parametrize(
    ("policy", "mode", "fills"),
    [
        ("reference", "dss", True),
        ("dss-slru", "dss", True),
        ("dss-readcut", "dss", False),
        ("dss-slru-readcut", "dss", False),
        ("slru", "lru", True),
        ("dss-secondmiss", "dss", False),
        ("dss-clockpro", "dss", True),
    ],
)
def test_policy_mounts_and_applies_its_read_rule(
    make_tier: object,  # noqa: F811
    policy: str,
    mode: str,
    fills: bool,
) -> None:
    t = make_tier()
    t.mount(cache_size="4MiB", policy=policy_path(policy))
    data = write_and_remount(t, policy)
    assert read_back(t) == data
    s = t.stats()
    assert (s["policy"], s["mode"]) == (policy, mode)
    large = class_stats(s, LARGE)
    assert large["misses"] > 0
    if fills:
        assert large["cached_bytes"] > 0
    else:
        assert large["cached_bytes"] == 0
    assert read_back(t) == data
    # Re-reads hit only where the first read filled the cache.
    again = class_stats(t.stats(), LARGE)
    assert (again["hits"] > large["hits"]) == fills
    if policy == "dss-secondmiss":
        # The second miss of each block filled it: the third read hits.
        assert again["cached_bytes"] > 0
        assert read_back(t) == data
        assert class_stats(t.stats(), LARGE)["hits"] > again["hits"]
