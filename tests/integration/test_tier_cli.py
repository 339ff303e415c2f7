"""The operator's `dss-tier` command line on real FUSE mounts: help and version, `list`,
`flush`, `reset-counters`, `reload-policy` (good and bad files), `stats --csv`, and a
one-line error with a non-zero exit for every bad input."""

from __future__ import annotations

import csv
import io
import json
import os
import resource
import shutil
import sqlite3
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from swift_dss.dssio import TierBackend
from swift_dss.experiment.tpch_memory import HostMemory
from tests.integration.tier_helpers import (  # noqa: F401
    BIN,
    LRU,
    MIB,
    REFERENCE,
    MakeTier,
    Tier,
    force_unmount,
    make_tier,
    tiers,
    tmpfs,
)


def run(*args: str | Path, user: int | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN), *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        user=user,
        group=user,
        extra_groups=[] if user is not None else None,
    )


def ok(*args: str | Path) -> str:
    proc = run(*args)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def refused(proc: subprocess.CompletedProcess[str]) -> str:
    """The one-line complaint of a command that failed as it should."""
    assert proc.returncode != 0, proc.stdout
    assert proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("dss-tier: "), proc.stderr
    return lines[0]


def mounted_tier(make: MakeTier, policy: Path = REFERENCE) -> Tier:
    tier = make()
    tier.mount(cache_size="16MiB", policy=policy)
    return tier


def write(path: Path, size: int) -> bytes:
    data = os.urandom(size)
    with open(path, "wb") as f:
        f.write(data)
        os.fsync(f.fileno())
    return data


def dirty(stats: dict) -> int:
    return sum(c["dirty_bytes"] for c in stats["classes"].values())


def cached(stats: dict) -> int:
    return sum(c["cached_bytes"] for c in stats["classes"].values())


@pytest.fixture
def built() -> None:
    if not BIN.exists():
        pytest.skip(f"{BIN} is not built (make setup)")


# --- help, version and bad input (no mount needed) ------------------------------------------


@pytest.mark.usefixtures("built")
@pytest.mark.parametrize(
    "args",
    [
        ["--help"],
        ["help"],
        ["mount", "--help"],
        ["stats", "--help"],
        ["list", "--help"],
        ["flush", "--help"],
        ["reset-counters", "--help"],
        ["drop-caches", "--help"],
        ["reload-policy", "--help"],
        ["fsck", "--help"],
    ],
)
def test_help(args: list[str]) -> None:
    out = ok(*args)
    assert "Usage: dss-tier" in out


@pytest.mark.usefixtures("built")
def test_version() -> None:
    assert ok("--version").strip().startswith("dss-tier ")
    assert "--policy <FILE>" in ok("reload-policy", "--help")
    assert "--csv" in ok("stats", "--help")


