"""An all-in-one Swift cluster on loopback: memcached, account, container, object and proxy
servers, all state under one directory, so that several clusters can run side by side.

Layout of DIR:
    saio.json          what is running (config, ports, pids, mounts): read by `Saio.load`
    swift.conf, *-server.conf, *.builder, *.ring.gz
    devices/           tmpfs (or, with a tier mode, dss-tier mounts), one dN per device
    log/               one log file per process
    cache/             recon cache
"""

from __future__ import annotations

import os
import pwd
import secrets
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from importlib.resources import files
from pathlib import Path
from string import Template
from typing import Any

from swift_dss.deploy import swiftrun
from swift_dss.deploy.cluster_config import ClusterConfig
from swift_dss.deploy.probes import free_ports, http, port_in_use, tcp_answers
from swift_dss.deploy.process_cluster import ProcessCluster
from swift_dss.deploy.processes import read_proc as read_proc
from swift_dss.deploy.rings import build_rings

STATE_FILE = "saio.json"
SWIFT_SERVERS = ("account", "container", "object", "proxy")
TIER_MODES = ("hdd", "ssd", "lru", "dss", "tiered")

PIPELINE = (
    "catch_errors gatekeeper healthcheck proxy-logging cache listing_formats bulk tempurl "
    "ratelimit s3api tempauth copy container-quotas account-quotas slo dlo versioned_writes "
    "symlink dss proxy-logging proxy-server"
)


class SaioError(Exception):
    """A failure with a one-line explanation for the operator."""


@dataclass
class SaioConfig(ClusterConfig):
    port: int = 8080
    dss: bool = True
    dssio_backend: str = "auto"
    tier_mode: str | None = None
    devices: int = 1
    replicas: int = 1
    workers: int = 1
    devices_size: str = "4g"
    dss_options: dict[str, str] = field(default_factory=dict)
    object_options: dict[str, str] = field(default_factory=dict)
    start_timeout: float = 90.0

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.tier_mode == "none":
            self.tier_mode = None

    def validate(self) -> None:
        if self.tier_mode is not None and self.tier_mode not in TIER_MODES:
            raise SaioError(f"unknown tier mode {self.tier_mode!r} (none, {', '.join(TIER_MODES)})")
        if not 0 <= self.port < 65536:
            raise SaioError(f"port {self.port} is out of range")
        if self.devices < 1 or self.workers < 0:
            raise SaioError("devices must be at least 1 and workers at least 0")
        if not 1 <= self.replicas <= self.devices:
            raise SaioError(f"{self.replicas} replicas need 1 to {self.devices} devices")


# --- small helpers -------------------------------------------------------------------------


def current_user() -> str:
    return pwd.getpwuid(os.geteuid()).pw_name


def ini_value(value: object) -> str:
    """VALUE as it may appear in a paste.deploy INI file (no newlines, % escaped)."""
    text = str(value)
    if "\n" in text or "\r" in text:
        raise SaioError(f"config value {text!r} spans several lines")
    return text.replace("%", "%%")


def ini_lines(options: dict[str, str]) -> str:
    return "".join(f"{ini_value(k)} = {ini_value(v)}\n" for k, v in options.items())


def render_text(template: str, values: dict[str, object]) -> str:
    """The template deploy/templates/TEMPLATE with its ${names} replaced by VALUES."""
    text = files("swift_dss.deploy").joinpath("templates", template).read_text()
    return Template(text).substitute({k: str(v) for k, v in values.items()})


def render(template: str, dest: Path, values: dict[str, object]) -> None:
    dest.write_text(render_text(template, values))


# --- devices ---------------------------------------------------------------------------------


def device_names(count: int) -> list[str]:
    return [f"d{i}" for i in range(1, count + 1)]


def find_tier_binary() -> str | None:
    return shutil.which("dss-tier") or shutil.which(
        "dss-tier", path=str(Path(sys.executable).parent)
    )


def run_quiet(cmd: list[str], what: str) -> None:
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        reason = (proc.stderr or proc.stdout).strip().splitlines()
        raise SaioError(f"{what} failed: {reason[-1] if reason else f'exit {proc.returncode}'}")


def mount_tmpfs(path: Path, size: str) -> None:
    path.mkdir(parents=True, exist_ok=True)
    run_quiet(
        ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs", str(path)],
        f"mounting a tmpfs on {path}",
    )


