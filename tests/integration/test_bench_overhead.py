"""`dss bench overhead` runs end to end and writes figures that add up (no timing asserted)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from swift_dss.cli import main

pytestmark = pytest.mark.integration


def test_overhead_bench_writes_its_figures(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        main, ["bench", "overhead", "--rounds", "1", "--out", str(tmp_path)]
    )
    assert result.exit_code == 0, result.output
    figures = json.loads((tmp_path / "bench.json").read_text())
    names = [f"{op} {size}" for size in ("4KiB", "4MiB") for op in ("PUT", "GET")]
    assert [f["name"] for f in figures] == [
        n for name in names for n in (name, f"{name} server CPU")
    ]
    for f in figures:
        assert set(f) == {"name", "ours", "baseline", "ratio", "ci", "unit", "goal"}
        assert f["goal"] == 0.97
        assert f["ours"] > 0 and f["baseline"] > 0
        assert f["ratio"] == pytest.approx(f["ours"] / f["baseline"], rel=1e-3)
        # One round: every resample is that round, so the interval is the ratio itself.
        assert f["ci"] == pytest.approx([f["ratio"], f["ratio"]], rel=1e-3)
    assert (tmp_path / "bench.png").stat().st_size > 0
    # Both clusters are gone afterwards: nothing of theirs is still mounted.
    mounts = Path("/proc/self/mounts").read_text().split("\n")
    assert not [m for m in mounts if str(tmp_path) in m]


def test_calls_per_request_counts_both_sides() -> None:
    # A process of its own: the count points Swift at a temporary swift.conf.
    out = subprocess.run(
        [sys.executable, "-m", "swift_dss.bench.overhead"],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    ).stdout.splitlines()
    rows = [line.rsplit(None, 3) for line in out[1:]]
    assert [r[0].strip() for r in rows] == [
        f"{op} 4KiB {what}"
        for op in ("PUT", "GET")
        for what in (
            "object server",
            "object server, stock given the sysmeta",
            "proxy middleware",
        )
    ]
    for _name, ours, theirs, extra in rows:
        assert float(ours) > 0 and float(theirs) > 0
        assert float(extra) == pytest.approx(float(ours) - float(theirs), abs=0.11)


def test_control_measures_two_stock_clusters_without_a_goal(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        main, ["bench", "overhead-control", "--rounds", "1", "--out", str(tmp_path)]
    )
    assert result.exit_code == 0, result.output
    assert "every goal met" in result.output
    figures = json.loads((tmp_path / "bench.json").read_text())
    assert len(figures) == 8
    assert all(f["goal"] is None and f["ours"] > 0 and f["baseline"] > 0 for f in figures)
    # Neither cluster ran dss in its pipeline.
    for side in ("stock-a", "stock-b"):
        conf = (tmp_path / side / "proxy-server.conf").read_text()
        pipeline = next(ln for ln in conf.splitlines() if ln.startswith("pipeline ="))
        assert "proxy-server" in pipeline.split()
        assert "dss" not in pipeline.split()
