"""A multi-node swift-dss cluster on one machine: one proxy and N storage nodes, each
storage node in a network namespace of its own with its own address.

    root namespace: memcached 127.0.0.1:M, proxy 127.0.0.1:P (the tests' endpoint),
                    bridge dssbr-TAG 198.18.0.1/24
    namespace dss-TAG-sN: eth0 198.18.0.(10+N); account :6202, container :6201,
                    object :6200 (egg:swift_dss#object), object replicator (ssync)

The configs are those `dss deploy generate` writes for a real cluster, from an inventory
built here, with directories of the cluster's own instead of /etc/swift and /srv/node.

Layout of DIR:
    local-cluster.json   what runs: config, processes, mounts, network tag
    rings/               the rings (builders too)
    proxy/etc/           swift.conf, proxy-server.conf
    nodes/sN/etc/        swift.conf, *-server.conf, rings
    nodes/sN/devices/    a tmpfs holding the node's one device, d1
    nodes/sN/log/        one log per process, Swift's access log included
    nodes/sN/dssio-record.jsonl   every object I/O with its class (dssio_backend = record)
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from swift_dss.deploy.generate import (
    NodePaths,
    build_cluster_rings,
    proxy_configs,
    storage_configs,
)
from swift_dss.deploy.inventory import Cluster, Device, Inventory, ProxyNode, StorageNode
from swift_dss.deploy.netns import NetnsError, Network
from swift_dss.deploy.rings import PART_POWER
from swift_dss.deploy.saio import (
    SaioError,
    current_user,
    free_ports,
    http,
    log_tail,
    mount_tmpfs,
    read_proc,
    release_devices,
    tcp_answers,
)

STATE_FILE = "local-cluster.json"
DEVICE = "d1"
STORAGE_SERVERS = ("account", "container", "object")
#: The operator policy of the local cluster: clients may set 0 and 11-31, never the
#: storage system's own classes 1-10. max_ranges below what fits in one header line, so
#: that the limit itself can be exercised (as in the all-in-one test cluster).
DEFAULT_DSS_OPTIONS = {
    "allowed_classes": "0,11-31",
    "reserved_classes": "1-10",
    "max_ranges": "256",
}


class ClusterError(SaioError):
    """A failure of the local cluster, with a one-line explanation."""


@dataclass
class LocalClusterConfig:
    dir: Path
    nodes: int = 4
    replicas: int = 3
    port: int = 0
    workers: int = 1
    devices_size: str = "512m"
    dssio_backend: str = "record"
    dss_options: dict[str, str] = field(default_factory=lambda: dict(DEFAULT_DSS_OPTIONS))
    #: The replicator daemon's pause between passes; tests run passes themselves (--once).
    replicator_interval: int = 3600
    start_timeout: float = 120.0

    def __post_init__(self) -> None:
        self.dir = Path(self.dir).absolute()

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "dir": str(self.dir)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> LocalClusterConfig:
        return cls(**{k: v for k, v in data.items() if k in cls.__dataclass_fields__})

    def validate(self) -> None:
        if not 1 <= self.nodes <= 200:
            raise ClusterError("nodes must be from 1 to 200")
        if not 1 <= self.replicas <= self.nodes:
            raise ClusterError(f"{self.replicas} replicas need 1 to {self.nodes} storage nodes")


def node_name(index: int) -> str:
    return f"s{index}"


def matches(pid: int, cmds: list[list[str]]) -> bool:
    info = read_proc(pid)
    return info is not None and info[0] not in ("Z", "X") and info[2] in cmds


class LocalCluster:
    user = "test:tester"
    key = "testing"
    account = "AUTH_test"

    def __init__(self, cfg: LocalClusterConfig, state: dict[str, Any] | None = None) -> None:
        self.cfg = cfg
        self.dir = cfg.dir
        self.net = Network.for_dir(cfg.dir)
        self._state: dict[str, Any] = state or {}
        self._children: list[subprocess.Popen[bytes]] = []

    # -- addresses and paths

    @property
    def proxy_port(self) -> int:
        return int(self._state.get("proxy_port", self.cfg.port))

    @property
    def proxy_url(self) -> str:
        return f"http://127.0.0.1:{self.proxy_port}"

    @property
    def auth_url(self) -> str:
        return f"{self.proxy_url}/auth/v1.0"

    @property
    def account_url(self) -> str:
        return f"{self.proxy_url}/v1/{self.account}"

    @property
    def state_path(self) -> Path:
        return self.dir / STATE_FILE

    @property
    def node_names(self) -> list[str]:
        return [node_name(i) for i in range(1, self.cfg.nodes + 1)]

    def node_dir(self, node: str) -> Path:
        return self.dir / "nodes" / node

    def node_ip(self, node: str) -> str:
        return Network.address(int(node[1:]))

    def device_path(self, node: str) -> Path:
        return self.node_dir(node) / "devices" / DEVICE

    def record_log(self, node: str) -> Path:
        return self.node_dir(node) / "dssio-record.jsonl"

    def server_log(self, node: str, server: str) -> Path:
        return self.node_dir(node) / "log" / f"{server}.log"

    @property
    def ports(self) -> dict[str, int]:
        return dict(self._state["inventory_ports"])

    @classmethod
    def load(cls, dir: Path | str) -> LocalCluster:
        path = Path(dir).absolute() / STATE_FILE
        try:
            state = json.loads(path.read_text())
        except FileNotFoundError:
            raise ClusterError(f"no local cluster in {path.parent} (no {STATE_FILE})") from None
        except (OSError, ValueError) as err:
            raise ClusterError(f"cannot read {path}: {err}") from None
        return cls(LocalClusterConfig.from_json(state["config"]), state)

    # -- state

    def _save(self) -> None:
        tmp = self.state_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self._state, indent=2) + "\n")
        tmp.replace(self.state_path)

    def _processes(self) -> dict[str, dict[str, Any]]:
        return self._state.setdefault("processes", {})

    def _reap(self) -> None:
        for child in self._children:
            child.poll()

    def alive(self, name: str) -> bool:
        self._reap()
        proc = self._processes()[name]
        return matches(proc["pid"], [proc["cmd"], proc["launch"]])

    def is_up(self) -> bool:
        procs = self._processes()
        return bool(procs) and all(self.alive(name) for name in procs)

    # -- the inventory this cluster is made of

    def inventory(self) -> Inventory:
        st = self._state
        cluster = Cluster(
            replicas=self.cfg.replicas,
            part_power=PART_POWER,
            min_part_hours=0,
            hash_path_prefix=st["hash_prefix"],
            hash_path_suffix=st["hash_suffix"],
            user=current_user(),
            bin_dir=str(Path(sys.executable).parent),
            # Devices are directories on a tmpfs, not mounted block devices.
            mount_check=False,
            workers=str(self.cfg.workers),
            memcache_servers=[f"127.0.0.1:{st['memcached_port']}"],
            replicator={"concurrency": "1", "interval": str(self.cfg.replicator_interval)},
        )
        return Inventory(
            cluster=cluster,
            proxies=[ProxyNode("proxy", Network.bridge_address(), self.proxy_port, "127.0.0.1")],
            storage=[
                StorageNode(name, self.node_ip(name), zone=i, devices=[Device(DEVICE)])
                for i, name in enumerate(self.node_names, start=1)
            ],
            dss=dict(self.cfg.dss_options),
            object_server={"dssio_backend": self.cfg.dssio_backend},
            tempauth_users={"test:tester": "testing .admin"},
        )

    # -- up

    def up(self) -> None:
        """Start the cluster; return once the proxy serves authenticated requests."""
        self._refuse_if_running()
        self.cfg.validate()
        memcached = shutil.which("memcached")
        if memcached is None:
            raise ClusterError("memcached is not installed (apt-get install memcached)")
        mc_port, picked = free_ports(2)
        self._state = {
            "config": self.cfg.to_json(),
            "tag": self.net.tag,
            "proxy_port": self.cfg.port or picked,
            "memcached_port": mc_port,
            "hash_prefix": secrets.token_hex(8),
            "hash_suffix": secrets.token_hex(8),
            "mounts": [],
            "processes": {},
        }
        self.dir.mkdir(parents=True, exist_ok=True)
        self._save()
        try:
            self._make_network()
            inv = self.inventory()
            self._state["inventory_ports"] = inv.cluster.ports
            self._write_configs(inv)
            self._start(memcached)
            self._wait_ready()
        except BaseException:
            with contextlib.suppress(Exception):
                self.down()
            raise

    def _refuse_if_running(self) -> None:
        if not self.state_path.exists():
            if self.net.namespaces() or self.net.bridge_exists():
                self.down()  # leftovers of a run whose state file is gone
            return
        previous = LocalCluster.load(self.dir)
        if any(previous.alive(name) for name in previous._processes()):
            raise ClusterError(
                f"a local cluster is already running in {self.dir} "
                f"(dss deploy local-cluster down --dir {self.dir})"
            )
        previous.down()

    def _make_network(self) -> None:
        # The state file names the tag before anything exists, so `down` finds it all.
        self.net.make_bridge()
        for i, name in enumerate(self.node_names, start=1):
            self.net.make_node(i)
            devices = self.node_dir(name) / "devices"
            mount_tmpfs(devices, self.cfg.devices_size)
            self._state["mounts"].append({"path": str(devices), "kind": "tmpfs"})
            self._save()
            (devices / DEVICE).mkdir()

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
            del configs["rsyncd.conf"]  # no database replication here (see docs/deployment.md)
            self._write_node(ndir, configs, rings)

    @staticmethod
    def _write_node(ndir: Path, configs: dict[str, str], rings: list[Path]) -> None:
        for sub in ("etc", "log", "cache"):
            (ndir / sub).mkdir(parents=True, exist_ok=True)
        for name, text in configs.items():
            (ndir / "etc" / name).write_text(text)
        for ring in rings:
            shutil.copyfile(ring, ndir / "etc" / ring.name)

    def _swift_cmd(self, ndir: Path, script: str, conf: str, log: Path, *args: str) -> list[str]:
        return [
            sys.executable,
            "-m",
            "swift_dss.deploy.swiftrun",
            "--swift-conf",
            str(ndir / "etc" / "swift.conf"),
            "--log-file",
            str(log),
            script,
            str(ndir / "etc" / conf),
            *args,
        ]

    def _node_commands(self, node: str) -> dict[str, list[str]]:
        ndir = self.node_dir(node)
        cmds = {}
        for server in STORAGE_SERVERS:
            log = self.server_log(node, f"{server}-server")
            cmds[f"{node}/{server}-server"] = self._swift_cmd(
                ndir, f"swift-{server}-server", f"{server}-server.conf", log
            )
        log = self.server_log(node, "object-replicator")
        cmds[f"{node}/object-replicator"] = self._swift_cmd(
            ndir, "swift-object-replicator", "object-server.conf", log
        )
        return cmds

    def _start(self, memcached: str) -> None:
        log_dir = self.dir / "proxy" / "log"
        mc_cmd = [memcached, "-l", "127.0.0.1", "-p", str(self._state["memcached_port"])]
        mc_cmd += ["-U", "0", "-m", "64"] + (["-u", "root"] if os.geteuid() == 0 else [])
        self._spawn("memcached", None, mc_cmd, log_dir / "memcached.log")
        for node in self.node_names:
            self.start_node(node, wait=False)
        proxy_dir = self.dir / "proxy"
        log = log_dir / "proxy-server.log"
        cmd = self._swift_cmd(proxy_dir, "swift-proxy-server", "proxy-server.conf", log)
        self._spawn("proxy-server", None, cmd, log)

    def _spawn(self, name: str, node: str | None, cmd: list[str], log: Path) -> None:
        prefix = self.net.exec_prefix(int(node[1:])) if node else []
        launch = [*prefix, *cmd]
        log.parent.mkdir(parents=True, exist_ok=True)
        # `ip netns exec` execs the command in place: the pid and process group stay, and
        # each server's workers share its group, by which `down` finds them.
        with open(log, "ab") as out:
            child = subprocess.Popen(
                launch,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                cwd=self.dir,
                start_new_session=True,
            )
        self._children.append(child)
        self._processes()[name] = {
            "pid": child.pid,
            "cmd": cmd,
            "launch": launch,
            "log": str(log),
            "node": node,
        }
        self._save()

    def _checks(self, node: str) -> list[tuple[str, Any]]:
        checks = []
        for server in STORAGE_SERVERS:
            url = f"http://{self.node_ip(node)}:{self.ports[server]}/healthcheck"
            checks.append((f"{node}/{server}-server", lambda url=url: http(url)[0] == 200))
        return checks

    def _wait(self, checks: list[tuple[str, Any]]) -> None:
        deadline = time.monotonic() + self.cfg.start_timeout
        for name, check in checks:
            while not check():
                for pname, proc in self._processes().items():
                    if not self.alive(pname):
                        tail = log_tail(Path(proc["log"]))
                        raise ClusterError(f"{pname} exited: {tail or 'no output'} ({proc['log']})")
                if time.monotonic() > deadline:
                    raise ClusterError(
                        f"{name} did not answer within {self.cfg.start_timeout:.0f} s "
                        f"(see {self._processes()[name]['log']})"
                    )
                time.sleep(0.2)

    def _wait_ready(self) -> None:
        port = self._state["memcached_port"]
        checks: list[tuple[str, Any]] = [("memcached", lambda: tcp_answers(port))]
        for node in self.node_names:
            checks += self._checks(node)
        checks.append(("proxy-server", self._proxy_serves))
        self._wait(checks)

    def _proxy_serves(self) -> bool:
        try:
            url, token = self.get_token()
        except ClusterError:
            return False
        return 200 <= http(url, "HEAD", {"X-Auth-Token": token})[0] < 300

    def get_token(self) -> tuple[str, str]:
        status, headers = http(
            self.auth_url, headers={"X-Auth-User": self.user, "X-Auth-Key": self.key}
        )
        if status != 200 or "X-Auth-Token" not in headers:
            raise ClusterError(f"tempauth at {self.auth_url} answered {status or 'nothing'}")
        return headers.get("X-Storage-Url", self.account_url), headers["X-Auth-Token"]

    # -- faults and maintenance

    def node_processes(self, node: str) -> list[str]:
        return [n for n, p in self._processes().items() if p["node"] == node]

    def kill_node(self, node: str) -> int:
        """SIGKILL every server of NODE (a crashed machine); return how many processes died."""
        procs = [self._processes()[n] for n in self.node_processes(node)]
        killed = self._signal(procs, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while self._survivors(procs) and time.monotonic() < deadline:
            time.sleep(0.05)
        return killed

    def start_node(self, node: str, wait: bool = True) -> None:
        """(Re)start NODE's servers and replicator daemon."""
        for name, cmd in self._node_commands(node).items():
            if name in self._processes() and self.alive(name):
                continue
            self._spawn(name, node, cmd, Path(cmd[cmd.index("--log-file") + 1]))
        if wait:
            self._wait(self._checks(node))

    def wipe_device(self, node: str) -> None:
        """Empty NODE's device as if its disk had been replaced by a blank one."""
        dev = self.device_path(node)
        for entry in dev.iterdir():
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry)
            else:
                entry.unlink()

    def run_replicator(self, node: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        """One object replication pass on NODE (swift-object-replicator --once)."""
        log = self.server_log(node, "object-replicator-once")
        cmd = self._swift_cmd(
            self.node_dir(node), "swift-object-replicator", "object-server.conf", log, "--once"
        )
        proc = subprocess.run(
            [*self.net.exec_prefix(int(node[1:])), *cmd],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        if proc.returncode != 0:
            raise ClusterError(f"replicator on {node} exited {proc.returncode}: {log_tail(log)}")
        return proc

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
        text = self._state["hash_prefix"] + path + self._state["hash_suffix"]
        return hashlib.md5(text.encode(), usedforsecurity=False).hexdigest()

    # -- down

    def down(self, timeout: float = 15.0) -> None:
        """Stop every process, unmount every tmpfs, delete the namespaces and the bridge."""
        procs = list(self._processes().values())
        self._signal(procs, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while self._survivors(procs) and time.monotonic() < deadline:
            time.sleep(0.1)
        if self._survivors(procs):
            self._signal(procs, signal.SIGKILL)
            time.sleep(0.5)
        left = self._survivors(procs)
        stuck = release_devices(self._state.get("mounts", []))
        net_left = self.net.remove()
        if left or stuck or net_left:
            self._save()
            raise ClusterError(
                f"could not tear down everything in {self.dir}: pids {left or '-'}, "
                f"mounts {stuck or '-'}, network {net_left or '-'}"
            )
        self.state_path.unlink(missing_ok=True)
        self._state["processes"] = {}
        self._state["mounts"] = []

    def _members(self, proc: dict[str, Any]) -> list[int]:
        """Live processes of PROC's group running its command: a server and its workers."""
        pids = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            info = read_proc(int(entry.name))
            if (
                info
                and info[1] == proc["pid"]
                and info[0] not in ("Z", "X")
                and info[2] in (proc["cmd"], proc["launch"])
            ):
                pids.append(int(entry.name))
        return pids

    def _survivors(self, procs: list[dict[str, Any]]) -> list[int]:
        self._reap()
        return [pid for p in procs for pid in self._members(p)]

    def _signal(self, procs: list[dict[str, Any]], sig: signal.Signals) -> int:
        count = 0
        for proc in reversed(procs):
            for pid in self._members(proc):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, sig)
                    count += 1
        return count

    # -- status

    def status(self) -> dict[str, Any]:
        processes = {
            name: {"pid": p["pid"], "alive": self.alive(name), "node": p["node"], "log": p["log"]}
            for name, p in self._processes().items()
        }
        return {
            "dir": str(self.dir),
            "up": bool(processes) and all(p["alive"] for p in processes.values()),
            "proxy": self.proxy_url,
            "auth": self.auth_url,
            "account": self.account_url,
            "bridge": {"name": self.net.bridge, "address": Network.bridge_address()},
            "nodes": {
                n: {"namespace": self.net.namespace(int(n[1:])), "ip": self.node_ip(n)}
                for n in self.node_names
            },
            "namespaces": self.net.namespaces(),
            "processes": processes,
            "mounts": [m["path"] for m in self._state.get("mounts", [])],
        }


__all__ = ["ClusterError", "LocalCluster", "LocalClusterConfig", "NetnsError"]
