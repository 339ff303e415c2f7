"""`dss experiment caching|traffic` end to end at a tiny scale: every configuration gets
its own cluster, and summary.json and report.md come out with the documented keys. The
paper's ratios are results, not tested here."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from swift_dss.deploy.saio import mount_type
from swift_dss.experiment.cli import experiment
from swift_dss.experiment.summary import FIG7_KEYS

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(shutil.which("memcached") is None, reason="needs memcached"),
]

TINY = [
    *("--devices", "1", "--replicas", "1", "--workers", "2"),
    *("--size-scale", "0.002", "--containers", "2"),
]


def invoke(args: list[str]) -> str:
    result = CliRunner().invoke(experiment, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


@pytest.mark.timeout(600)
def test_caching_tiny(tmp_path: Path) -> None:
    out = tmp_path / "caching"
    args = [
        *("caching", "--out", str(out), *TINY),
        *("--count-scale", "0.0005", "--concurrency", "8", "--cache-pcts", "10"),
    ]
    invoke(args)
    summary = json.loads((out / "summary.json").read_text())
    for key in ("hdd@10%", "ssd@10%", "lru@10%", "dss@10%"):
        for metric in FIG7_KEYS:
            assert metric in summary[key], (key, metric)
        assert summary[key]["requests_all_phases"] > 0
        # Even on the modelled HDD alone the proxy waits for slow backends.
        assert summary[key]["failures_all_phases"] == 0, key
        # Taken down without the write-back: no device is left mounted.
        cluster = out / "runs" / summary[key]["measured_as"].replace("@", "-").replace("%", "")
        assert summary[key]["down_s"] >= 0
        for device in (cluster / "cluster" / "devices").iterdir():
            assert mount_type(device) is None
    assert summary["missing"] == []
    assert (out / "report.md").read_text().startswith("# Caching")
    assert (out / "fig7.png").exists()
    # Resumable: a rerun measures nothing again.
    before = (out / "runs" / "dss-10" / "entry.json").stat().st_mtime
    invoke(args)
    assert (out / "runs" / "dss-10" / "entry.json").stat().st_mtime == before


@pytest.mark.timeout(300)
def test_traffic_tiny(tmp_path: Path) -> None:
    out = tmp_path / "traffic"
    invoke(["traffic", "--out", str(out), *TINY, "--duration", "3", "--clients", "2"])
    summary = json.loads((out / "summary.json").read_text())
    assert [r["name"] for r in summary["runs"]] == [
        "none", "+Files", "+Pictures", "+Music", "+Video"
    ]  # fmt: skip
    for run in summary["runs"]:
        assert set(run["streams"]) == {"Files", "Pictures", "Music", "Video"}
        assert run["put_mbps"] > 0
    assert "Fig. 10" in (out / "report.md").read_text()
