"""A multi-node swift-dss cluster on one machine: one proxy and N storage nodes, each
storage node in a network namespace of its own with its own address.

    root namespace: memcached 127.0.0.1:M, proxy 127.0.0.1:P (the tests' endpoint),
                    bridge dssbr-TAG 198.18.0.1/24
    namespace dss-TAG-sN: eth0 198.18.0.(10+N); account :6202, container :6201,
                    object :6200 (egg:swift_dss#object), object replicator (ssync),
                    rsync daemon :873 (account and container database replication)
    dss-tier daemons: one per storage node's device, in the root namespace (a mount is
                    not tied to a network namespace); their mounts reach the servers'
                    mount namespaces because each node's devices/ is a shared mount

The configs are those `dss deploy generate` writes for a real cluster, from an inventory
built here, with directories of the cluster's own instead of /etc/swift and /srv/node.

Layout of DIR:
    local-cluster.json   what runs: config, processes, mounts, network tag
    rings/               the rings (builders too)
    proxy/etc/           swift.conf, proxy-server.conf
    nodes/sN/etc/        swift.conf, *-server.conf, rings
    nodes/sN/devices/    a shared tmpfs holding the node's one device, d1: a dss-tier
                         mount (tier modes), or a plain directory (tier mode none)
    nodes/sN/backing/    tier modes: a tmpfs with d1's emulated SSD and HDD (d1/ssd, d1/hdd)
    nodes/sN/log/        one log per process, Swift's access log included
    nodes/sN/dssio-record.jsonl   every object I/O with its class (dssio_backend = record)

With `testbed` settings (the paper's testbed, docs/deployment.md) the proxy and memcached
run in a namespace of their own (dss-TAG-proxy, 198.18.0.2), a client namespace
(dss-TAG-client, 198.18.0.3) is there for the load, and every link is shaped with tc.

The settings are `LocalClusterConfig` (local_cluster_config.py); the nodes' devices and
their tiers are the base class `NodeDevices` (local_devices.py).
"""

from __future__ import annotations

import dataclasses
import hashlib
import secrets
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from swift_dss.deploy import swiftrun
from swift_dss.deploy.devices import release_devices, wait_tier_mounted
from swift_dss.deploy.generate import (
    NodePaths,
    build_cluster_rings,
    proxy_configs,
    storage_configs,
)
from swift_dss.deploy.inventory import Cluster, Device, Inventory, ProxyNode, StorageNode
from swift_dss.deploy.local_cluster_config import ClusterError, LocalClusterConfig
from swift_dss.deploy.local_devices import DEVICE, NodeDevices
from swift_dss.deploy.local_testbed import TestbedNodes
from swift_dss.deploy.netns import NetnsError, Network
from swift_dss.deploy.object_tuning import object_options
from swift_dss.deploy.probes import free_ports, http, rss_kib, tcp_answers
from swift_dss.deploy.processes import Check, log_tail
from swift_dss.deploy.rings import PART_POWER
from swift_dss.deploy.swift_config import current_user
from swift_dss.testbed import congestion, shaping, tcp_timers
from swift_dss.testbed.settings import ROLES

STATE_FILE = "local-cluster.json"
STORAGE_SERVERS = ("account", "container", "object")
RSYNC_PORT = 873


