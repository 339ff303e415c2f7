"""The local multi-node cluster: one proxy, four storage nodes in network namespaces, three
replicas. Classes survive a device wipe and replication, no acknowledged object is lost when
a storage node is killed under load, and bad input never gets a 5xx or reaches an object
server. The tests share one cluster and run in file order; the last one tears it down.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from swift_dss.deploy.bad_inputs import BadInput
from swift_dss.deploy.deploy_cli import deploy
from swift_dss.deploy.local_cluster import LocalCluster
from swift_dss.deploy.netns import Network
from swift_dss.deploy.reliability import (
    Client,
    abuse,
    classes_survive_wipe,
    node_killed_under_load,
    reliability,
)
from swift_dss.deploy.saio import read_proc

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
    result = CliRunner().invoke(deploy, ["local-cluster", "status", "--dir", str(cluster.dir)])
    assert result.exit_code == 0, result.output
    assert "s4   198.18.0.14" in result.output


def test_classes_survive_a_device_wipe_and_replication(
    cluster: LocalCluster, client: Client
) -> None:
    result = classes_survive_wipe(cluster, client, objects=24, victim="s2")
    assert result["problems_before_wipe"] == []
    # The wipe really removed s2's replicas, and replication rebuilt every one of them.
    assert result["replicas_on_victim"] > 0
    assert result["replicas_on_victim_after_wipe"] == 0
    assert result["replica_problems"] == []
    # The rebuilt replicas arrived through ssync and the object server wrote every byte
    # through dssio with its class (s2's own record log).
    assert result["rebuilt_with_wrong_classes"] == []
    assert result["proxy_problems"] == []


def test_storage_node_killed_under_load_loses_nothing(
    cluster: LocalCluster, client: Client
) -> None:
    result = node_killed_under_load(cluster, client, duration=12, victim="s3")
    assert result["processes_killed"] >= 4
    assert 0 < result["acknowledged_before_kill"] < result["objects_acknowledged"]
    assert result["gets_during_load"] > 0
    assert result["failed_gets_of_acknowledged_objects"] == []
    assert result["problems_while_node_down"] == []
    assert result["problems_after_repair"] == []
    assert result["replica_problems_after_repair"] == []
    assert cluster.is_up()


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


def test_reliability_run_writes_the_figures(cluster: LocalCluster, tmp_path: Path) -> None:
    out = tmp_path / "rel"
    args = ["run", "--out", str(out), "--cluster", str(cluster.dir), "--duration", "6"]
    result = CliRunner().invoke(reliability, [*args, "--fuzz", "40"])
    assert result.exit_code == 0, result.output
    report = json.loads((out / "reliability.json").read_text())
    for key in (
        "objects_lost",
        "objects_corrupt",
        "bad_inputs_5xx",
        "failed_gets_of_acknowledged_objects",
    ):
        assert report[key] == 0, key
    assert report["objects_acknowledged"] > 24
    assert report["faults_injected"] == 2
    assert report["bad_inputs_tried"] >= 90
    assert set(report["not_run"]) >= {"tier_daemon_kill", "ssd_cache_loss", "soak"}


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
