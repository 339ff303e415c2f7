"""`dss experiment caching|traffic` end to end at a tiny scale: every configuration gets
its own cluster, and summary.json and report.md come out with the documented keys. The
paper's ratios are results, not tested here."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from swift_dss.deploy.netns import Network
from swift_dss.deploy.saio import mount_type
from swift_dss.experiment.cli import experiment
from swift_dss.experiment.summary import FIG7_KEYS
from swift_dss.testbed import congestion

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(shutil.which("memcached") is None, reason="needs memcached"),
]

TINY = [
    *("--testbed", "saio", "--devices", "1", "--replicas", "1", "--workers", "2"),
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
        slug = summary[key]["measured_as"].replace("@", "-").replace("%", "")
        cluster = out / "runs" / slug / "r1"
        assert summary[key]["down_s"] >= 0
        for device in (cluster / "cluster" / "devices").iterdir():
            assert mount_type(device) is None
        # One run: its figures' intervals come from its own requests.
        assert summary[key]["ci_from"] == "requests"
        low, high = summary[key]["ci"]["get_ttfb_ms"]
        assert low <= summary[key]["get_ttfb_ms"] <= high
    ratio = next(h for h in summary["headlines"] if h["what"] == "dss@10% / lru@10% get_mbps")
    assert ratio["ci"][0] <= ratio["measured"] <= ratio["ci"][1]
    assert summary["missing"] == []
    report = (out / "report.md").read_text()
    assert report.startswith("# Caching") and "bootstrap over the run's own requests" in report
    assert (out / "fig7.png").exists()
    # What the experiment writes is what `compare` reads.
    compared = tmp_path / "compared"
    invoke(["compare", str(out), str(out), "--label", "a", "--label", "b", "--out", str(compared)])
    assert any(compared.iterdir())
    # Resumable: a rerun measures nothing again.
    before = (out / "runs" / "dss-10" / "r1" / "entry.json").stat().st_mtime
    invoke(args)
    assert (out / "runs" / "dss-10" / "r1" / "entry.json").stat().st_mtime == before


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


#: The emulated testbed at its smallest: two storage nodes, one replica, dilated twice.
TESTBED_TINY = [
    *("--testbed", "netns", "--dilation", "2", "--devices", "2", "--replicas", "1"),
    *("--size-scale", "0.002", "--containers", "2"),
]


@pytest.mark.timeout(900)
def test_caching_on_the_testbed_runs_on_the_client_node_with_repeats(tmp_path: Path) -> None:
    out = tmp_path / "caching"
    args = [
        *("caching", "--out", str(out), *TESTBED_TINY, "--repeats", "2"),
        *("--count-scale", "0.0005", "--concurrency", "4", "--cache-pcts", "10"),
        *("--only", "dss@10%,lru@10%", "--variants", "none"),
        # A full 3 ms queue drops a SYN or SYN-ACK now and then, and TCP sends it again
        # after 1 s: with the paper's 0.5 s (1 s at K = 2) the proxy gives up on the node,
        # and one replica leaves it no other. 2 s (4 s here) outlasts two retransmissions.
        *("--conn-timeout", "2"),
    ]
    invoke(args)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["setup"]["testbed"]["kind"] == "netns"
    assert summary["setup"]["testbed"]["dilation"] == 2
    assert summary["setup"]["testbed"]["settings"]["conn_timeout"] == 2
    for key in ("dss@10%", "lru@10%"):
        e = summary[key]
        assert len(e["repeats"]) == 2 and e["failures_all_phases"] == 0, key
        assert e["ci"]["put_mbps"][0] <= e["put_mbps"] <= e["ci"]["put_mbps"][1]
        for rep in (1, 2):
            run = json.loads(
                (
                    out / "runs" / key.replace("@", "-").rstrip("%") / f"r{rep}" / "entry.json"
                ).read_text()
            )
            # Read at the testbed's speed: the measured phase took K times as long.
            put = next(p for p in run["phases"] if p["name"] == "put")
            assert put["measured_s"] == pytest.approx(2 * put["duration_s"], rel=0.01)
            u = run["utilisation"]["put"]
            # The load came from the client node (sampled as a node of its own; a tiny
            # phase may use less than one clock tick of its CPU), over its link.
            assert "client" in u["node_cpu_cores"]
            assert set(u["links"]) == {"client", "proxy", "s1", "s2"}
            assert u["links"]["client"] > 0 and u["links"]["proxy"] > 0
            # Every node's TCP counters and its link's drops over the phase, read in its
            # namespace, and the congestion control the nodes ran.
            assert set(u["tcp"]) == {"client", "proxy", "s1", "s2"}
            for counters in u["tcp"].values():
                assert set(counters) == {"retransmits", "timeouts", "drops_out", "drops_in"}
                assert all(isinstance(v, int) and v >= 0 for v in counters.values())
            assert run["tcp"] in congestion.available()
            assert isinstance(run["cpu_bound_phases"], list)
    ratio = next(h for h in summary["headlines"] if h["what"] == "dss@10% / lru@10% put_mbps")
    assert ratio["ci"] is not None and len(ratio["ci"]) == 2
    report = (out / "report.md").read_text()
    assert "Time dilation K = 2" in report and "What was busy" in report
    assert Network.for_dir(out / "runs" / "dss-10" / "r1" / "cluster").namespaces() == []


@pytest.mark.timeout(900)
def test_traffic_on_the_testbed(tmp_path: Path) -> None:
    out = tmp_path / "traffic"
    args = ["traffic", "--out", str(out), *TESTBED_TINY, "--duration", "3", "--clients", "2"]
    invoke(args)
    summary = json.loads((out / "summary.json").read_text())
    assert [r["name"] for r in summary["runs"]] == [
        "none", "+Files", "+Pictures", "+Music", "+Video"
    ]  # fmt: skip
    for run in summary["runs"]:
        assert run["put_mbps"] > 0 and run["testbed"]["dilation"] == 2
        assert run["utilisation"]["run"]["links"]["client"] > 0
        # Sampled while the streams ran: the PUT phase alone moved bytes over the links.
        assert run["utilisation"]["put"]["links"]["client"] > 0
        assert 0 < run["utilisation"]["put"]["seconds"] < run["utilisation"]["run"]["seconds"]
        # Each Files PUT the proxy answered is joined with its one replica's steps.
        files = run["put_waits"]["files"]
        assert files["n"] > 0 and files["replica_1st"] <= files["proxy"]
        assert "replica_2nd" not in files
    assert "Files PUTs step by step" in (out / "report.md").read_text()


@pytest.mark.timeout(900)
def test_sweep_through_a_long_client_link_pays_its_rtt(tmp_path: Path) -> None:
    out = tmp_path / "sweep"
    invoke(
        [
            *("sweep", "--out", str(out), "--case", "near:1gbit:0.28", "--case", "far:1gbit:60"),
            *("--parallelism", "1,4", "--sizes", "1KiB,256KiB", "--repetitions", "1"),
            *("--budget", "1MiB", "--max-requests", "20", "--max-failures", "0"),
        ]
    )
    summary = json.loads((out / "summary.json").read_text())
    assert [c["name"] for c in summary["cases"]] == ["near", "far"]
    rows = {
        case: {(r["op"], r["size"], r["parallelism"]): r for r in
               json.loads((out / case / "results.json").read_text())["rows"]}
        for case in ("near", "far")
    }  # fmt: skip
    for op in ("put", "get"):
        near, far = rows["near"][(op, 1024, 1)], rows["far"][(op, 1024, 1)]
        assert near["failures"] == far["failures"] == 0
        # Every request of one connection crosses the 60 ms round trip at least once.
        assert far["lat_mean_ms"] >= 60 and far["lat_mean_ms"] > near["lat_mean_ms"]
    report = (out / "report.md").read_text()
    assert (out / "peak.png").exists() and "Fig. 10" in report
    # Of the study's shapes, this short grid measures only 1 KiB's gain from parallelism.
    shapes = {r["what"]: r["ours"] for r in summary["study"]["shapes"] if r["ours"] is not None}
    assert summary["study"]["measured"] == 2 and "The study's shapes" in report
    for op in ("put", "get"):
        near = rows["near"]
        gain = (
            max(near[(op, 1024, 4)]["mbps"], near[(op, 1024, 1)]["mbps"])
            / near[(op, 1024, 1)]["mbps"]
        )
        assert shapes[f"1 KiB {op.upper()}: peak bandwidth over parallelism 1's"] == round(gain, 3)
