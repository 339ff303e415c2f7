"""`dss experiment fs` end to end on real dss-tier mounts with the device models on, at a
small scale: every phase measured, the report written, and the cache holding what the
paper's LRU-S holds."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from swift_dss import mountinfo
from swift_dss.tierctl import binary, daemon

pytestmark = pytest.mark.integration


def run_fs(out: Path, *args: str, scale: float = 0.1) -> subprocess.CompletedProcess[str]:
    """`dss experiment fs --out OUT ARGS` at SCALE of the default (a tenth), which must
    pass."""
    if binary.why_unusable(binary.find(), "make setup") or os.geteuid() != 0:
        pytest.skip("needs the dss-tier binary, FUSE and root")
    dss = Path(sys.executable).parent / "dss"
    proc = subprocess.run(
        [str(dss), "experiment", "fs", "--out", str(out), "--scale", str(scale), *args],
        capture_output=True, text=True, timeout=900, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


def test_fs_experiment_small(tmp_path: Path) -> None:
    out = tmp_path / "fs"
    proc = run_fs(out, "--workloads", "sfs,email", "--configs", "hdd,dss", "--threads", "4")
    summary = json.loads((out / "summary.json").read_text())
    runs = {(r["workload"], r["config"]): r for r in summary["runs"]}
    assert set(runs) == {("sfs", "hdd"), ("sfs", "dss"), ("email", "hdd"), ("email", "dss")}
    for (w, _c), r in runs.items():
        want = {"setup", "transactions"} | ({"find", "tar", "scan"} if w == "sfs" else set())
        assert set(r["phases"]) == want
        assert r["phases"]["transactions"]["ops"] == round(
            {"sfs": 262_144 / 500, "email": 1_000_000 / 1000}[w] * 0.1
        )
        # The models were charged: the run is their time, not the tmpfs's.
        assert sum(p["hdd_busy_s"] + p["ssd_busy_s"] for p in r["phases"].values()) > 0
    dss, hdd = runs[("sfs", "dss")], runs[("sfs", "hdd")]
    # DSS keeps metadata on the SSD: find, all metadata, hits it; HDD only has no cache.
    assert dss["phases"]["find"]["read_hit_ratio"] > 0.9
    assert dss["content"]["metadata"] > 0
    assert hdd["phases"]["find"]["hdd_busy_s"] > dss["phases"]["find"]["hdd_busy_s"]
    report = (out / "report.md").read_text()
    assert "| sfs: dss over hdd |" in report and "(fsck-style scan)" in report
    assert (out / "fs.png").stat().st_size > 0 and (out / "content.png").stat().st_size > 0
    assert "sfs: dss over hdd" in proc.stdout
    assert not (out / "devices" / "sfs").exists(), "each run's devices are removed"


def test_fs_experiment_tpch_small(tmp_path: Path) -> None:
    out = tmp_path / "tpch"
    # At a tenth of the default the cache's 16 MiB floor holds 63% of the data and every
    # index with it, so nothing is under pressure and DSS has nothing to bypass; at 0.3 the
    # cache is the paper's 27.6% of the data.
    proc = run_fs(out, "--workloads", "tpch", "--configs", "hdd,lru,dss", scale=0.3)
    summary = json.loads((out / "summary.json").read_text())
    runs = {r["config"]: r for r in summary["runs"]}
    assert set(runs) == {"hdd", "lru", "dss"}
    assert summary["tpch"]["scale_factor"] == pytest.approx(0.06)
    assert all(r["cache_bytes"] < 0.3 * r["pool_bytes"] for r in runs.values())
    queries = ("Q2", "Q17", "Q18", "Q19")
    for r in runs.values():
        assert r["workload"] == "tpch" and set(r["phases"]) == {"load", "queries"}
        assert set(r["queries"]) == set(queries) == set(r["answers"])
        assert all(r["queries"][q]["seconds"] > 0 for q in queries)
        total = sum(r["queries"][q]["seconds"] for q in queries)
        assert r["phases"]["queries"]["seconds"] == pytest.approx(total)
        # The models were charged: the run is their time, not the tmpfs's.
        assert r["phases"]["load"]["hdd_busy_s"] > 0 and r["phases"]["queries"]["hdd_busy_s"] > 0
        assert r["phases"]["load"]["bytes"] == r["pool_bytes"] > 0
    # The paper's mechanism: DSS keeps the tables and lets the indexes bypass its cache,
    # where LRU caches whatever came last.
    dss, lru = runs["dss"], runs["lru"]
    assert dss["content"]["indexes"] < dss["content"]["tables"]
    assert dss["content"]["indexes"] < lru["content"]["indexes"]
    assert dss["phases"]["queries"]["ssd_busy_s"] > 0 and runs["hdd"]["content"] == {
        "metadata": 0.0,
        "tables": 0.0,
        "indexes": 0.0,
        "other": 0.0,
    }
    assert runs["hdd"]["answers"] == dss["answers"] == lru["answers"], "the same rows"
    report = (out / "report.md").read_text()
    assert "## TPC-H on SQLite" in report and "| tpch: dss over hdd |" in report
    assert "same rows" in report and (out / "fs.png").stat().st_size > 0
    assert "tpch: dss over hdd" in proc.stdout
    assert not (out / "devices" / "tpch").exists(), "each run's devices are removed"
    assert not (out / "devices" / "tpch-staging.sqlite").exists()


def test_a_stopped_fs_experiment_unmounts_its_tiers(tmp_path: Path) -> None:
    """`kill` (SIGTERM) unwinds the run as Ctrl-C does: the tier it mounted is taken down
    and no dss-tier daemon is left, where the default action would leave both behind."""
    if binary.why_unusable(binary.find(), "make setup") or os.geteuid() != 0:
        pytest.skip("needs the dss-tier binary, FUSE and root")
    out = tmp_path / "fs"
    dss = Path(sys.executable).parent / "dss"
    cmd = [str(dss), "experiment", "fs", "--out", str(out), "--workloads", "sfs", "--configs",
           "dss"]  # fmt: skip
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 300
        while not tier_mounts(out) and proc.poll() is None:
            assert time.monotonic() < deadline, "no tier was mounted"
            time.sleep(0.2)
        assert proc.poll() is None, proc.communicate()[0][-2000:]
        proc.send_signal(signal.SIGTERM)
        output = proc.communicate(timeout=300)[0]
        assert proc.returncode == 1, output[-2000:]
        assert "interrupted" in output
        assert mountinfo.mounts_under(out) == []
        assert not daemons_under(out)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for path in reversed(mountinfo.mounts_under(out)):
            daemon.unmount(path)


def tier_mounts(directory: Path) -> list[str]:
    return [
        e.mount_point
        for e in mountinfo.read()
        if e.fstype == "fuse.dss-tier" and e.mount_point.startswith(f"{directory}/")
    ]


def daemons_under(directory: Path) -> list[int]:
    """The processes whose command line names a path under DIRECTORY."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if str(directory) in (entry / "cmdline").read_bytes().decode(errors="replace"):
                    found.append(int(entry.name))
    return found