def provision_devices(cfg: SaioConfig, record: list[dict[str, str]]) -> list[str]:
    """Make the Swift devices under DIR/devices; return their names.

    Every mount made is appended to RECORD ({"path", "kind"}) as soon as it exists, so that
    `release_devices` can undo a partial provisioning. Devices must support large user
    xattrs, which rules out ext4 here: plain devices are directories on a tmpfs; with a
    tier mode each device is a dss-tier mount whose SSD and HDD directories sit on a tmpfs.
    """
    names = device_names(cfg.devices)
    devices = cfg.dir / "devices"
    if cfg.tier_mode is None:
        mount_tmpfs(devices, cfg.devices_size)
        record.append({"path": str(devices), "kind": "tmpfs"})
        for name in names:
            (devices / name).mkdir()
        return names

    tier = find_tier_binary()
    if tier is None:
        raise SaioError(
            f"tier mode {cfg.tier_mode} needs the dss-tier binary (make setup builds it)"
        )
    backing = cfg.dir / "backing"
    mount_tmpfs(backing, cfg.devices_size)
    record.append({"path": str(backing), "kind": "tmpfs"})
    for name in names:
        ssd, hdd, mountpoint = backing / name / "ssd", backing / name / "hdd", devices / name
        for path in (ssd, hdd, mountpoint):
            path.mkdir(parents=True, exist_ok=True)
        # No --cache-size or --policy yet: the tier's own defaults until the tier settles them.
        cmd = [tier, "mount", "--ssd", str(ssd), "--hdd", str(hdd), "--mode", cfg.tier_mode]
        run_quiet([*cmd, "--daemon", str(mountpoint)], f"dss-tier mount of {mountpoint}")
        record.append({"path": str(mountpoint), "kind": "tier"})
    return names


def release_devices(record: list[dict[str, str]]) -> list[str]:
    """Undo the mounts in RECORD, newest first; return the paths that are still mounted."""
    stuck = []
    for mount in reversed(record):
        path = mount["path"]
        if not os.path.ismount(path):
            continue
        tier = find_tier_binary() if mount["kind"] == "tier" else None
        attempts = ([[tier, "umount", path]] if tier else []) + [["umount", path]]
        for cmd in attempts:
            subprocess.run(cmd, capture_output=True, check=False)
            if not os.path.ismount(path):
                break
        else:
            # Still busy (a straggler holds a file open): detach it now, free it when unused.
            subprocess.run(["umount", "--lazy", path], capture_output=True, check=False)
        if os.path.ismount(path):
            stuck.append(path)
    return stuck


# --- the cluster -----------------------------------------------------------------------------


