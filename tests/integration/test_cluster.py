"""The local multi-node cluster: one proxy, four storage nodes in network namespaces, each
node's device a dss-tier mount, three replicas. Classes survive a device wipe and
replication (on the node, in the tier and in the object metadata); no acknowledged object is
lost when a storage node or its tier daemon is killed under load, nor when a node's SSD
cache is lost; bad input never gets a 5xx or reaches an object server. Short versions: `dss
reliability run` runs the long ones. The tests share one cluster and run in file order; the
last one tears it down (the fixture does, whatever happened).
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from swift_dss.deploy.bad_inputs import BadInput
from swift_dss.deploy.deploy_cli import deploy
from swift_dss.deploy.local_cluster import LocalCluster
from swift_dss.deploy.netns import Network
from swift_dss.deploy.saio import mount_type, read_proc
from swift_dss.dssio.detect import TIER_FSTYPE
from swift_dss.mountinfo import read as read_mountinfo
from swift_dss.reliability.abuse import abuse
from swift_dss.reliability.cli import reliability
from swift_dss.reliability.client import ClusterClient as Client

from .test_bad_input import CASES

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def cluster_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    path = tmp_path_factory.mktemp("cluster") / "c"
    result = CliRunner().invoke(deploy, ["local-cluster", "up", "--dir", str(path)])
    try:
        assert result.exit_code == 0, result.output
        yield path
    finally:
        if (path / "local-cluster.json").exists():
            LocalCluster.load(path).down()
        else:
            Network.for_dir(path).remove()  # a failed `up` leaves nothing, but make sure


@pytest.fixture(scope="module")
def cluster(cluster_dir: Path) -> LocalCluster:
    return LocalCluster.load(cluster_dir)


@pytest.fixture(scope="module")
def client(cluster: LocalCluster) -> Client:
    return Client(cluster)


def in_namespace(cluster: LocalCluster, node: str, *cmd: str) -> str:
    prefix = cluster.net.exec_prefix(int(node[1:]))
    return subprocess.run([*prefix, *cmd], capture_output=True, text=True, check=True).stdout


def test_each_storage_node_has_its_own_namespace_and_address(cluster: LocalCluster) -> None:
    status = cluster.status()
    assert status["up"]
    assert len(status["namespaces"]) == 4
    for node in cluster.node_names:
        ip = cluster.node_ip(node)
        assert ip.startswith("198.18.0.")
        listening = in_namespace(cluster, node, "ss", "-Htln")
        # The node's three servers listen on its own address, in its namespace only.
        for port in (6200, 6201, 6202):
            assert f"{ip}:{port}" in listening
        assert (
            f"{ip}:6200"
            not in subprocess.run(
                ["ss", "-Htln"], capture_output=True, text=True, check=True
            ).stdout
        )
        conf = (cluster.node_dir(node) / "etc" / "object-server.conf").read_text()
        assert "sync_method = ssync" in conf and "use = egg:swift_dss#object" in conf
        assert "mount_check = true" in conf
        # Its object server gets the settings for tier mounts (docs/configuration.md).
        assert "cooperative_period = 1" in conf and "network_chunk_size = 1048576" in conf
        # The node's device is a dss-tier mount, seen by its object server too (which
        # runs in a mount namespace of its own).
        assert mount_type(cluster.device_path(node)) == TIER_FSTYPE
        assert status["nodes"][node]["tier"]["mounted"] and status["nodes"][node]["tier"]["alive"]
        server = status["processes"][f"{node}/object-server"]["pid"]
        seen = {m.mount_point: m.fstype for m in read_mountinfo(f"/proc/{server}/mountinfo")}
        assert seen.get(str(cluster.device_path(node))) == TIER_FSTYPE
    result = CliRunner().invoke(deploy, ["local-cluster", "status", "--dir", str(cluster.dir)])
    assert result.exit_code == 0, result.output
    assert "s4   198.18.0.14" in result.output
    assert result.output.count("mounted") == 4


def test_policy_and_bad_input_never_5xx_never_reach_object_servers(
    cluster: LocalCluster, client: Client
) -> None:
    imported = [BadInput(name, m, h, body) for name, m, h, body, _, _ in CASES]
    result = abuse(cluster, client, imported, fuzz=150, seed=11)
    assert result["fixed_inputs"] >= 50 + len(CASES)
    assert result["bad_inputs_5xx"] == []
    assert result["no_answer"] == []
    assert result["fixed_inputs_accepted"] == []
    assert result["refused_reaching_object_servers"] == []
    assert result["refused_but_stored"] == []
    assert result["reclassification_changed_object"] == []
    by_name = {r["name"]: r["status"] for r in result["results"]}
    for name, _, _, _, status, _ in CASES:
        assert by_name[name] == status, name
    # The highest-priority (reserved) and disallowed classes, by every channel: 403.
    policy = [r for r in result["results"] if r["name"].startswith("policy: ")]
    assert len(policy) >= 40
    assert {r["status"] for r in policy} == {403}
    # The fuzzer's inputs also reached the proxy, and valid mutations were served normally.
    assert sum(1 for r in result["results"] if r["name"].startswith("fuzz ")) == 150


@pytest.fixture(scope="module")
def run(cluster: LocalCluster, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """`dss reliability run` on the module's cluster, short: every scenario once (device
    wipe, node kill, tier kill, SSD loss, abuse, soak), each test below checks one."""
    out = tmp_path_factory.mktemp("reliability")
    tier_pids = {n: cluster.tier_pid(n) for n in cluster.node_names}
    args = ["run", "--out", str(out), "--cluster", str(cluster.dir), "--duration", "6"]
    result = CliRunner().invoke(reliability, [*args, "--fuzz", "40", "--soak-duration", "20"])
    report = json.loads((out / "reliability.json").read_text())
    return {
        "exit_code": result.exit_code,
        "output": result.output,
        "report": report,
        "tier_pids_before": tier_pids,
    }


def test_reliability_run_writes_the_figures(run: dict[str, Any]) -> None:
    assert run["exit_code"] == 0, run["output"]
    report = run["report"]
    for key in (
        "objects_lost",
        "objects_corrupt",
        "bad_inputs_5xx",
        "failed_gets_of_acknowledged_objects",
        "stale_reads_after_ssd_loss",
        "replicas_with_wrong_classes",
        "soak_failures",
        "soak_tier_memory_growing",
    ):
        assert report[key] == 0, key
    assert report["ssd_loss_reported"] is True
    assert report["objects_acknowledged"] > 48
    assert report["faults_injected"] == 4
    assert report["bad_inputs_tried"] >= 90
    assert report["not_run"] == {}
    assert "objects_acknowledged" in run["output"]


def test_classes_survive_a_device_wipe_and_replication(run: dict[str, Any]) -> None:
    result = run["report"]["scenarios"]["device_wipe"]
    assert result["problems_before_wipe"] == []
    # The wipe really removed s2's replicas, and replication rebuilt every one of them.
    assert result["replicas_on_victim"] > 0
    assert result["replicas_on_victim_after_wipe"] == 0
    assert result["replica_problems"] == []
    # The rebuilt replicas arrived through ssync and the object server wrote every byte
    # through dssio with its class (s2's own record log).
    assert result["rebuilt_with_wrong_classes"] == []
    assert result["proxy_problems"] == []
    # The victim's tier took in bytes of every class the rebuilt replicas hold, and each
    # block of theirs it caches carries the object's class for it.
    tier = result["tier"]
    assert tier["classes_of_rebuilt_replicas"]
    assert tier["classes_missing_from_stats"] == []
    assert tier["cached_blocks_checked"] > 0
    assert tier["cached_blocks_with_wrong_class"] == []


def test_storage_node_killed_under_load_loses_nothing(
    cluster: LocalCluster, run: dict[str, Any]
) -> None:
    result = run["report"]["scenarios"]["node_kill_under_load"]
    assert result["victim"] == "s3"
    assert result["processes_killed"] >= 5
    assert 0 < result["acknowledged_before_kill"] < result["objects_acknowledged"]
    assert result["gets_during_load"] > 0
    assert result["failed_gets_of_acknowledged_objects"] == []
    assert result["problems_while_node_down"] == []
    assert result["problems_after_repair"] == []
    assert result["replica_problems_after_repair"] == []
    assert LocalCluster.load(cluster.dir).is_up()


def test_tier_daemon_killed_under_load_loses_nothing(
    cluster: LocalCluster, run: dict[str, Any]
) -> None:
    result = run["report"]["scenarios"]["tier_kill_under_load"]
    assert result["victim"] == "s1"
    assert result["dirty_blocks_at_kill"] > 0
    # The restarted daemon found the killed one's dirty blocks in its journal.
    assert len(result["journal_replay"]) == 1 and "restored" in result["journal_replay"][0]
    assert 0 < result["acknowledged_before_kill"] < result["objects_acknowledged"]
    assert result["acknowledged_while_tier_down"] > 0
    assert result["failed_gets_of_acknowledged_objects"] == []
    assert result["problems_after_restart"] == []
    assert result["problems_after_repair"] == []
    assert result["replica_problems_after_repair"] == []
    # The cluster's state file records the new daemon.
    reloaded = LocalCluster.load(cluster.dir)
    assert reloaded.tier_pid("s1") != run["tier_pids_before"]["s1"]
    assert reloaded.tier_mounted("s1")


def test_ssd_cache_loss_is_reported_never_served_and_repaired(run: dict[str, Any]) -> None:
    result = run["report"]["scenarios"]["ssd_cache_loss"]
    assert result["dirty_blocks_at_kill"] > 0 and result["ssd_files_wiped"] > 0
    # The tier said so when it mounted and says so in its stats.
    assert len(result["tier_reported"]) == 1
    assert result["loss_events_in_stats"] == 1
    assert result["object_files_set_aside"] > 0
    # The victim held the objects' only cached copies: it answers 404, never stale bytes.
    assert result["replicas_on_victim"] > 0
    assert result["replicas_missing_on_victim_before_repair"] == result["replicas_on_victim"]
    assert result["stale_reads"] == []
    assert result["failed_gets_of_acknowledged_objects"] == []
    # Replication put every replica back, byte for byte.
    assert result["partitions_rehashed"] > 0
    assert result["problems_after_repair"] == []
    assert result["replica_problems_after_repair"] == []


def test_soak_after_the_faults_serves_everything(run: dict[str, Any]) -> None:
    soak = run["report"]["scenarios"]["soak"]
    # The paper's workload on the repaired cluster: every request answered 2xx, every GET
    # verified byte for byte.
    assert soak["requests"] > 0 and soak["gets_verified"] > 0
    assert soak["failures"] == 0, soak["failures_by_phase_and_op"]
    # Every tier daemon and server was sampled throughout.
    assert soak["rss_samples"] >= 2
    assert {"s1/dss-tier", "s4/dss-tier", "s4/object-server"} <= set(soak["rss_series"][0])
    assert all(sample["s1/dss-tier"] > 0 for sample in soak["rss_series"])


def test_a_second_cluster_is_refused_and_leaves_nothing(
    cluster: LocalCluster, tmp_path: Path
) -> None:
    other = tmp_path / "other"
    result = CliRunner().invoke(deploy, ["local-cluster", "up", "--dir", str(other)])
    assert result.exit_code == 1
    assert "198.18.0.0/24 is already in use" in result.output
    assert Network.for_dir(other).namespaces() == []
    assert not Network.for_dir(other).bridge_exists()
    assert not (other / "local-cluster.json").exists()
    # Reloaded: the reliability run restarted a node from the state file.
    assert LocalCluster.load(cluster.dir).is_up()


def test_down_removes_namespaces_mounts_and_processes(cluster: LocalCluster) -> None:
    status = LocalCluster.load(cluster.dir).status()
    pids = [p["pid"] for p in status["processes"].values()]
    mounts = status["mounts"]
    result = CliRunner().invoke(deploy, ["local-cluster", "down", "--dir", str(cluster.dir)])
    assert result.exit_code == 0, result.output
    assert cluster.net.namespaces() == []
    assert not cluster.net.bridge_exists()
    assert mounts and not any(os.path.ismount(m) for m in mounts)
    assert all(read_proc(pid) is None or read_proc(pid)[0] == "Z" for pid in pids)
    assert not (cluster.dir / "local-cluster.json").exists()
