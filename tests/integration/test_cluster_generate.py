"""`dss deploy generate`: rings, configs and units from an inventory (no servers started)."""

from __future__ import annotations

import configparser
import contextlib
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from getpass import getuser
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from swift.common.ring import RingData

from swift_dss.deploy.deploy_cli import deploy
from swift_dss.deploy.inventory import InventoryError, load_inventory, parse_inventory
from swift_dss.deploy.probes import free_ports, http

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
    assert options("store1")["cooperative_period"] == "1"
    # store4's only device is plain: Swift's own write size and scheduling stay.
    assert "network_chunk_size" not in options("store4")
    assert "cooperative_period" not in options("store4")


def generated_with(tmp_path: Path, change: Callable[[dict], None]) -> Path:
    """The tree generated from the example inventory after CHANGE."""
    raw = yaml.safe_load(EXAMPLE.read_text())
    change(raw)
    (tmp_path / "inv.yaml").write_text(yaml.safe_dump(raw))
    out = tmp_path / "out"
    result = CliRunner().invoke(deploy, ["generate", str(tmp_path / "inv.yaml"), "--out", str(out)])
    assert result.exit_code == 0, result.output
    return out


def test_operator_object_server_options_win(tmp_path: Path) -> None:
    out = generated_with(
        tmp_path, lambda raw: raw["object_server"].update(network_chunk_size=262144)
    )
    conf = ini(out / "nodes" / "store1" / "etc" / "swift" / "object-server.conf")
    assert conf["app:object-server"]["network_chunk_size"] == "262144"


def test_put_timing_joins_the_proxy_and_object_pipelines_only_when_set(
    tmp_path: Path, tree: Path
) -> None:
    def pipelines(root: Path) -> dict[str, list[str]]:
        out = {}
        for node, server in (("proxy1", "proxy"), ("store1", "object"), ("store1", "container")):
            conf = ini(root / "nodes" / node / "etc" / "swift" / f"{server}-server.conf")
            assert conf["filter:put_timing"]["use"] == "egg:swift_dss#put_timing"
            out[server] = conf["pipeline:main"]["pipeline"].split()
        return out

    plain = pipelines(tree)
    assert "put_timing" not in plain["proxy"]
    assert plain["object"] == ["healthcheck", "recon", "object-server"]
    timed = pipelines(generated_with(tmp_path, lambda raw: raw["cluster"].update(put_timing=True)))
    # Past catch_errors (the transaction id), before the controllers; the rest unchanged.
    proxy, at = timed["proxy"], timed["proxy"].index("put_timing")
    assert proxy[:at] == plain["proxy"][:at] and proxy[at + 1 :] == plain["proxy"][at:]
    assert proxy.index("catch_errors") < at < proxy.index("proxy-server")
    assert timed["object"] == ["healthcheck", "recon", "put_timing", "object-server"]
    assert timed["container"] == ["healthcheck", "recon", "put_timing", "container-server"]


def test_warm_tier_setting_reaches_the_mount_command(tmp_path: Path) -> None:
    out = generated_with(tmp_path, lambda raw: raw["tier"].update(warm=True))
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
    assert conf["filter:cache"]["memcache_max_connections"] == "8"  # the inventory's memcache
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
    # Beyond the default 1,024: a descriptor per file the servers have open.
    assert int(tier["Service"]["LimitNOFILE"]) >= 65536
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
    ({"memcache_list": True}, "memcache"),
    ({"put_timing": "yes"}, "cluster.put_timing must be true or false"),
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
    if "put_timing" in change:
        data["cluster"]["put_timing"] = change["put_timing"]
    if "memcache_list" in change:
        data["memcache"] = ["memcache_max_connections", 8]
    with pytest.raises(InventoryError, match=words):
        parse_inventory(data)


