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
"""

from __future__ import annotations

import contextlib
import json
import os
import pwd
import re
import secrets
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from importlib.resources import files
from pathlib import Path
from string import Template
from typing import Any

from swift_dss.deploy import swiftrun
from swift_dss.deploy.cluster_config import ClusterConfig
from swift_dss.deploy.object_tuning import object_options
from swift_dss.deploy.probes import free_ports, http, port_in_use, tcp_answers
from swift_dss.deploy.process_cluster import ProcessCluster
from swift_dss.deploy.processes import read_proc as read_proc
from swift_dss.deploy.processes import runs
from swift_dss.deploy.rings import build_rings
from swift_dss.dssio.detect import TIER_FSTYPE
from swift_dss.policies import policy_path

STATE_FILE = "saio.json"
SWIFT_SERVERS = ("account", "container", "object", "proxy")
TIER_MODES = ("hdd", "ssd", "lru", "dss", "tiered")
#: Device model profiles dss-tier knows (each may carry ":key=value,..." overrides).
MODEL_PROFILES = ("none", "st1000nm0011", "intel710", "hdd", "ssd")
DEFAULT_CACHE_SIZE = "256MiB"
#: How long a dss-tier daemon may take to show its mount, and to write back at unmount.
TIER_MOUNT_TIMEOUT = 30.0
TIER_UMOUNT_TIMEOUT = 300
_SIZE = re.compile(r"(\d+)\s*(b|k|kb|kib|m|mb|mib|g|gb|gib|t|tb|tib)?", re.IGNORECASE)

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
    #: A dss-tier mode for every device (see docs/tier.md), or None / "none" for plain
    #: directories on a tmpfs.
    tier_mode: str | None = "dss"
    #: The SSD cache of each device. Mode ssd pins everything on the SSD, so there the
    #: default is the whole backing tmpfs (devices_size) unless another size is set.
    tier_cache_size: str = DEFAULT_CACHE_SIZE
    #: A policy shipped in swift_dss/policies/ by name, or a policy file's path.
    tier_policy: str = "reference"
    tier_ssd_model: str = "none"
    tier_hdd_model: str = "none"
    devices: int = 1
    replicas: int = 1
    workers: int = 1
    #: The tmpfs holding the devices (tier modes: every device's SSD and HDD directories).
    devices_size: str = "4g"
    dss_options: dict[str, str] = field(default_factory=dict)
    object_options: dict[str, str] = field(default_factory=dict)
    #: Settings of the proxy app (e.g. node_timeout, conn_timeout for slow modelled devices).
    proxy_options: dict[str, str] = field(default_factory=dict)
    #: At `down`, kill the tier daemons instead of unmounting them: the dirty blocks are
    #: not written back, so the devices' data is lost. For runs that measure and throw the
    #: cluster away, where the write-back through an HDD model takes minutes.
    tier_discard: bool = False
    start_timeout: float = 90.0

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.tier_mode == "none":
            self.tier_mode = None

    def tier_cache(self) -> str:
        """The --cache-size each device's dss-tier mount gets."""
        if self.tier_mode == "ssd" and self.tier_cache_size == DEFAULT_CACHE_SIZE:
            return self.devices_size
        return self.tier_cache_size

    def tier_policy_file(self) -> Path:
        try:
            return policy_path(self.tier_policy).absolute()
        except FileNotFoundError as err:
            raise SaioError(str(err)) from None

    def validate(self) -> None:
        if self.tier_mode is not None and self.tier_mode not in TIER_MODES:
            raise SaioError(f"unknown tier mode {self.tier_mode!r} (none, {', '.join(TIER_MODES)})")
        if not 0 <= self.port < 65536:
            raise SaioError(f"port {self.port} is out of range")
        if self.devices < 1 or self.workers < 0:
            raise SaioError("devices must be at least 1 and workers at least 0")
        if not 1 <= self.replicas <= self.devices:
            raise SaioError(f"{self.replicas} replicas need 1 to {self.devices} devices")
        if self.tier_mode is None:
            return
        what = "tier cache size" if self.tier_cache() == self.tier_cache_size else "devices size"
        if not size_bytes(self.tier_cache()):
            raise SaioError(f"{what} {self.tier_cache()!r} is not a size such as 256MiB")
        self.tier_policy_file()
        for which, model in (("SSD", self.tier_ssd_model), ("HDD", self.tier_hdd_model)):
            if model.split(":", 1)[0].lower() not in MODEL_PROFILES:
                raise SaioError(
                    f"unknown {which} model {model!r} ({', '.join(MODEL_PROFILES)}, "
                    "optionally with :key=value,...)"
                )
        tier_binary()


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
    """The template swift_dss/deploy/templates/TEMPLATE with its ${names} replaced by VALUES."""
    text = files("swift_dss.deploy").joinpath("templates", template).read_text()
    return Template(text).substitute({k: str(v) for k, v in values.items()})


