"""`dss deploy generate`: rings, configs and units from an inventory (no servers started)."""

from __future__ import annotations

import configparser
import json
import shlex
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from swift.common.ring import RingData

from swift_dss.deploy.deploy_cli import deploy
from swift_dss.deploy.inventory import InventoryError, load_inventory, parse_inventory

EXAMPLE = Path(__file__).parents[2] / "swift_dss" / "deploy" / "inventory.example.yaml"


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("gen") / "out"
    result = CliRunner().invoke(deploy, ["generate", str(EXAMPLE), "--out", str(out)])
    assert result.exit_code == 0, result.output
    return out


def ini(path: Path) -> configparser.ConfigParser:
    parser = configparser.ConfigParser(interpolation=None)
    parser.read_string(path.read_text())
    return parser


def test_rings_place_three_replicas_in_distinct_zones(tree: Path) -> None:
    inv = load_inventory(EXAMPLE)
    for ring_name, port in (("object", 6200), ("container", 6201), ("account", 6202)):
        ring = RingData.load(str(tree / "rings" / f"{ring_name}.ring.gz"))
        assert len(ring._replica2part2dev_id) == 3
        devs = [d for d in ring.devs if d]
        assert {(d["ip"], d["device"]) for d in devs} == {(n.ip, d.name) for n, d in inv.devices}
        assert {d["port"] for d in devs} == {port}
        for part in range(0, 2**inv.cluster.part_power, 97):
            zones = {ring.devs[row[part]]["zone"] for row in ring._replica2part2dev_id}
            assert len(zones) == 3, part


def test_storage_node_configs(tree: Path) -> None:
    etc = tree / "nodes" / "store1" / "etc" / "swift"
    obj = ini(etc / "object-server.conf")
    assert obj["app:object-server"]["use"] == "egg:swift_dss#object"
    assert obj["object-replicator"]["sync_method"] == "ssync"
    assert obj["object-replicator"]["concurrency"] == "2"
    assert obj["DEFAULT"]["bind_ip"] == "10.20.1.11"
    assert obj["DEFAULT"]["devices"] == "/srv/node"
    for kind, port in (("account", "6202"), ("container", "6201")):
        conf = ini(etc / f"{kind}-server.conf")
        assert conf["DEFAULT"]["bind_port"] == port
        assert conf[f"app:{kind}-server"]["use"] == f"egg:swift#{kind}"
    assert ini(etc / "swift.conf")["swift-hash"]["swift_hash_path_suffix"] == "0e6f3a9b7c2d4158"
    assert (etc / "object.ring.gz").read_bytes() == (tree / "rings/object.ring.gz").read_bytes()
    rsyncd = (tree / "nodes" / "store1" / "etc" / "rsyncd.conf").read_text()
    assert "[account]" in rsyncd and "[container]" in rsyncd and "[object]" not in rsyncd


def test_object_servers_of_tiered_nodes_write_in_large_pieces(tree: Path) -> None:
    def options(node: str) -> configparser.SectionProxy:
        return ini(tree / "nodes" / node / "etc" / "swift" / "object-server.conf")[
            "app:object-server"
        ]

    assert options("store1")["network_chunk_size"] == "1048576"
    # store4's only device is plain: Swift's own write size stays.
    assert "network_chunk_size" not in options("store4")


def test_operator_object_server_options_win(tmp_path: Path) -> None:
    raw = yaml.safe_load(EXAMPLE.read_text())
    raw["object_server"]["network_chunk_size"] = 262144
    (tmp_path / "inv.yaml").write_text(yaml.safe_dump(raw))
    out = tmp_path / "out"
    result = CliRunner().invoke(deploy, ["generate", str(tmp_path / "inv.yaml"), "--out", str(out)])
    assert result.exit_code == 0, result.output
    conf = ini(out / "nodes" / "store1" / "etc" / "swift" / "object-server.conf")
    assert conf["app:object-server"]["network_chunk_size"] == "262144"


def test_warm_tier_setting_reaches_the_mount_command(tmp_path: Path) -> None:
    raw = yaml.safe_load(EXAMPLE.read_text())
    raw["tier"]["warm"] = True
    (tmp_path / "inv.yaml").write_text(yaml.safe_dump(raw))
    out = tmp_path / "out"
    result = CliRunner().invoke(deploy, ["generate", str(tmp_path / "inv.yaml"), "--out", str(out)])
    assert result.exit_code == 0, result.output
    units = out / "nodes" / "store1" / "etc" / "systemd" / "system"
    argv = shlex.split(ini(units / "dss-tier-d1.service")["Service"]["ExecStart"])
    assert argv[-2:] == ["--warm", "/srv/node/d1"]