@pytest.mark.usefixtures("built")
def test_bad_input_without_a_mount(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    mnt = tmp_path / "mnt"
    (mnt / "h").mkdir(parents=True)
    gone = tmp_path / "gone"
    odd_ssd = tmp_path / "odd"
    (odd_ssd / "cache.journal").mkdir(parents=True)
    bad_toml = tmp_path / "bad.toml"
    bad_toml.write_text('name = "bad"\nlow_water = 0.1\n')
    mount = ["mount", "--ssd", tmp_path / "s", "--hdd", plain, "--cache-size", "1MiB"]
    beyond_memory = str(min(2**32 - 2, psutil.virtual_memory().available // 16) * 4096)
    cases: list[tuple[list[str | Path], str]] = [
        ([], "a command is needed"),
        (["defrag", plain], "unrecognized subcommand"),
        (["stats", "--verbose", plain], "unexpected argument '--verbose'"),
        (["stats"], "required"),
        (["stats", plain, plain], "unexpected argument"),
        (["stats", "--csv", "--json", plain], "cannot be used with"),
        (["dump", "--json"], "required"),
        (["list", plain], "unexpected argument"),
        (["flush"], "required"),
        (["flush", plain, "--now"], "unexpected argument '--now'"),
        (["umount", "--timeout", "soon", plain], "invalid value 'soon'"),
        (["umount", "--timeout", str(2**64 - 1), plain], "not in 0..=4294967295"),
        (["fsck", "--ssd", plain], "--hdd <DIR>"),
        (["fsck", "--ssd", gone, "--hdd", gone], "No such file or directory"),
        (["fsck", "--ssd", plain, "--hdd", plain, "extra"], "unexpected argument"),
        (["fsck", "--ssd", plain, "--hdd", plain], "is the same directory as --hdd"),
        (["fsck", "--ssd", odd_ssd, "--hdd", plain], f"{odd_ssd}/cache.journal: Is a directory"),
        ([*mount, "--policy", REFERENCE, "--cache-size", "1X", plain], "cannot be used multiple"),
        ([*mount[:5], "--cache-size", "1X", "--policy", REFERENCE, plain], "bad size unit"),
        ([*mount[:5], "--cache-size", "0", "--policy", REFERENCE, plain], "above 0"),
        ([*mount, "--policy", REFERENCE, "--mode", "fast", plain], "unknown mode"),
        ([*mount, "--policy", REFERENCE, "--hdd-model", "floppy", plain], "unknown device model"),
        ([*mount, "--policy", REFERENCE, "--threads", "0", plain], "--threads"),
        ([*mount, "--policy", REFERENCE], "<MOUNTPOINT>"),
        ([*mount, "--policy", REFERENCE, plain, plain], "unexpected argument"),
        ([*mount, "--policy", gone, plain], "No such file or directory"),
        ([*mount, "--policy", bad_toml, "--daemon", plain], "low_water"),
        ([*mount, "--policy", REFERENCE, gone], "No such file or directory"),
        ([*mount[:4], gone, *mount[5:], "--policy", REFERENCE, plain], "No such file"),
        ([*mount, "--policy", REFERENCE, "--daemon", bad_toml], "not a directory"),
        (["reload-policy", "--policy", gone, plain], "No such file or directory"),
        # The daemon would wait for its own requests, or Swift would see the cache's files.
        ([*mount[:2], plain / "cache", *mount[3:], "--policy", REFERENCE, mnt], "is inside --hdd"),
        ([*mount[:2], mnt, *mount[3:], "--policy", REFERENCE, mnt], "same directory as the mount"),
        ([*mount[:4], mnt / "h", *mount[5:], "--policy", REFERENCE, mnt], "inside the mount point"),
        ([*mount, "--policy", REFERENCE, plain], "--hdd " + str(plain) + " is the same directory"),
        # Tables past what a cache can index, or than this host's memory holds, would
        # abort the daemon. An entry costs at least 48 bytes: a block per 16 bytes of the
        # available memory is three times too many.
        ([*mount[:5], "--cache-size", "100T", "--policy", REFERENCE, mnt], "holds at most"),
        ([*mount[:5], "--cache-size", beyond_memory, "--policy", REFERENCE, mnt], "of memory"),
    ]
    for command in ("stats", "dump", "flush", "reset-counters", "reload-policy", "umount"):
        cases.append(([command, gone], "No such file or directory"))
        cases.append(([command, plain], "not a dss-tier mount"))
    for args, why in cases:
        line = refused(run(*args))
        assert why in line, (args, line)
    assert not (tmp_path / "s").exists(), "a refused mount created nothing"


@pytest.mark.usefixtures("built")
def test_mount_sees_through_bind_mounts_and_measures_the_ssd(tmp_path: Path) -> None:
    """A bind mount shows a directory at a second path: the check that keeps the SSD, the
    HDD and the mount point apart sees through it. A cache larger than the file system
    under the SSD directory is refused: it could never be filled."""
    small, hdd, mnt, bound = (tmp_path / name for name in ("small", "h", "m", "b"))
    for d in (small, hdd, mnt, bound):
        d.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", small], check=True)
    try:
        subprocess.run(["mount", "--bind", hdd, bound], check=True)
        mount = ["mount", "--hdd", hdd, "--policy", REFERENCE]
        for args, why in [
            ([*mount, "--ssd", small / "s", "--cache-size", "1MiB", bound], "is the same"),
            ([*mount, "--ssd", bound / "c", "--cache-size", "1MiB", mnt], "is inside --hdd"),
            ([*mount, "--ssd", small / "s", "--cache-size", "5MiB", mnt], "larger than the"),
        ]:
            line = refused(run(*args))
            assert why in line, (args, line)
        assert not (small / "s").exists() and not (hdd / "c").exists()
        ok(*mount, "--ssd", small / "s", "--cache-size", "4MiB", "--daemon", mnt)
        ok("umount", mnt)
        # A file system too full for the journal's room, and for the detached daemon's
        # log that would say so.
        with open(small / "filler", "wb", buffering=0) as f, pytest.raises(OSError):
            while True:
                f.write(bytes(4096))
        fresh = [*mount, "--ssd", small / "s2", "--cache-size", "2MiB"]
        line = refused(run(*fresh, "--daemon", mnt))
        assert f"the file system under --ssd {small / 's2'} is full" in line, line
        assert "no room for the journal's" in refused(run(*fresh, mnt))
        (small / "filler").unlink()
        ok(*fresh, "--daemon", mnt)
        ok("umount", mnt)
    finally:
        for path in (mnt, bound, small):
            force_unmount(path)


# --- on a mount ------------------------------------------------------------------------------


def test_list_shows_each_mount(make_tier: MakeTier) -> None:  # noqa: F811
    a = mounted_tier(make_tier)
    b = make_tier("u")
    b.mount(cache_size="4MiB", policy=LRU)
    rows = {Path(r["mountpoint"]): r for r in json.loads(ok("list", "--json"))}
    assert rows[a.mnt.resolve()]["mode"] == "dss"
    assert rows[a.mnt.resolve()]["cache_bytes"] == 16 * MIB
    assert rows[a.mnt.resolve()]["hdd"] == str(a.hdd.resolve())
    assert rows[b.mnt.resolve()]["mode"] == "lru"
    assert rows[b.mnt.resolve()]["cache_bytes"] == 4 * MIB
    assert rows[b.mnt.resolve()]["pid"] == b.stats()["pid"]
    table = ok("list").splitlines()
    assert table[0].split() == ["MOUNTPOINT", "MODE", "CACHE", "DIRTY", "POLICY", "PID", "HDD"]
    line = next(x for x in table if x.startswith(f"{a.mnt.resolve()} "))
    assert line.split()[1:3] == ["dss", "16MiB"] and line.endswith(str(a.hdd.resolve()))
    b.umount()
    assert b.mnt.resolve() not in {Path(r["mountpoint"]) for r in json.loads(ok("list", "--json"))}


def test_flush_writes_everything_back(make_tier: MakeTier) -> None:  # noqa: F811
    tier = mounted_tier(make_tier)
    data = {name: write(tier.mnt / name, size) for name, size in (("a", MIB), ("b", 5000))}
    before = tier.stats()
    assert dirty(before) > 0
    out = ok("flush", tier.mnt)
    assert out.startswith(f"{tier.mnt}: flushed: ") and out.count("\n") == 1
    after = tier.stats()
    assert dirty(after) == 0 and after["dirty_entries"] == 0
    # Written back, not dropped: the blocks stay cached, clean.
    assert cached(after) >= MIB
    # The devices count the write-back apart: the SSD read the blocks, the HDD wrote
    # them, and nothing else the HDD did (before the flush: nothing) is counted with it.
    ssd, hdd = (after["devices"][d] for d in ("ssd", "hdd"))
    assert ssd["writeback_bytes"] >= MIB + 5000 and ssd["writeback_ops"] >= 2
    assert hdd["writeback_bytes"] >= MIB + 5000
    assert hdd["writeback_bytes"] - before["devices"]["hdd"]["writeback_bytes"] == (
        hdd["write_bytes"] - before["devices"]["hdd"]["write_bytes"]
    )
    for name, content in data.items():
        assert (tier.hdd / name).read_bytes() == content
    # Nothing dirty: a second flush has nothing to do.
    assert ok("flush", tier.mnt).startswith(f"{tier.mnt}: flushed: ")
    assert dirty(tier.stats()) == 0


def test_reset_counters_zeroes_activity_and_keeps_content(make_tier: MakeTier) -> None:  # noqa: F811
    tier = mounted_tier(make_tier)
    write(tier.mnt / "f", 256 * 1024)
    ok("flush", tier.mnt)
    (tier.mnt / "f").read_bytes()
    before = tier.stats()
    assert any(c["hits"] or c["misses"] for c in before["classes"].values())
    assert before["devices"]["hdd"]["ops"] > 0
    assert before["devices"]["hdd"]["writeback_bytes"] > 0
    assert ok("reset-counters", tier.mnt) == f"{tier.mnt}: counters reset\n"
    after = tier.stats()
    hdd = after["devices"]["hdd"]
    assert hdd["writeback_bytes"] == hdd["writeback_ops"] == hdd["writeback_busy_s"] == 0
    for c in after["classes"].values():
        counters = ("hits", "misses", "bypassed_bytes", "evicted_bytes", "written_back_bytes")
        assert all(c[k] == 0 for k in counters), c
    assert cached(after) == cached(before)
    assert after["devices"]["hdd"]["ops"] == 0 and after["devices"]["hdd"]["bytes"] == 0
    # Counting goes on from zero.
    write(tier.mnt / "g", 8192)
    assert tier.stats()["devices"]["ssd"]["write_ops"] > 0


def cold_read(tier: Tier, name: str, body: bytes) -> int:
    """HDD bytes read by a cold read of file NAME (holding BODY) through the mount."""
    before = tier.stats()["devices"]["hdd"]["read_bytes"]
    # The mount's own page cache goes first, so that the read reaches the tier.
    Path("/proc/sys/vm/drop_caches").write_text("3\n")
    assert (tier.mnt / name).read_bytes() == body
    return tier.stats()["devices"]["hdd"]["read_bytes"] - before


def test_drop_caches_makes_the_next_read_pay_the_modelled_disk(make_tier: MakeTier) -> None:  # noqa: F811
    tier = make_tier()
    tier.mount(mode="hdd", extra=("--hdd-model", "st1000nm0011:pagecache=64MiB"))
    body = write(tier.mnt / "f", 2 * MIB)
    assert cold_read(tier, "f", body) < MIB, "the model's page cache still holds what was written"
    said = ok("drop-caches", tier.mnt)
    assert said.startswith(f"{tier.mnt}: model page cache dropped: "), said
    assert int(said.split()[-2]) >= 2 * MIB, "the file's pages and the metadata's"
    assert tier.stats()["devices"]["hdd"]["write_bytes"] >= 2 * MIB, "written back first"
    assert cold_read(tier, "f", body) >= 2 * MIB, "now the read pays the disk"
    plain = make_tier("plain")
    plain.mount()
    assert ok("drop-caches", plain.mnt) == f"{plain.mnt}: no model page cache to drop\n"


def test_a_drop_cache_ioctl_makes_that_range_pay_the_modelled_disk(make_tier: MakeTier) -> None:  # noqa: F811
    tier = make_tier()
    tier.mount(mode="hdd", extra=("--hdd-model", "st1000nm0011:pagecache=64MiB"))
    body = write(tier.mnt / "f", 2 * MIB)
    assert cold_read(tier, "f", body) < MIB
    fd = os.open(tier.mnt / "f", os.O_RDONLY)
    try:
        # The second MiB, as Swift's fadvise after reading it (length 0: to the end).
        TierBackend().drop_cache(fd, MIB, 0)
    finally:
        os.close(fd)
    paid = cold_read(tier, "f", body)
    assert MIB <= paid < 2 * MIB, paid


def test_the_tpch_host_memory_drop_reaches_the_modelled_page_cache(
    make_tier: MakeTier,  # noqa: F811
) -> None:
    """The TPC-H run's host memory lets a file's pages go: on a mount in mode hdd the HDD
    model's page cache must let them go too, or HDD only keeps a memory the cached modes
    do not have."""
    tier = make_tier()
    tier.mount(mode="hdd", extra=("--hdd-model", "st1000nm0011:pagecache=64MiB"))
    body = write(tier.mnt / "lineitem.tbl", 2 * MIB)
    assert cold_read(tier, "lineitem.tbl", body) < MIB, "the model's page cache holds the file"
    conn = sqlite3.connect(":memory:")
    try:
        with HostMemory().bound(conn, [tier.mnt / "lineitem.tbl"]):
            pass  # the drop on leaving is the one under test
    finally:
        conn.close()
    assert cold_read(tier, "lineitem.tbl", body) >= 2 * MIB


def test_reload_policy(make_tier: MakeTier, tmp_path: Path) -> None:  # noqa: F811
    tier = mounted_tier(make_tier)
    kept = write(tier.mnt / "kept", 64 * 1024)
    cached_before = cached(tier.stats())
    assert cached_before > 0
    # A good file: straight to the HDD from now on (mode hdd); what is cached stays.
    hdd_mode = tmp_path / "hdd.toml"
    hdd_mode.write_text(
        REFERENCE.read_text()
        .replace('name = "reference"', 'name = "reference-hdd"', 1)
        .replace('mode = "dss"', 'mode = "hdd"', 1)
    )
    out = ok("reload-policy", "--policy", hdd_mode, tier.mnt)
    assert "policy reference-hdd (mode hdd)" in out
    s = tier.stats()
    assert (s["policy"], s["mode"]) == ("reference-hdd", "hdd")
    assert cached(s) == cached_before
    fresh = write(tier.mnt / "fresh", 64 * 1024)
    assert cached(tier.stats()) <= cached_before, "mode hdd caches nothing new"
    assert (tier.hdd / "fresh").read_bytes() == fresh
    assert (tier.mnt / "kept").read_bytes() == kept
    # A bad file is refused with its parse error; the policy in force stays.
    bad = tmp_path / "bad.toml"
    bad.write_text(hdd_mode.read_text().replace("\nlow_watermark =", "\nlow_water =", 1))
    line = refused(run("reload-policy", "--policy", bad, tier.mnt))
    assert "TOML parse error" in line and "low_water" in line
    shape = tmp_path / "shape.toml"
    shape.write_text(hdd_mode.read_text().replace("\nblock_size = 4096", "\nblock_size = 8192"))
    line = refused(run("reload-policy", "--policy", shape, tier.mnt))
    assert "block_size (4096 -> 8192) cannot change" in line and "the policy in force stays" in line
    assert tier.stats()["policy"] == "reference-hdd"
    # Without --policy: the mount's file (the last one taken) read again.
    hdd_mode.write_text(REFERENCE.read_text())
    out = ok("reload-policy", tier.mnt)
    assert f"policy reference (mode dss) from {hdd_mode}" in out
    before_again = cached(tier.stats())
    write(tier.mnt / "again", 64 * 1024)
    assert cached(tier.stats()) >= before_again + 64 * 1024
    # Everything cached under the other policies is still sound.
    ok("flush", tier.mnt)
    assert (tier.hdd / "kept").read_bytes() == kept
    tier.umount()
    assert (tier.hdd / "kept").read_bytes() == kept


def test_stats_csv_matches_the_json(make_tier: MakeTier) -> None:  # noqa: F811
    tier = mounted_tier(make_tier)
    write(tier.mnt / "f", 100_000)
    (tier.mnt / "f").read_bytes()
    doc = tier.stats()
    rows = list(csv.DictReader(io.StringIO(ok("stats", "--csv", tier.mnt))))
    classes = {r["id"]: r for r in rows if r["kind"] == "class"}
    devices = {r["id"]: r for r in rows if r["kind"] == "device"}
    assert len(rows) == len(classes) + len(devices)
    assert set(devices) == set(doc["devices"]) == {"ssd", "hdd"}
    assert set(classes) == set(doc["classes"])
    for cls, c in doc["classes"].items():
        for key in ("cached_bytes", "dirty_bytes", "written_back_bytes"):
            # Nothing wrote in between: the gauges agree.
            assert int(classes[cls][key]) == c[key], (cls, key)
        assert classes[cls]["model"] == ""
    assert devices["hdd"]["model"] == "none" and devices["hdd"]["hits"] == ""


@pytest.fixture
def open_base() -> Iterator[Path]:
    """A directory anyone may walk through (pytest's own are root's alone)."""
    base = Path(tempfile.mkdtemp(prefix="dss-tier-cli-"))
    base.chmod(0o755)
    try:
        yield base
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_control_is_root_only(open_base: Path, tiers: list[Tier]) -> None:  # noqa: F811
    tier = Tier(open_base / "t")
    tiers.append(tier)
    tier.mount(cache_size="4MiB")
    # Writable by all, so that only the daemon's own check stands in the way.
    tier.mnt.chmod(0o777)
    binary = open_base / "dss-tier"
    shutil.copy(BIN, binary)
    binary.chmod(0o755)
    write(tier.mnt / "f", 8192)
    for command in (["flush"], ["reset-counters"], ["drop-caches"], ["reload-policy"]):
        proc = subprocess.run(
            [str(binary), *command, str(tier.mnt)],
            capture_output=True, text=True, timeout=60, check=False,
            user=65534, group=65534, extra_groups=[],
        )  # fmt: skip
        line = refused(proc)
        assert "only root may control a mount" in line, line
    assert dirty(tier.stats()) > 0
    # Reading stays open to all.
    proc = subprocess.run(
        [str(binary), "stats", "--json", str(tier.mnt)],
        capture_output=True, text=True, timeout=60, check=False,
        user=65534, group=65534, extra_groups=[],
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr


@pytest.mark.usefixtures("built")
def test_a_detached_daemon_that_fails_says_why(tmp_path: Path) -> None:
    """--daemon returns once the mount is up; a daemon that fails after the checks (here on
    a journal cut short) says why in SSD/daemon.log, and the mount command repeats it."""
    ssd, hdd, mnt = tmp_path / "s", tmp_path / "h", tmp_path / "m"
    for d in (ssd, hdd, mnt):
        d.mkdir()
    (ssd / "cache.journal").write_bytes(b"DSS")
    mount = ["mount", "--ssd", ssd, "--hdd", hdd, "--cache-size", "1MiB", "--policy", REFERENCE]
    line = refused(run(*mount, "--daemon", mnt))
    assert "mount failed (exit status: 1)" in line and "journal shorter than its header" in line
    assert "journal shorter than its header" in (ssd / "daemon.log").read_text()
    assert not os.path.ismount(mnt)


def test_a_mount_over_files_warns_that_it_hides_them(make_tier: MakeTier) -> None:  # noqa: F811
    """As under Swift, when a server wrote into the device while the tier was down: the
    mount goes ahead, says what it hides, and the file is there again after the unmount."""
    tier = make_tier()
    (tier.mnt / "written-while-down").write_bytes(b"kept under the mount")
    tier.mount(cache_size="16MiB")
    said = tier.log.read_text()
    assert 'is not empty ("written-while-down" among its entries): the mount hides them' in said
    assert os.listdir(tier.mnt) == []
    tier.umount()
    assert (tier.mnt / "written-while-down").read_bytes() == b"kept under the mount"
    empty = make_tier("empty")
    empty.mount(cache_size="16MiB")
    assert "not empty" not in empty.log.read_text()


def test_bad_input_on_a_mount(make_tier: MakeTier, tmp_path: Path) -> None:  # noqa: F811
    tier = mounted_tier(make_tier)
    (tier.mnt / "sub").mkdir()
    (tmp_path / "h").mkdir()
    mount = ["mount", "--ssd", tmp_path / "s", "--hdd", tmp_path / "h", "--cache-size", "1MiB"]
    for args, why in [
        (["flush", tier.mnt / "sub"], "not a dss-tier mount"),
        (["stats", "--json", tier.mnt / "sub"], "not a dss-tier mount"),
        (["stats", tier.mnt, tier.mnt], "unexpected argument"),
        (["reload-policy", "--policy", tier.mnt / "sub", tier.mnt], "not a file"),
        ([*mount, "--policy", REFERENCE, tier.mnt], "already a dss-tier mount"),
    ]:
        line = refused(run(*args))
        assert why in line, (args, line)
    assert tier.stats()["mode"] == "dss"
    # Output nobody can take: a reader that has gone ends the command quietly, as click
    # ends the dss commands (it used to panic with a backtrace); a full disk is named.
    reader, writer = os.pipe()
    os.close(reader)
    with open(writer, "wb") as gone_reader, open("/dev/full", "wb") as full:
        for out, status, said in ((gone_reader, 1, ""), (full, 1, "No space left")):
            proc = subprocess.run(
                [str(BIN), "dump", str(tier.mnt)], stdout=out, stderr=subprocess.PIPE,
                text=True, timeout=60, check=False,
            )  # fmt: skip
            assert proc.returncode == status, proc.stderr
            assert said in proc.stderr and len(proc.stderr.splitlines()) == int(bool(said))


def test_buffered_metadata_writes_are_charged_as_written_through_ones(make_tier: MakeTier) -> None:  # noqa: F811
    """--meta-writes buffered changes when a metadata write's caller goes on, not what the
    device is charged: the same creates, xattrs and renames cost the HDD model the same
    writes either way, and every file is there, fsynced, after a remount."""
    charged = {}
    for how in ("sync", "buffered"):
        tier = make_tier(how)
        extra = ("--hdd-model", "st1000nm0011", "--meta-writes", how)
        tier.mount(mode="hdd", extra=extra)
        before = tier.stats()["devices"]["hdd"]["write_ops"]
        (tier.mnt / "d").mkdir()
        for i in range(8):
            tmp = tier.mnt / "d" / f".tmp{i}"
            tmp.write_bytes(b"x" * 100)
            os.setxattr(tmp, "user.meta", b"y" * 300)
            tmp.rename(tier.mnt / "d" / f"f{i}")
        fd = os.open(tier.mnt / "d" / "f7", os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        charged[how] = tier.stats()["devices"]["hdd"]["write_ops"] - before
        tier.umount()
        tier.mount(mode="hdd", extra=extra)
        assert sorted(p.name for p in (tier.mnt / "d").iterdir()) == [f"f{i}" for i in range(8)]
        assert os.getxattr(tier.mnt / "d" / "f3", "user.meta") == b"y" * 300
        tier.umount()
    assert charged["sync"] >= 8 * 3, charged
    assert charged["buffered"] == charged["sync"], charged


def test_the_daemon_raises_its_open_files_limit_to_the_hard_one(
    make_tier: MakeTier,  # noqa: F811
) -> None:
    """Started with the usual soft limit of 1,024 descriptors, the daemon raises it: it
    holds one per file open on the mount, more than 1,024 on a busy object server."""
    t = make_tier()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(1024, hard), hard))
    try:
        t.mount()  # the daemon inherits the lowered limit
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    assert t.proc is not None
    limits = Path(f"/proc/{t.proc.pid}/limits").read_text()
    line = next(x for x in limits.splitlines() if x.startswith("Max open files"))
    daemon_soft, daemon_hard = line.split()[3:5]
    assert int(daemon_soft) == int(daemon_hard) == hard
