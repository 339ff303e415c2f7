"""An all-in-one Swift cluster on loopback: memcached, account, container, object and proxy
servers, all state under one directory, so that several clusters can run side by side.

Layout of DIR:
    saio.json          what is running (config, ports, pids, mounts): read by `Saio.load`
    swift.conf, *-server.conf, *.builder, *.ring.gz
    devices/           one dN per device: dss-tier mounts (tier modes), or a tmpfs of
                       plain directories (tier mode none)
    backing/           tier modes: a tmpfs holding each device's emulated SSD and HDD
                       directories (backing/dN/ssd, backing/dN/hdd)
    log/               one log file per process, and tier-dN.log per dss-tier daemon
    cache/             recon cache

Its settings are `SaioConfig` (saio_config.py); its devices are made and undone by
devices.py, which drives dss-tier through swift_dss.tierctl.
"""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Any

from swift_dss.deploy import swiftrun
from swift_dss.deploy.devices import device_names, provision_devices, release_devices
from swift_dss.deploy.object_tuning import object_options
from swift_dss.deploy.probes import free_ports, http, port_in_use, tcp_answers
from swift_dss.deploy.process_cluster import ProcessCluster
from swift_dss.deploy.rings import build_rings, storage_policies
from swift_dss.deploy.saio_config import (
    DEFAULT_CACHE_SIZE,
    TIER_MODES,
    SaioConfig,
    SaioError,
    tier_binary,
    tier_errors,
)
from swift_dss.deploy.swift_config import PIPELINE, current_user, ini_lines, ini_value, render
from swift_dss.deploy.tempauth import tempauth_options
from swift_dss.dssio.detect import TIER_FSTYPE
from swift_dss.mountinfo import mount_type
from swift_dss.procinfo import read_proc
from swift_dss.tierctl import report

#: What the command line, the benches, the experiments and the tests import from here.
__all__ = [
    "DEFAULT_CACHE_SIZE",
    "TIER_MODES",
    "Saio",
    "SaioConfig",
    "SaioError",
    "device_serves",
    "mount_type",
    "read_proc",
]

STATE_FILE = "saio.json"
SWIFT_SERVERS = ("account", "container", "object", "proxy")


def device_serves(device: dict[str, Any]) -> bool:
    """A device is mounted and, on a tier mount, its daemon answers (a mount whose daemon
    died stays listed, and answers every request with ENOTCONN)."""
    return bool(device["mounted"]) and "error" not in (device["tier"] or {})


class Saio(ProcessCluster):
    s3_access_key = "test:tester"
    s3_secret_key = "testing"
    state_file = STATE_FILE
    config_type = SaioConfig
    kind = "cluster"
    state_keys = {"ports": dict[str, int]}
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
        try:
            devices = provision_devices(self.cfg, self._state.data["mounts"], self.dir / "log")
        finally:
            self._state.save()
        self._write_configs()
        ports = self._state.data["ports"]
        policies = storage_policies(self.dir / "swift.conf")
        build_rings(self.dir, devices, ports, self.cfg.replicas, policies)

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
        object_settings = object_options(cfg.object_options, tiered=cfg.tier_mode is not None)
        if cfg.dss:
            object_settings = {"dssio_backend": cfg.dssio_backend, **object_settings}
        # The baseline is stock Swift: none of the project's filters.
        stock = " ".join(f for f in PIPELINE.split() if f not in {"dss", "s3_storage_class"})
        pipeline = PIPELINE if cfg.dss else stock
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
                "proxy_settings": ini_lines(cfg.proxy_options),
                "tempauth_users": ini_lines(tempauth_options(cfg.tempauth_users)),
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
        stuck = release_devices(self._state.mounts(), discard=self.cfg.tier_discard)
        if left or stuck:
            self._state.save()
            raise SaioError(
                f"could not stop everything in {self.dir}: "
                f"pids {left or '-'}, mounts {stuck or '-'}"
            )
        self._state.forget()

    # -- status

    def tier_mounts(self) -> dict[str, dict[str, Any]]:
        """Device name -> its tier mount record, for the devices that are dss-tier mounts."""
        return {Path(m["path"]).name: m for m in self._state.mounts() if m.get("kind") == "tier"}

    def tier_stats(self) -> dict[str, dict[str, Any]]:
        """Device name -> `dss-tier stats --json` of its mount ({} without a tier)."""
        return {name: self._tier_report(m["path"]).raw for name, m in self.tier_mounts().items()}

    @staticmethod
    def _tier_report(mountpoint: str) -> report.TierStats:
        with tier_errors():
            return report.stats(mountpoint, binary=tier_binary())

    def device_status(self) -> dict[str, dict[str, Any]]:
        """Device name -> where it lives and, for a tier mount, the daemon's mode and pid."""
        if self.cfg.tier_mode is None:
            devices = self.dir / "devices"
            mounted = mount_type(devices) is not None
            return {
                name: {"path": str(devices / name), "tier": None, "mounted": mounted}
                for name in device_names(self.cfg.devices)
            }
        out: dict[str, dict[str, Any]] = {}
        for name, mount in self.tier_mounts().items():
            info: dict[str, Any] = {"path": mount["path"], "log": mount.get("log")}
            info["mounted"] = mount_type(mount["path"]) == TIER_FSTYPE
            tier: dict[str, Any] = {"mode": self.cfg.tier_mode, "pid": None}
            if info["mounted"]:
                try:
                    stats = self._tier_report(mount["path"])
                    tier.update(mode=stats.mode, pid=stats.pid)
                except SaioError as err:
                    tier["error"] = str(err)
            info["tier"] = tier
            out[name] = info
        return out

    def status(self) -> dict[str, Any]:
        """Every process and device, with "up" when all of them run and serve."""
        processes = self._procs.status("log")
        devices = self.device_status()
        processes_up = bool(processes) and all(p["alive"] for p in processes.values())
        return {
            "dir": str(self.dir),
            "up": processes_up and bool(devices) and all(map(device_serves, devices.values())),
            "dss": self.cfg.dss,
            "tier_mode": self.cfg.tier_mode or "none",
            "processes": processes,
            "devices": devices,
            "ports": self.ports,
            "urls": {
                "proxy": self.proxy_url,
                "auth": self.auth_url,
                "account": self.account_url,
                "s3": self.proxy_url,
            },
            "mounts": self._mount_paths(),
        }

    def cpu_seconds(self) -> float:
        """CPU time the cluster's servers and memcached have used (tier daemons excluded)."""
        return self._procs.cpu_seconds()

    def credentials(self) -> dict[str, str]:
        return {
            "user": self.user,
            "key": self.key,
            "account": self.account,
            "s3_access_key": self.s3_access_key,
            "s3_secret_key": self.s3_secret_key,
        }