def render(template: str, dest: Path, values: dict[str, object]) -> None:
    dest.write_text(render_text(template, values))


def size_bytes(text: str) -> int:
    """Bytes in a size as dss-tier reads it ("256MiB", "4g", "4096"); 0 if it is not one."""
    match = _SIZE.fullmatch(str(text).strip())
    if match is None:
        return 0
    unit = (match.group(2) or "b").lower()[0]
    return int(match.group(1)) << {"b": 0, "k": 10, "m": 20, "g": 30, "t": 40}[unit]


# --- devices ---------------------------------------------------------------------------------


def device_names(count: int) -> list[str]:
    return [f"d{i}" for i in range(1, count + 1)]


def find_tier_binary() -> str | None:
    return shutil.which("dss-tier") or shutil.which(
        "dss-tier", path=str(Path(sys.executable).parent)
    )


def tier_binary() -> str:
    """The dss-tier binary, or a one-line SaioError saying why the tier cannot run."""
    tier = find_tier_binary()
    if tier is None:
        raise SaioError(
            "the dss-tier binary is missing (make setup builds it; --tier-mode none runs "
            "on plain directories)"
        )
    if shutil.which("fusermount3") is None or not Path("/dev/fuse").exists():
        raise SaioError("dss-tier mounts need FUSE: /dev/fuse and fusermount3 (apt-get fuse3)")
    return tier


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


def _unescape(field: str) -> str:
    # mountinfo writes space, tab, newline and backslash in paths as octal escapes.
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


def mount_type(path: str | Path) -> str | None:
    """The filesystem type mounted on PATH (the topmost mount), or None.

    Read from mountinfo rather than by stat, which fails on a FUSE mount whose daemon died
    and would let such a mount go unnoticed.
    """
    target = os.path.abspath(path)
    found = None
    with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as f:
        for line in f:
            head, sep, tail = line.partition(" - ")
            fields = head.split()
            if sep and len(fields) > 4 and _unescape(fields[4]) == target:
                found = tail.split()[0] if tail.split() else None
    return found


# dss-tier daemons this process started: reaped once they exit, so none lingers as a zombie
# in a long-lived caller (a test session).
_tier_children: list[subprocess.Popen[bytes]] = []


def _reap_tier_children() -> None:
    _tier_children[:] = [c for c in _tier_children if c.poll() is None]