# Each is a value Swift or dss-tier would refuse only when a node starts.
BAD_VALUES = [
    (("cluster", "workers"), "x", "cluster.workers must be auto or a whole number"),
    (("cluster", "workers"), [1], "cluster.workers must be a single text value"),
    (("cluster", "proxy_workers"), "-2", "cluster.proxy_workers"),
    (("cluster", "devices_root"), True, "cluster.devices_root must be a single text value"),
    (("cluster", "swift_dir"), "etc/swift", "cluster.swift_dir must be an absolute path"),
    (("cluster", "bin_dir"), -1, "cluster.bin_dir must be an absolute path"),
    (("cluster", "user"), "swift user", "cluster.user 'swift user' is not a user name"),
    (("cluster", "hash_path_suffix"), {"a": 1}, "cluster.hash_path_suffix"),
    (("cluster", "memcache_servers"), ["10.0.0.1"], "'10.0.0.1' is not HOST:PORT"),
    (("cluster", "memcache_servers"), ["h:99999"], "'h:99999' is not HOST:PORT"),
    (("dss", "reserved_classes"), "0-300", "dss: class range '0-300' is not within 0-255"),
    (("dss", "allowed_classes"), "5-3", "dss: class range '5-3'"),
    (("dss", "max_ranges"), "many", "dss: max_ranges must be a whole number, not 'many'"),
    (("tempauth_users",), {"test_x:u": "k"}, "tempauth_users: tempauth user 'test_x:u'"),
    (("tier", "mode"), "fast", "tier: mode 'fast' is not one of"),
    (("tier", "cache_size"), "1.5G", "tier: cache_size '1.5G' is not a size"),
    (("tier", "cache_size"), "auto", "tier: cache_size 'auto'"),
    (("tier", "ssd_model"), "samsung", "unknown SSD model 'samsung'"),
    (("tier", "meta_writes"), "lazy", "tier: meta_writes 'lazy' is not one of sync, buffered"),
    (("tier", "warm"), "maybe", "tier: warm is 'maybe': give true or false"),
    (("tier", "cahce_size"), "1G", "tier: unknown key 'cahce_size'"),
    (("tier", "policy"), "reference.toml", "tier: policy 'reference.toml' must be an absolute"),
    (("storage", 0, "devices", 0, "tier"), {"mode": "x"}, r"storage\[0\].devices\[0\].tier: mode"),
    (("storage", 3, "devices", 0, "tier"), {"mode": "lru"}, "tier settings need a tiered device"),
    (("storage", 0, "devices", 0, "weight"), "heavy", "weight must be a number, not 'heavy'"),
    (("storage", 0, "devices", 0, "weight"), float("nan"), "weight must be a number"),
]


@pytest.mark.parametrize(("path", "value", "words"), BAD_VALUES)
def test_a_value_a_node_would_refuse_is_refused_here(
    path: tuple[str | int, ...], value: object, words: str
) -> None:
    data = yaml.safe_load(EXAMPLE.read_text())
    parent = data
    for key in path[:-1]:
        parent = parent[key]
    parent[path[-1]] = value
    with pytest.raises(InventoryError, match=words):
        parse_inventory(data)


def test_cli_reports_a_bad_inventory_in_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "inv.yaml"
    bad.write_text("proxies: []\nstorage: []\n")
    result = CliRunner().invoke(deploy, ["generate", str(bad), "--out", str(tmp_path / "o")])
    assert result.exit_code == 1
    assert result.output.strip().splitlines() == ["Error: proxies must be a non-empty list"]
    assert not (tmp_path / "o").exists()


# --- the units under systemd's own checker, and the proxy's reload run for real ---------------

VENV_BIN = Path(sys.executable).parent


def generate_with(tmp_path: Path, **cluster: object) -> Path:
    """The example inventory with CLUSTER settings changed, generated into TMP_PATH/out."""
    raw = yaml.safe_load(EXAMPLE.read_text())
    raw["cluster"].update(cluster)
    (tmp_path / "inv.yaml").write_text(yaml.safe_dump(raw))
    out = tmp_path / "out"
    result = CliRunner().invoke(deploy, ["generate", str(tmp_path / "inv.yaml"), "--out", str(out)])
    assert result.exit_code == 0, result.output
    return out


