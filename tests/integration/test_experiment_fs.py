"""`dss experiment fs` end to end on real dss-tier mounts with the device models on, at a
small scale: every phase measured, the report written, and the cache holding what the
paper's LRU-S holds."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from swift_dss.tierctl import binary

pytestmark = pytest.mark.integration


def test_fs_experiment_small(tmp_path: Path) -> None:
    if binary.why_unusable(binary.find(), "make setup") or os.geteuid() != 0:
        pytest.skip("needs the dss-tier binary, FUSE and root")
    out = tmp_path / "fs"
    dss = Path(sys.executable).parent / "dss"
    proc = subprocess.run(
        [str(dss), "experiment", "fs", "--out", str(out),
         "--scale", "0.1", "--configs", "hdd,dss", "--threads", "4"],
        capture_output=True, text=True, timeout=900, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
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