def mount_tier(cfg: SaioConfig, tier: str, backing: Path, mountpoint: Path, log: Path) -> dict:
    """Start a dss-tier daemon for MOUNTPOINT and return its mount record, without waiting
    for the mount (`wait_tier_mounted` does).

    The daemon runs in the foreground of a session of its own (not `--daemon`, which
    silences it) so that its messages, a refused option included, land in LOG.
    """
    ssd, hdd = backing / "ssd", backing / "hdd"
    for path in (ssd, hdd, mountpoint):
        path.mkdir(parents=True, exist_ok=True)
    cmd = [
        tier, "mount",
        "--ssd", str(ssd),
        "--hdd", str(hdd),
        "--cache-size", cfg.tier_cache(),
        "--policy", str(cfg.tier_policy_file()),
        "--mode", str(cfg.tier_mode),
        "--ssd-model", cfg.tier_ssd_model,
        "--hdd-model", cfg.tier_hdd_model,
        str(mountpoint),
    ]  # fmt: skip
    with open(log, "ab") as out:
        # Where this daemon's messages start: the log may hold those of an earlier run.
        start = out.tell()
        child = subprocess.Popen(
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    _tier_children.append(child)
    return {
        "path": str(mountpoint),
        "kind": "tier",
        "pid": child.pid,
        "cmd": cmd,
        "log": str(log),
        "log_start": start,
    }


def _tier_child(pid: int) -> subprocess.Popen[bytes] | None:
    return next((c for c in _tier_children if c.pid == pid), None)


def _tier_daemon_alive(mount: dict[str, Any]) -> bool:
    # A daemon this process started is judged by its Popen: until it has exec'd, its
    # command line is still ours, and a check by command line would think it gone.
    child = _tier_child(mount.get("pid", 0))
    if child is not None:
        return child.poll() is None
    return bool(mount.get("pid")) and runs(mount["pid"], [mount.get("cmd", [])])


def wait_tier_mounted(mount: dict[str, Any]) -> None:
    deadline = time.monotonic() + TIER_MOUNT_TIMEOUT
    while mount_type(mount["path"]) != TIER_FSTYPE:
        if not _tier_daemon_alive(mount):
            reason = tier_log_error(Path(mount["log"]), mount.get("log_start", 0))
            raise SaioError(f"dss-tier mount of {mount['path']} failed: {reason} ({mount['log']})")
        if time.monotonic() > deadline:
            raise SaioError(
                f"dss-tier mount of {mount['path']} did not appear within "
                f"{TIER_MOUNT_TIMEOUT:.0f} s (see {mount['log']})"
            )
        time.sleep(0.05)


def tier_log_error(log: Path, start: int = 0) -> str:
    """The daemon's error in LOG from byte START on: its last "dss-tier: " line (a parse
    error continues on further lines, whose last one says what was wrong), and that last
    line if different."""
    try:
        with open(log, "rb") as f:
            f.seek(start)
            lines = [line.strip() for line in f.read().decode(errors="replace").splitlines()]
    except OSError:
        return "no output"
    lines = [line for line in lines if line]
    if not lines:
        return "no output"
    first = next((line for line in reversed(lines) if line.startswith("dss-tier: ")), lines[-1])
    return first if first == lines[-1] else f"{first}: {lines[-1]}"


def provision_devices(cfg: SaioConfig, record: list[dict[str, Any]], log_dir: Path) -> list[str]:
    """Make the Swift devices under DIR/devices; return their names.

    Every mount made is appended to RECORD ({"path", "kind"}, and for a tier mount its
    daemon's "pid", "cmd" and "log") as soon as it is started, so that `release_devices`
    can undo a partial provisioning. Devices must support large user xattrs, which rules
    out ext4 here: plain devices are directories on a tmpfs; with a tier mode each device
    is a dss-tier mount whose SSD and HDD directories sit on a tmpfs.
    """
    names = device_names(cfg.devices)
    devices = cfg.dir / "devices"
    if cfg.tier_mode is None:
        mount_tmpfs(devices, cfg.devices_size)
        record.append({"path": str(devices), "kind": "tmpfs"})
        for name in names:
            (devices / name).mkdir()
        return names

    tier = tier_binary()
    backing = cfg.dir / "backing"
    mount_tmpfs(backing, cfg.devices_size)
    record.append({"path": str(backing), "kind": "tmpfs"})
    started = []
    for name in names:
        mount = mount_tier(cfg, tier, backing / name, devices / name, log_dir / f"tier-{name}.log")
        record.append(mount)
        started.append(mount)
    # The daemons start side by side; then each must show its mount.
    for mount in started:
        wait_tier_mounted(mount)
    return names


def _unmount(mount: dict[str, Any]) -> None:
    path = mount["path"]
    attempts = []
    if mount["kind"] == "tier":
        tier = find_tier_binary()
        if tier:
            # Returns once the daemon has written every dirty block back and exited.
            attempts.append([tier, "umount", "--timeout", str(TIER_UMOUNT_TIMEOUT), path])
        attempts.append(["fusermount3", "-u", path])
    attempts.append(["umount", path])
    for cmd in attempts:
        if mount_type(path) is None:
            return
        subprocess.run(cmd, capture_output=True, check=False)


def _settle_tier_daemon(mount: dict[str, Any], timeout: float = 5.0) -> None:
    """Wait until a starting daemon has shown its mount or exited (an up that failed on
    another device may leave one half-started), so that what follows sees which it is."""
    deadline = time.monotonic() + timeout
    while (
        _tier_daemon_alive(mount)
        and mount_type(mount["path"]) is None
        and time.monotonic() < deadline
    ):
        time.sleep(0.05)


def _stop_tier_daemon(mount: dict[str, Any]) -> None:
    """A daemon still running after its unmount (stuck, or never mounted) is killed: only
    the daemon, not its process group, so that FUSE's auto-unmount helper still lets go."""
    deadline = time.monotonic() + 5
    while _tier_daemon_alive(mount) and time.monotonic() < deadline:
        time.sleep(0.05)
    if _tier_daemon_alive(mount):
        with contextlib.suppress(ProcessLookupError):
            os.kill(mount["pid"], signal.SIGKILL)
        child = _tier_child(mount["pid"])
        if child is not None:
            child.wait(10)


def discard_tier_daemons(record: list[dict[str, Any]]) -> None:
    """Kill every tier daemon in RECORD without its final write-back (their dirty data is
    lost); their FUSE mounts are then released by `release_devices` like any other."""
    for mount in record:
        if mount["kind"] == "tier":
            _settle_tier_daemon(mount)
            if _tier_daemon_alive(mount):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(mount["pid"], signal.SIGKILL)
    for mount in record:
        child = _tier_child(mount.get("pid", 0)) if mount["kind"] == "tier" else None
        if child is not None:
            child.wait(10)


def release_devices(record: list[dict[str, Any]], discard: bool = False) -> list[str]:
    """Undo the mounts in RECORD, newest first; return the paths that are still mounted.
    DISCARD kills the tier daemons first, skipping their write-back."""
    if discard:
        discard_tier_daemons(record)
    stuck = []
    for mount in reversed(record):
        path = mount["path"]
        if mount["kind"] == "tier":
            _settle_tier_daemon(mount)
        _unmount(mount)
        if mount["kind"] == "tier" and mount_type(path) is None:
            _stop_tier_daemon(mount)
        if mount_type(path) is not None:
            # Still busy (a straggler holds a file open), or its daemon is dead: detach it
            # now, free it when unused.
            subprocess.run(["umount", "--lazy", path], capture_output=True, check=False)
        if mount_type(path) is not None:
            stuck.append(path)
    _reap_tier_children()
    return stuck


def tier_stats(mountpoint: str | Path) -> dict[str, Any]:
    """`dss-tier stats --json` of a mounted tier."""
    tier = tier_binary()
    try:
        proc = subprocess.run(
            [tier, "stats", "--json", str(mountpoint)],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise SaioError(f"dss-tier stats of {mountpoint} got no answer within 60 s") from None
    if proc.returncode != 0:
        reason = (proc.stderr or proc.stdout).strip().splitlines()
        raise SaioError(f"dss-tier stats of {mountpoint} failed: {reason[-1] if reason else ''}")
    return json.loads(proc.stdout)


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
        try:
            devices = provision_devices(self.cfg, self._state.data["mounts"], self.dir / "log")
        finally:
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
        object_settings = object_options(cfg.object_options, tiered=cfg.tier_mode is not None)
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
                "proxy_settings": ini_lines(cfg.proxy_options),
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
        return {name: tier_stats(m["path"]) for name, m in self.tier_mounts().items()}

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
                    stats = tier_stats(mount["path"])
                    tier.update(mode=stats.get("mode"), pid=stats.get("pid"))
                except SaioError as err:
                    tier["error"] = str(err)
            info["tier"] = tier
            out[name] = info
        return out

    def status(self) -> dict[str, Any]:
        processes = self._procs.status("log")
        devices = self.device_status()
        processes_up = bool(processes) and all(p["alive"] for p in processes.values())
        return {
            "dir": str(self.dir),
            "up": processes_up and bool(devices) and all(d["mounted"] for d in devices.values()),
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