@pytest.mark.skipif(not shutil.which("systemd-analyze"), reason="needs systemd-analyze")
def test_every_generated_unit_verifies_clean(tmp_path: Path) -> None:
    # bin_dir is this environment's, where every command the units run exists (dss-tier is
    # linked there by `make tier`): systemd-analyze checks that each one is executable.
    assert (VENV_BIN / "dss-tier").exists() and (VENV_BIN / "swift-reload").exists()
    out = generate_with(tmp_path, bin_dir=str(VENV_BIN))
    for node in ("proxy1", "store1", "store4"):
        unit_dir = out / "nodes" / node / "etc" / "systemd" / "system"
        units = sorted(p.name for p in unit_dir.iterdir())
        done = subprocess.run(
            ["systemd-analyze", "verify", "--man=no", *units],
            cwd=unit_dir,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert (done.returncode, done.stdout + done.stderr) == (0, ""), node


def test_wsgi_servers_reload_and_the_other_daemons_do_not(tree: Path) -> None:
    units = tree / "nodes" / "store1" / "etc" / "systemd" / "system"
    for server in ("account", "container", "object"):
        service = ini(units / f"swift-{server}-server.service")["Service"]
        assert service["ExecReload"] == "/usr/local/bin/swift-reload $MAINPID"
    assert "ExecReload" not in ini(units / "swift-object-replicator.service")["Service"]
    proxy = tree / "nodes" / "proxy1" / "etc" / "systemd" / "system"
    service = ini(proxy / "swift-proxy-server.service")["Service"]
    assert service["ExecReload"] == "/usr/local/bin/swift-reload $MAINPID"


def test_proxy_unit_commands_start_and_reload_a_real_proxy(tmp_path: Path) -> None:
    """ExecStart, then ExecReload with $MAINPID as systemd would run them: the manager
    process keeps its pid and the proxy answers before and after."""
    port = free_ports(1)[0]
    swift_dir = tmp_path / "etc-swift"
    raw = yaml.safe_load(EXAMPLE.read_text())
    raw["cluster"].update(bin_dir=str(VENV_BIN), swift_dir=str(swift_dir), user=getuser())
    raw["cluster"]["workers"] = 1
    raw["proxies"] = [{"name": "proxy1", "ip": "127.0.0.1", "port": port}]
    (tmp_path / "inv.yaml").write_text(yaml.safe_dump(raw))
    out = tmp_path / "out"
    result = CliRunner().invoke(deploy, ["generate", str(tmp_path / "inv.yaml"), "--out", str(out)])
    assert result.exit_code == 0, result.output
    node = out / "nodes" / "proxy1"
    shutil.copytree(node / str(swift_dir).lstrip("/"), swift_dir)
    service = ini(node / "etc" / "systemd" / "system" / "swift-proxy-server.service")["Service"]
    env = {**os.environ, "SWIFT_CONF_FILE": str(swift_dir / "swift.conf")}
    log = (tmp_path / "proxy.log").open("w")
    proc = subprocess.Popen(
        shlex.split(service["ExecStart"]),
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        url = f"http://127.0.0.1:{port}/info"
        assert wait_for(lambda: http(url)[0] == 200), (tmp_path / "proxy.log").read_text()
        reload = shlex.split(service["ExecReload"].replace("$MAINPID", str(proc.pid)))
        done = subprocess.run(reload, env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stdout + done.stderr
        assert "Reloaded swift-proxy-server" in done.stdout
        assert proc.poll() is None
        assert http(url)[0] == 200
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=60)
        log.close()


def wait_for(check: Callable[[], bool], tries: int = 300) -> bool:
    for _ in range(tries):
        if check():
            return True
        time.sleep(0.1)
    return False