class Saio(ProcessCluster):
    s3_access_key = "test:tester"
    s3_secret_key = "testing"
    state_file = STATE_FILE
    config_type = SaioConfig
    kind = "cluster"
    _error = SaioError
    cfg: SaioConfig

    # -- addresses

    @property
    def ports(self) -> dict[str, int]:
        return dict(self._state.data.get("ports", {}))

    @property
    def port(self) -> int:
        return self.ports.get("proxy", self.cfg.port)

    @property
    def proxy_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    # -- up

    def _new_state(self) -> dict[str, Any]:
        return {
            "config": self.cfg.to_json(),
            "ports": self._pick_ports(),
            "mounts": [],
            "processes": {},
        }

    def _make_dirs(self) -> None:
        super()._make_dirs()
        for sub in ("log", "cache"):
            (self.dir / sub).mkdir(exist_ok=True)

    def _prepare(self) -> None:
        devices = provision_devices(self.cfg, self._state.data["mounts"])
        self._state.save()
        self._write_configs()
        ports = self._state.data["ports"]
        build_rings(self.dir, devices, ports, self.cfg.replicas)

    def _refuse_if_running(self) -> None:
        if not self._state.exists():
            return
        try:
            previous = Saio.load(self.dir)
        except SaioError:
            self.state_path.unlink(missing_ok=True)
            return
        if previous._procs.any_alive():
            raise SaioError(
                f"a cluster is already running in {self.dir} (dss saio down --dir {self.dir})"
            )
        previous.down()  # leftovers of a crashed run: mounts, state file

    def _pick_ports(self) -> dict[str, int]:
        if self.cfg.port and port_in_use(self.cfg.port):
            raise SaioError(f"port {self.cfg.port} is already in use on 127.0.0.1")
        picked = free_ports(5)
        proxy = self.cfg.port or picked[4]
        names = ("memcached", "account", "container", "object")
        return {**dict(zip(names, picked[:4], strict=True)), "proxy": proxy}

    def _write_configs(self) -> None:
        cfg, ports = self.cfg, self._state.data["ports"]
        common = {
            "dir": ini_value(self.dir),
            "devices": ini_value(self.dir / "devices"),
            "user": current_user(),
            "workers": cfg.workers,
        }
        object_settings = dict(cfg.object_options)
        if cfg.dss:
            object_settings = {"dssio_backend": cfg.dssio_backend, **object_settings}
        pipeline = PIPELINE if cfg.dss else PIPELINE.replace(" dss ", " ")
        rendered = {
            "swift.conf": {
                "hash_prefix": secrets.token_hex(8),
                "hash_suffix": secrets.token_hex(8),
            },
            "account-server.conf": {**common, "account_port": ports["account"]},
            "container-server.conf": {**common, "container_port": ports["container"]},
            "object-server.conf": {
                **common,
                "object_port": ports["object"],
                "object_use": "egg:swift_dss#object" if cfg.dss else "egg:swift#object",
                "object_settings": ini_lines(object_settings),
            },
            "proxy-server.conf": {
                **common,
                "proxy_port": ports["proxy"],
                "memcached_port": ports["memcached"],
                "pipeline": pipeline,
                "dss_settings": ini_lines(cfg.dss_options),
            },
        }
        for name, values in rendered.items():
            render(name, self.dir / name, values)

    def _server_cmd(self, server: str, log: Path) -> list[str]:
        conf = str(self.dir / f"{server}-server.conf")
        return swiftrun.command(self.dir / "swift.conf", log, f"swift-{server}-server", conf)

    def _start(self, memcached: str) -> None:
        log_dir = self.dir / "log"
        mc_log = log_dir / "memcached.log"
        mc_cmd = self._memcached_cmd(memcached, self._state.data["ports"]["memcached"])
        self._procs.spawn("memcached", mc_cmd, mc_log)
        for server in SWIFT_SERVERS:
            log = log_dir / f"{server}-server.log"
            self._procs.spawn(f"{server}-server", self._server_cmd(server, log), log)

    def _wait_ready(self) -> None:
        ports = self._state.data["ports"]
        checks = [("memcached", lambda: tcp_answers(ports["memcached"]))]
        for server in SWIFT_SERVERS[:-1]:
            url = f"http://127.0.0.1:{ports[server]}/healthcheck"
            checks.append((f"{server}-server", lambda url=url: http(url)[0] == 200))
        checks.append(("proxy-server", self._proxy_serves))
        self._procs.wait_ready(checks, self.cfg.start_timeout, 0.1, exited="exited at start-up")

    # -- down

    def down(self, timeout: float = 15.0) -> None:
        """Stop every process this cluster started and undo its mounts, even half-started."""
        left = self._procs.stop_all(timeout)
        stuck = release_devices(self._state.mounts())
        if left or stuck:
            self._state.save()
            raise SaioError(
                f"could not stop everything in {self.dir}: "
                f"pids {left or '-'}, mounts {stuck or '-'}"
            )
        self._state.forget()

    # -- status

    def status(self) -> dict[str, Any]:
        processes = self._procs.status("log")
        return {
            "dir": str(self.dir),
            "up": bool(processes) and all(p["alive"] for p in processes.values()),
            "dss": self.cfg.dss,
            "tier_mode": self.cfg.tier_mode or "none",
            "processes": processes,
            "ports": self.ports,
            "urls": {
                "proxy": self.proxy_url,
                "auth": self.auth_url,
                "account": self.account_url,
                "s3": self.proxy_url,
            },
            "mounts": self._mount_paths(),
        }

    def credentials(self) -> dict[str, str]:
        return {
            "user": self.user,
            "key": self.key,
            "account": self.account,
            "s3_access_key": self.s3_access_key,
            "s3_secret_key": self.s3_secret_key,
        }