class LocalCluster(NodeDevices, TestbedNodes):
    state_file = STATE_FILE
    config_type = LocalClusterConfig
    kind = "local cluster"
    state_keys = {
        "tag": str,
        "proxy_port": int,
        "memcached_port": int,
        "hash_prefix": str,
        "hash_suffix": str,
        "inventory_ports": dict[str, int],
    }
    record_keys = {**NodeDevices.record_keys, "node": str | None}
    _error = ClusterError
    cfg: LocalClusterConfig

    def __init__(self, cfg: LocalClusterConfig, state: dict[str, Any] | None = None) -> None:
        super().__init__(cfg, state)
        self.net = Network.for_dir(cfg.dir)

    # -- addresses and paths

    @property
    def proxy_port(self) -> int:
        return int(self._state.data.get("proxy_port", self.cfg.port))

    @property
    def proxy_ip(self) -> str:
        return "127.0.0.1" if self.cfg.testbed is None else Network.role_address("proxy")

    @property
    def proxy_url(self) -> str:
        return f"http://{self.proxy_ip}:{self.proxy_port}"

    def node_ip(self, node: str) -> str:
        return Network.address(int(node[1:]))

    def record_log(self, node: str) -> Path:
        return self.node_dir(node) / "dssio-record.jsonl"

    def server_log(self, node: str, server: str) -> Path:
        return self.node_dir(node) / "log" / f"{server}.log"

    @property
    def ports(self) -> dict[str, int]:
        return dict(self._state.data["inventory_ports"])

    def alive(self, name: str) -> bool:
        return self._procs.alive(name)

    # -- the inventory this cluster is made of

    def inventory(self) -> Inventory:
        st = self._state.data
        testbed = self.cfg.testbed
        workers = str(self.cfg.workers if testbed is None else testbed.server_workers)
        cluster = Cluster(
            replicas=self.cfg.replicas,
            part_power=PART_POWER,
            min_part_hours=0,
            hash_path_prefix=st["hash_prefix"],
            hash_path_suffix=st["hash_suffix"],
            user=current_user(),
            bin_dir=str(Path(sys.executable).parent),
            # Tier devices are mounts: a node whose tier is down answers 507 rather than
            # write into the bare mount point. Plain devices are directories on a tmpfs.
            mount_check=self.cfg.tier_mode is not None,
            # The testbed's runs say where their PUTs waited.
            put_timing=testbed is not None,
            workers=workers,
            proxy_workers="" if testbed is None else str(testbed.proxy_workers),
            memcache_servers=[f"127.0.0.1:{st['memcached_port']}"],
            replicator={"concurrency": "1", "interval": str(self.cfg.replicator_interval)},
        )
        # Without the testbed the proxy listens on the root namespace's loopback and reaches
        # the nodes from the bridge's address; with it, on its own namespace's address.
        proxy_ip = Network.bridge_address() if testbed is None else self.proxy_ip
        return Inventory(
            cluster=cluster,
            proxies=[ProxyNode("proxy", proxy_ip, self.proxy_port, self.proxy_ip)],
            storage=[
                StorageNode(name, self.node_ip(name), zone=i, devices=[Device(DEVICE)])
                for i, name in enumerate(self.node_names, start=1)
            ],
            dss=dict(self.cfg.dss_options),
            proxy_server={} if testbed is None else testbed.proxy_options(),
            memcache={} if testbed is None else testbed.memcache_options(),
            # The nodes' devices are tier mounts this cluster makes itself, so the
            # inventory cannot tell: the tier's object-server settings are added here.
            object_server=object_options(
                {
                    "dssio_backend": self.cfg.dssio_backend,
                    **({} if testbed is None else testbed.object_options()),
                },
                tiered=self.cfg.tier_mode is not None,
            ),
            tempauth_users={"test:tester": "testing .admin"},
        )

    # -- up

    def _new_state(self) -> dict[str, Any]:
        mc_port, picked = free_ports(2)
        return {
            "config": self.cfg.to_json(),
            "tag": self.net.tag,
            "proxy_port": self.cfg.port or picked,
            "memcached_port": mc_port,
            "hash_prefix": secrets.token_hex(8),
            "hash_suffix": secrets.token_hex(8),
            "mounts": [],
            "processes": {},
        }

    def _prepare(self) -> None:
        self._make_network()
        inv = self.inventory()
        self._state.data["inventory_ports"] = inv.cluster.ports
        self._write_configs(inv)

    def _refuse_if_running(self) -> None:
        if not self._state.exists():
            if self.net.namespaces() or self.net.bridge_exists():
                self.down()  # leftovers of a run whose state file is gone
            return
        previous = LocalCluster.load(self.dir)
        if previous._procs.any_alive():
            raise ClusterError(
                f"a local cluster is already running in {self.dir} "
                f"(dss deploy local-cluster down --dir {self.dir})"
            )
        previous.down()

    def _make_network(self) -> None:
        # The state file names the tag before anything exists, so `down` finds it all.
        self.net.make_bridge()
        if self.cfg.testbed is not None:
            for role in ROLES:
                self.net.make_role(role)
        tiers = []
        for i, name in enumerate(self.node_names, start=1):
            self.net.make_node(i)
            tier = self._provision_node(name)
            if tier is not None:
                tiers.append(tier)
        if self.cfg.testbed is not None:
            shaping.apply(self.links())
            try:
                congestion.apply(self.net.namespaces(), self.cfg.testbed.tcp_congestion)
                if (rto := self.cfg.testbed.rto_min_us()) is not None:
                    tcp_timers.apply(self.net.namespaces(), rto)
            except (congestion.CongestionError, tcp_timers.TimerError) as err:
                raise ClusterError(str(err)) from None
        for mount in tiers:
            wait_tier_mounted(mount)

    def _write_configs(self, inv: Inventory) -> None:
        rings = build_cluster_rings(inv, self.dir / "rings")
        proxy_dir = self.dir / "proxy"
        paths = NodePaths(str(proxy_dir / "etc"), str(proxy_dir / "devices"), str(proxy_dir))
        self._write_node(proxy_dir, proxy_configs(inv, inv.proxies[0], paths), rings)
        for node in inv.storage:
            ndir = self.node_dir(node.name)
            paths = NodePaths(str(ndir / "etc"), str(ndir / "devices"), str(ndir / "cache"))
            # Each node logs its own I/O, so that a rebuilt replica's writes can be told apart.
            own = dataclasses.replace(
                inv,
                object_server={
                    **inv.object_server,
                    "dssio_record_log": str(self.record_log(node.name)),
                },
            )
            configs = storage_configs(own, node, paths)
            configs["rsyncd.conf"] = self._local_rsyncd(configs["rsyncd.conf"], ndir)
            self._write_node(ndir, configs, rings)

    @staticmethod
    def _local_rsyncd(text: str, ndir: Path) -> str:
        """A real node's rsyncd.conf with the node's own log and lock files; without a pid
        file, which a killed daemon would leave behind to stop its restart."""
        lines = [line for line in text.splitlines() if not line.startswith("pid file")]
        text = "\n".join(lines) + "\n"
        text = text.replace("/var/log/rsyncd.log", str(ndir / "log" / "rsyncd.log"))
        return text.replace("/var/lock/", f"{ndir / 'cache'}/")

    @staticmethod
    def _write_node(ndir: Path, configs: dict[str, str], rings: list[Path]) -> None:
        for sub in ("etc", "log", "cache"):
            (ndir / sub).mkdir(parents=True, exist_ok=True)
        for name, text in configs.items():
            (ndir / "etc" / name).write_text(text)
        for ring in rings:
            shutil.copyfile(ring, ndir / "etc" / ring.name)

    def _swift_cmd(self, ndir: Path, script: str, conf: str, log: Path, *args: str) -> list[str]:
        etc = ndir / "etc"
        return swiftrun.command(etc / "swift.conf", log, script, str(etc / conf), *args)

    def _node_commands(self, node: str) -> dict[str, tuple[list[str], Path]]:
        """Name -> (command, log) of each process of NODE."""
        ndir = self.node_dir(node)
        cmds = {}
        for server in STORAGE_SERVERS:
            log = self.server_log(node, f"{server}-server")
            cmds[f"{node}/{server}-server"] = (
                self._swift_cmd(ndir, f"swift-{server}-server", f"{server}-server.conf", log),
                log,
            )
        log = self.server_log(node, "object-replicator")
        cmds[f"{node}/object-replicator"] = (
            self._swift_cmd(ndir, "swift-object-replicator", "object-server.conf", log),
            log,
        )
        rsyncd = ["rsync", "--daemon", "--no-detach", f"--config={ndir / 'etc' / 'rsyncd.conf'}"]
        cmds[f"{node}/rsyncd"] = (rsyncd, self.server_log(node, "rsyncd-output"))
        return cmds

    def _start(self, memcached: str) -> None:
        log_dir = self.dir / "proxy" / "log"
        mc_cmd = self._memcached_cmd(memcached, self._state.data["memcached_port"])
        self._spawn("memcached", None, mc_cmd, log_dir / "memcached.log", self._proxy_prefix())
        for node in self.node_names:
            self.start_node(node, wait=False)
        proxy_dir = self.dir / "proxy"
        log = log_dir / "proxy-server.log"
        cmd = self._swift_cmd(proxy_dir, "swift-proxy-server", "proxy-server.conf", log)
        self._spawn("proxy-server", None, cmd, log, self._proxy_prefix())

    def _spawn(
        self,
        name: str,
        node: str | None,
        cmd: list[str],
        log: Path,
        prefix: list[str] | None = None,
    ) -> None:
        # `ip netns exec` execs the command in place: the pid and process group stay, and
        # each server's workers share its group, by which `down` finds them.
        if node:
            prefix = self.net.exec_prefix(int(node[1:]))
        self._procs.spawn(name, cmd, log, launch=[*(prefix or []), *cmd], node=node)

    def _checks(self, node: str) -> list[Check]:
        checks: list[Check] = []
        for server in STORAGE_SERVERS:
            url = f"http://{self.node_ip(node)}:{self.ports[server]}/healthcheck"
            checks.append((f"{node}/{server}-server", lambda url=url: http(url)[0] == 200))
        ip = self.node_ip(node)
        checks.append((f"{node}/rsyncd", lambda: tcp_answers(RSYNC_PORT, ip)))
        return checks

    def _wait(self, checks: list[Check]) -> None:
        timeout = self.cfg.start_timeout
        if self.cfg.testbed is not None:
            timeout = self.cfg.testbed.dilated.timeout(timeout)  # slower devices start slower
        self._procs.wait_ready(checks, timeout, 0.2)

    def _wait_ready(self) -> None:
        port = self._state.data["memcached_port"]
        checks: list[Check] = []
        if self.cfg.testbed is None:
            # In the testbed memcached is on the proxy namespace's loopback, out of reach
            # from here; the proxy's own check (tempauth tokens) proves it answers.
            checks.append(("memcached", lambda: tcp_answers(port)))
        for node in self.node_names:
            checks += self._checks(node)
        checks.append(("proxy-server", self._proxy_serves))
        self._wait(checks)

    # -- faults and maintenance

    def node_processes(self, node: str) -> list[str]:
        return [n for n, p in self._procs.records.items() if p["node"] == node]

    def kill_node(self, node: str) -> int:
        """SIGKILL every server of NODE (a crashed machine); return how many processes died."""
        procs = [self._procs.records[n] for n in self.node_processes(node)]
        killed = self._procs.signal(procs, signal.SIGKILL)
        self._procs.wait_gone(procs, 10, 0.05)
        return killed

    def start_node(self, node: str, wait: bool = True) -> None:
        """(Re)start NODE's servers and replicator daemon."""
        for name, (cmd, log) in self._node_commands(node).items():
            if name in self._procs.records and self.alive(name):
                continue
            self._spawn(name, node, cmd, log)
        if wait:
            self._wait(self._checks(node))

    def run_replicator(self, node: str, kind: str = "object", timeout: float = 300) -> None:
        """One replication pass of KIND (object, container, account) on NODE
        (swift-KIND-replicator --once)."""
        self.run_replicators([node], kind, timeout)

    def run_replicators(self, nodes: list[str], kind: str = "object", timeout: float = 300) -> None:
        """One replication pass of KIND on each of NODES, side by side (the passes of a
        real cluster's nodes overlap as well)."""
        procs = {}
        for node in nodes:
            log = self.server_log(node, f"{kind}-replicator-once")
            cmd = self._swift_cmd(
                self.node_dir(node),
                f"swift-{kind}-replicator",
                f"{kind}-server.conf",
                log,
                "--once",
            )
            procs[node] = (
                subprocess.Popen(
                    [*self.net.exec_prefix(int(node[1:])), *cmd],
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                ),
                log,
            )
        deadline = time.monotonic() + timeout
        failed = []
        for node, (proc, log) in procs.items():
            try:
                code = proc.wait(max(1.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
                code = -9
            if code != 0:
                failed.append(f"{kind} replicator on {node} exited {code}: {log_tail(log)}")
        if failed:
            raise ClusterError("; ".join(failed))

    def object_replicas(self, account: str, container: str, obj: str) -> tuple[int, list[str]]:
        """(partition, primary nodes) of an object, from the object ring."""
        # RingData rather than Ring: Ring insists on /etc/swift/swift.conf for the hash.
        from swift.common.ring import RingData

        ring = RingData.load(str(self.dir / "rings" / "object.ring.gz"))
        digest = bytes.fromhex(self.object_hash(account, container, obj))
        part = int.from_bytes(digest[:4], "big") >> (32 - PART_POWER)
        ips = {self.node_ip(n): n for n in self.node_names}
        devs = [ring.devs[row[part]] for row in ring._replica2part2dev_id]
        return part, [ips[d["ip"]] for d in devs]

    def object_hash(self, account: str, container: str, obj: str) -> str:
        path = f"/{account}/{container}/{obj}"
        text = self._state.data["hash_prefix"] + path + self._state.data["hash_suffix"]
        return hashlib.md5(text.encode(), usedforsecurity=False).hexdigest()

    # -- down

    def down(self, timeout: float = 15.0) -> None:
        """Stop every process, unmount every tier (after its write-back) and tmpfs, delete
        the namespaces and the bridge."""
        left = self._procs.stop_all(timeout)
        stuck = release_devices(self._state.mounts(), discard=self.cfg.tier_discard)
        net_left = self.net.remove()
        if left or stuck or net_left:
            self._state.save()
            raise ClusterError(
                f"could not tear down everything in {self.dir}: pids {left or '-'}, "
                f"mounts {stuck or '-'}, network {net_left or '-'}"
            )
        self._state.forget()

    # -- status

    def status(self) -> dict[str, Any]:
        processes = self._procs.status("node", "log")
        return {
            "dir": str(self.dir),
            "up": bool(processes) and all(p["alive"] for p in processes.values()),
            "proxy": self.proxy_url,
            "auth": self.auth_url,
            "account": self.account_url,
            "bridge": {"name": self.net.bridge, "address": Network.bridge_address()},
            "tier_mode": self.cfg.tier_mode or "none",
            "testbed": self._testbed_status(),
            "nodes": {n: self._node_status(n) for n in self.node_names},
            "namespaces": self.net.namespaces(),
            "processes": processes,
            "mounts": self._mount_paths(),
        }

    def _node_status(self, node: str) -> dict[str, Any]:
        out: dict[str, Any] = {
            "namespace": self.net.namespace(int(node[1:])),
            "ip": self.node_ip(node),
            "device": str(self.device_path(node)),
        }
        if self.cfg.tier_mode is not None:
            try:
                pid: int | None = self.tier_pid(node)
                alive = self.tier_alive(node)
            except ClusterError:
                pid, alive = None, False
            out["tier"] = {"pid": pid, "mounted": self.tier_mounted(node), "alive": alive}
        return out

    def node_pids(self) -> dict[str, list[int]]:
        """Node ("proxy", "s1", ...) -> the pids of its processes: servers, their workers,
        memcached and the proxy on the proxy node, dss-tier daemons on storage nodes."""
        out: dict[str, list[int]] = {}
        for record in self._procs.records.values():
            out.setdefault(record["node"] or "proxy", []).extend(self._procs.members(record))
        if self.cfg.tier_mode is not None:
            for node in self.node_names:
                out.setdefault(node, []).append(self.tier_pid(node))
        return out

    def daemon_rss_kib(self) -> dict[str, int]:
        """Resident memory of every tier daemon and server process (workers included)."""
        out = {}
        if self.cfg.tier_mode is not None:
            for node in self.node_names:
                out[f"{node}/dss-tier"] = rss_kib(self.tier_pid(node))
        for name, record in self._procs.records.items():
            out[name] = sum(rss_kib(pid) for pid in self._procs.members(record))
        return out


__all__ = ["ClusterError", "LocalCluster", "LocalClusterConfig", "NetnsError"]