def test_proxy_config_has_dss_and_the_policy(tree: Path) -> None:
    conf = ini(tree / "nodes" / "proxy1" / "etc" / "swift" / "proxy-server.conf")
    pipeline = conf["pipeline:main"]["pipeline"].split()
    assert pipeline.index("tempauth") < pipeline.index("dss") < pipeline.index("proxy-server")
    assert conf["filter:dss"]["use"] == "egg:swift_dss#dss"
    assert conf["filter:dss"]["reserved_classes"] == "1-10"
    assert conf["filter:cache"]["memcache_servers"] == "10.20.0.10:11211"
    assert conf["filter:tempauth"]["user_test_tester"] == "testing .admin"


def test_tier_units_follow_the_tier_command_line(tree: Path) -> None:
    units = tree / "nodes" / "store1" / "etc" / "systemd" / "system"
    tier = ini(units / "dss-tier-d2.service")
    argv = shlex.split(tier["Service"]["ExecStart"])
    assert argv == [
        "/usr/local/bin/dss-tier",
        "mount",
        "--ssd",
        "/mnt/ssd0/d2",
        "--hdd",
        "/mnt/hdd1/d2",
        "--cache-size",
        "64G",
        "--policy",
        "/etc/swift-dss/policies/reference.toml",
        "--mode",
        "dss",
        "/srv/node/d2",
    ]
    assert tier["Service"]["ExecStop"] == "/usr/local/bin/dss-tier umount /srv/node/d2"
    server = ini(units / "swift-object-server.service")
    assert server["Unit"]["Requires"].split() == ["dss-tier-d1.service", "dss-tier-d2.service"]
    assert "/etc/swift/object-server.conf" in server["Service"]["ExecStart"]
    target = ini(units / "swift-dss.target")["Unit"]["Wants"].split()
    assert "dss-tier-d1.service" in target and "swift-object-replicator.service" in target
    # A node whose only device is plain gets no tier unit and no dependency on one.
    plain = tree / "nodes" / "store4" / "etc" / "systemd" / "system"
    assert not list(plain.glob("dss-tier-*"))
    assert "Requires" not in ini(plain / "swift-object-server.service")["Unit"]


def test_manifest_lists_every_node(tree: Path) -> None:
    manifest = json.loads((tree / "manifest.json").read_text())
    assert set(manifest["nodes"]) == {"proxy1", "store1", "store2", "store3", "store4"}
    assert manifest["nodes"]["store1"]["devices"]["d1"]["mountpoint"] == "/srv/node/d1"
    assert "/etc/swift/object-server.conf" in manifest["nodes"]["store2"]["files"]


BAD_INVENTORIES = [
    ({"replicas": 5}, "5 replicas need"),
    ({"zones_same": True}, "replicas need as many zones"),
    ({"dup_ip": True}, "used by two nodes"),
    ({"half_tier": True}, "both ssd and hdd"),
    ({"no_hash": True}, "hash_path_prefix"),
    ({"unknown": True}, "unknown key"),
]


@pytest.mark.parametrize(("change", "words"), BAD_INVENTORIES)
def test_bad_inventory_is_refused_with_a_reason(change: dict, words: str) -> None:
    data = yaml.safe_load(EXAMPLE.read_text())
    if "replicas" in change:
        data["cluster"]["replicas"] = change["replicas"]
    if "zones_same" in change:
        for node in data["storage"]:
            node["zone"] = 1
    if "dup_ip" in change:
        data["storage"][1]["ip"] = data["storage"][0]["ip"]
    if "half_tier" in change:
        del data["storage"][0]["devices"][0]["hdd"]
    if "no_hash" in change:
        del data["cluster"]["hash_path_prefix"], data["cluster"]["hash_path_suffix"]
    if "unknown" in change:
        data["storage"][0]["rack"] = 7
    with pytest.raises(InventoryError, match=words):
        parse_inventory(data)


def test_cli_reports_a_bad_inventory_in_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "inv.yaml"
    bad.write_text("proxies: []\nstorage: []\n")
    result = CliRunner().invoke(deploy, ["generate", str(bad), "--out", str(tmp_path / "o")])
    assert result.exit_code == 1
    assert result.output.strip().splitlines() == ["Error: proxies must be a non-empty list"]
    assert not (tmp_path / "o").exists()
