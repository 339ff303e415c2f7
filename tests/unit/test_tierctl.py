"""The dss-tier face without a mount: command lines, sizes, reports parsed from the
documents the binary prints (a stand-in script prints them here), daemon records, logs."""

from __future__ import annotations

import json
import stat
import sys
from pathlib import Path

import pytest

from swift_dss.tierctl import TierError, binary, daemon, report
from swift_dss.tierctl.options import (
    MountOptions,
    cache_size_bytes,
    meta_memory_error,
    mount_command,
)

STATS = {
    "mode": "dss",
    "pid": 4242,
    "policy": "reference",
    "block_size": 4096,
    "cache_entries": 10,
    "free_entries": 5,
    "dirty_entries": 3,
    "pinned_entries": 0,
    "syncer_active": False,
    "classes": {
        "11": {
            "cached_bytes": 20480,
            "clean_bytes": 8192,
            "dirty_bytes": 12288,
            "hits": 7,
            "misses": 1,
            "bypassed_bytes": 100,
            "evicted_bytes": 4096,
            "written_back_bytes": 16384,
        }
    },
    "devices": {
        "ssd": {
            "model": "intel710",
            "ops": 3,
            "bytes": 30,
            "busy_s": 1.5,
            "read_ops": 1,
            "write_ops": 2,
            "read_bytes": 10,
            "write_bytes": 20,
        },
        "hdd": {"model": "none", "ops": 0, "bytes": 0, "busy_s": 0.0},
    },
    "ssd_loss": [],
}
DUMP = {
    "block_size": 4096,
    "classes": {"24": {"cached_bytes": 12288, "dirty_bytes": 12288, "files": 1}},
    "extents": [{"file": 5, "index": 0, "blocks": 2, "class": 24, "state": "dirty"}],
    "truncated": False,
}


def fake_binary(tmp_path: Path, body: str) -> Path:
    """A stand-in for dss-tier: a Python script with BODY after `import sys`."""
    path = tmp_path / "dss-tier"
    path.write_text(f"#!{sys.executable}\nimport sys\n{body}\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def test_mount_command_passes_only_what_is_set() -> None:
    full = MountOptions("64MiB", "/p.toml", "dss", "none", "st1000nm0011")
    assert mount_command("dss-tier", Path("/s"), Path("/h"), Path("/m"), full) == [
        *("dss-tier", "mount", "--ssd", "/s", "--hdd", "/h", "--cache-size", "64MiB"),
        *("--policy", "/p.toml", "--mode", "dss", "--ssd-model", "none"),
        *("--hdd-model", "st1000nm0011", "/m"),
    ]
    memory = MountOptions("1MiB", "/p.toml", meta_memory="0")
    assert memory.args()[-2:] == ["--meta-memory", "0"]
    bare = MountOptions("1MiB", Path("/p.toml"), extra=("--warm",))
    assert bare.args() == ["--cache-size", "1MiB", "--policy", "/p.toml", "--warm"]


def test_metadata_memory_is_a_size_or_none() -> None:
    assert [meta_memory_error(s) for s in ("0", "24GiB", "4096")] == [None, None, None]
    for bad in ("lots", "1.5G", "", "-1"):
        assert "not a size such as 1GiB (0 for none)" in str(meta_memory_error(bad))
    # A value of hundreds of digits is named by its start, not repeated whole.
    assert meta_memory_error("9" * 400) == (
        "metadata memory '" + "9" * 20 + "\u2026' is not a size such as 1GiB (0 for none)"
    )


def test_cache_sizes_are_those_the_tier_takes() -> None:
    sizes = ("256MiB", "4g", "4096", "1 k", "64MiB", "1TiB", "lots", "1.5G", "1P", "", "0")
    assert [cache_size_bytes(s) for s in sizes] == [
        *(256 << 20, 4 << 30, 4096, 1024, 64 << 20, 1 << 40),
        *(0, 0, 0, 0, 0),
    ]


def test_stats_document_is_typed_and_kept_raw(tmp_path: Path) -> None:
    tier = fake_binary(tmp_path, f"print({json.dumps(json.dumps(STATS))})")
    stats = report.stats("/mnt", binary=tier)
    assert (stats.mode, stats.pid, stats.policy, stats.dirty_entries) == (
        "dss",
        4242,
        "reference",
        3,
    )
    assert stats.cache_bytes == 40960
    assert stats.of_class(11).written_back_bytes == 16384
    assert stats.of_class(12) == report.ClassStats()
    assert stats.devices["ssd"].busy_s == 1.5 and stats.devices["hdd"].read_ops == 0
    assert stats.raw == STATS


def test_dump_document_is_typed_and_totals_leave_the_extents_out(tmp_path: Path) -> None:
    tier = fake_binary(tmp_path, f"print({json.dumps(json.dumps(DUMP))})")
    content = report.dump("/mnt", binary=tier)
    assert content.classes[24].files == 1 and content.classes[24].pinned_bytes == 0
    assert content.extents == [report.Extent(5, 0, 2, 24, "dirty")]
    assert content.totals() == {k: v for k, v in DUMP.items() if k != "extents"}


def test_report_failures_are_one_line(tmp_path: Path) -> None:
    complaint = "print('dss-tier: /m: not a dss-tier mount?', file=sys.stderr)\nsys.exit(1)"
    refused = fake_binary(tmp_path, complaint)
    with pytest.raises(TierError, match=r"^dss-tier stats of /m failed: dss-tier: /m: not a"):
        report.stats("/m", binary=refused)
    slow = fake_binary(tmp_path, "import time\ntime.sleep(5)")
    with pytest.raises(TierError, match="got no answer within 0 s"):
        report.dump("/m", binary=slow, timeout=0.2)
    garbled = fake_binary(tmp_path, "print('{')")
    with pytest.raises(TierError, match="printed no JSON document"):
        report.stats("/m", binary=garbled)


def test_daemon_records_round_trip_and_a_dead_daemon_is_not_alive(tmp_path: Path) -> None:
    tier = fake_binary(tmp_path, "print('dss-tier: bad.toml: parse error'); print('  low_water')")
    log = tmp_path / "log" / "tier.log"
    log.parent.mkdir()
    log.write_bytes(b"dss-tier: an earlier run\n")
    options = MountOptions("1MiB", "/p.toml")
    started = daemon.spawn(str(tier), tmp_path / "s", tmp_path / "h", tmp_path / "m", options, log)
    assert started.log_start == len(b"dss-tier: an earlier run\n")
    with pytest.raises(TierError, match=r"mount of \S+/m failed: dss-tier: bad.toml: .*low_water"):
        daemon.wait_mounted(started)
    again = daemon.Daemon.from_record(started.record())
    assert again.record() == started.record() and started.record()["kind"] == "tier"
    assert not daemon.alive(again)
    daemon.reap()
    assert daemon.log_error(log) == "dss-tier: bad.toml: parse error: low_water"
    assert daemon.log_error(tmp_path / "none.log") == "no output"


def test_why_the_binary_cannot_run(tmp_path: Path) -> None:
    missing = binary.why_unusable(None, "--tier-mode none runs on plain directories")
    assert missing == (
        "the dss-tier binary is missing (make setup builds it; --tier-mode none runs on "
        "plain directories)"
    )
    assert binary.why_unusable(tmp_path / "nothing") == (
        "the dss-tier binary is missing (make setup builds it)"
    )
