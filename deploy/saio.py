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

import contextlib
import json
import os
import pwd
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import asdict, dataclass, field
from importlib.resources import files
from pathlib import Path
from string import Template
from typing import Any

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
class SaioConfig:
    dir: Path
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
        self.dir = Path(self.dir).absolute()
        if self.tier_mode == "none":
            self.tier_mode = None

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "dir": str(self.dir)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> SaioConfig:
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        return cls(**known)

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


def port_in_use(port: int) -> bool:
    # SO_REUSEADDR like Swift's own listener, so that TIME_WAIT leftovers do not count.
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return True
    return False


def free_ports(count: int) -> list[int]:
    """COUNT distinct ports nobody listens on (all held open until all are picked)."""
    with contextlib.ExitStack() as stack:
        socks = [stack.enter_context(socket.socket()) for _ in range(count)]
        for sock in socks:
            sock.bind(("127.0.0.1", 0))
        return [sock.getsockname()[1] for sock in socks]


def tcp_answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


def http(
    url: str, method: str = "GET", headers: dict[str, str] | None = None
) -> tuple[int, dict[str, str]]:
    """(status, headers) of one request; (0, {}) when nothing answers."""
    req = urllib.request.Request(url, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=5) as resp:
            return resp.status, dict(resp.headers)
    except urllib.error.HTTPError as err:
        return err.code, dict(err.headers)
    except (OSError, urllib.error.URLError):
        return 0, {}


def read_proc(pid: int) -> tuple[str, int, list[str]] | None:
    """(state, pgid, argv) of PID, or None if there is no such process."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()
    return fields[0], int(fields[2]), [a.decode(errors="replace") for a in argv if a]


def is_ours(pid: int, cmd: list[str]) -> bool:
    """PID is alive and runs CMD (a recycled pid runs something else)."""
    info = read_proc(pid)
    return info is not None and info[0] not in ("Z", "X") and info[2] == cmd


def group_members(pgid: int, cmd: list[str]) -> list[int]:
    """Live processes of process group PGID running CMD: a server's master and its workers."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        info = read_proc(int(entry.name))
        if info and info[1] == pgid and info[0] not in ("Z", "X") and info[2] == cmd:
            pids.append(int(entry.name))
    return pids


def log_tail(path: Path, lines: int = 1) -> str:
    try:
        text = path.read_text(errors="replace").strip().splitlines()
    except OSError:
        return ""
    return " | ".join(text[-lines:])


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


class Saio:
    user = "test:tester"
    key = "testing"
    account = "AUTH_test"
    s3_access_key = "test:tester"
    s3_secret_key = "testing"

    def __init__(self, cfg: SaioConfig, state: dict[str, Any] | None = None) -> None:
        self.cfg = cfg
        self.dir = cfg.dir
        self._state: dict[str, Any] = state or {}
        self._children: dict[int, subprocess.Popen[bytes]] = {}

    # -- addresses

    @property
    def ports(self) -> dict[str, int]:
        return dict(self._state.get("ports", {}))

    @property
    def port(self) -> int:
        return self.ports.get("proxy", self.cfg.port)

    @property
    def proxy_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def auth_url(self) -> str:
        return f"{self.proxy_url}/auth/v1.0"

    @property
    def account_url(self) -> str:
        return f"{self.proxy_url}/v1/{self.account}"

    @property
    def state_path(self) -> Path:
        return self.dir / STATE_FILE

    @classmethod
    def load(cls, dir: Path | str) -> Saio:
        path = Path(dir).absolute() / STATE_FILE
        try:
            state = json.loads(path.read_text())
        except FileNotFoundError:
            raise SaioError(f"no cluster in {path.parent} (no {STATE_FILE})") from None
        except (OSError, ValueError) as err:
            raise SaioError(f"cannot read {path}: {err}") from None
        return cls(SaioConfig.from_json(state["config"]), state)

    # -- state

    def _save(self) -> None:
        tmp = self.state_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self._state, indent=2) + "\n")
        tmp.replace(self.state_path)

    def _processes(self) -> dict[str, dict[str, Any]]:
        return self._state.setdefault("processes", {})

    def _alive(self, name: str) -> bool:
        proc = self._processes()[name]
        child = self._children.get(proc["pid"])
        if child is not None:
            child.poll()  # reap it if it exited, so it does not linger as a zombie
        return is_ours(proc["pid"], proc["cmd"])

    def is_up(self) -> bool:
        procs = self._processes()
        return bool(procs) and all(self._alive(name) for name in procs)

    # -- up

    def up(self) -> None:
        """Start the cluster; return once the proxy serves authenticated requests."""
        self._refuse_if_running()
        self.cfg.validate()
        memcached = shutil.which("memcached")
        if memcached is None:
            raise SaioError("memcached is not installed (apt-get install memcached)")
        self._state = {
            "config": self.cfg.to_json(),
            "ports": self._pick_ports(),
            "mounts": [],
            "processes": {},
        }
        self.dir.mkdir(parents=True, exist_ok=True)
        for sub in ("log", "cache"):
            (self.dir / sub).mkdir(exist_ok=True)
        self._save()
        try:
            devices = provision_devices(self.cfg, self._state["mounts"])
            self._save()
            self._write_configs()
            ports = self._state["ports"]
            build_rings(self.dir, devices, ports, self.cfg.replicas)
            self._start(memcached)
            self._wait_ready()
        except BaseException:
            with contextlib.suppress(Exception):
                self.down()
            raise

    def _refuse_if_running(self) -> None:
        if not self.state_path.exists():
            return
        try:
            previous = Saio.load(self.dir)
        except SaioError:
            self.state_path.unlink(missing_ok=True)
            return
        if any(previous._alive(name) for name in previous._processes()):
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
        cfg, ports = self.cfg, self._state["ports"]
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
        return [
            sys.executable,
            "-m",
            "swift_dss.deploy.swiftrun",
            "--swift-conf",
            str(self.dir / "swift.conf"),
            "--log-file",
            str(log),
            f"swift-{server}-server",
            str(self.dir / f"{server}-server.conf"),
        ]

    def _start(self, memcached: str) -> None:
        log_dir = self.dir / "log"
        mc_log = log_dir / "memcached.log"
        mc_cmd = [
            memcached,
            "-l",
            "127.0.0.1",
            "-p",
            str(self._state["ports"]["memcached"]),
            "-U",
            "0",
            "-m",
            "64",
        ]
        if os.geteuid() == 0:
            mc_cmd += ["-u", "root"]  # memcached refuses to run as root without it
        self._spawn("memcached", mc_cmd, mc_log)
        for server in SWIFT_SERVERS:
            log = log_dir / f"{server}-server.log"
            self._spawn(f"{server}-server", self._server_cmd(server, log), log)

    def _spawn(self, name: str, cmd: list[str], log: Path) -> None:
        # Own session: the servers outlive `dss saio up`, and each one's workers share its
        # process group, which `down` uses to find them.
        with open(log, "ab") as out:
            child = subprocess.Popen(
                cmd,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                cwd=self.dir,
                start_new_session=True,
            )
        self._children[child.pid] = child
        self._processes()[name] = {"pid": child.pid, "cmd": cmd, "log": str(log)}
        self._save()

    def _wait_ready(self) -> None:
        ports = self._state["ports"]
        checks = [("memcached", lambda: tcp_answers(ports["memcached"]))]
        for server in SWIFT_SERVERS[:-1]:
            url = f"http://127.0.0.1:{ports[server]}/healthcheck"
            checks.append((f"{server}-server", lambda url=url: http(url)[0] == 200))
        checks.append(("proxy-server", self._proxy_serves))
        deadline = time.monotonic() + self.cfg.start_timeout
        for name, check in checks:
            while not check():
                self._check_started()
                if time.monotonic() > deadline:
                    raise SaioError(
                        f"{name} did not answer within {self.cfg.start_timeout:.0f} s "
                        f"(see {self._processes()[name]['log']})"
                    )
                time.sleep(0.1)

    def _check_started(self) -> None:
        for name, proc in self._processes().items():
            if not self._alive(name):
                tail = log_tail(Path(proc["log"]))
                raise SaioError(f"{name} exited at start-up: {tail or 'no output'} ({proc['log']})")

    def _proxy_serves(self) -> bool:
        """tempauth issues a token and the account answers (backends and memcached work)."""
        try:
            url, token = self.get_token()
        except SaioError:
            return False
        return 200 <= http(url, "HEAD", {"X-Auth-Token": token})[0] < 300

    def get_token(self) -> tuple[str, str]:
        """(storage URL, token) from tempauth."""
        status, headers = http(
            self.auth_url, headers={"X-Auth-User": self.user, "X-Auth-Key": self.key}
        )
        if status != 200 or "X-Auth-Token" not in headers:
            raise SaioError(f"tempauth at {self.auth_url} answered {status or 'nothing'}")
        return headers.get("X-Storage-Url", self.account_url), headers["X-Auth-Token"]

    # -- down

    def down(self, timeout: float = 15.0) -> None:
        """Stop every process this cluster started and undo its mounts, even half-started."""
        procs = list(self._processes().values())
        self._signal_all(procs, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while self._survivors(procs) and time.monotonic() < deadline:
            time.sleep(0.1)
        if self._survivors(procs):
            self._signal_all(procs, signal.SIGKILL)
            time.sleep(0.5)
        left = self._survivors(procs)
        stuck = release_devices(self._state.get("mounts", []))
        if left or stuck:
            self._save()
            raise SaioError(
                f"could not stop everything in {self.dir}: "
                f"pids {left or '-'}, mounts {stuck or '-'}"
            )
        self.state_path.unlink(missing_ok=True)
        self._state["processes"] = {}
        self._state["mounts"] = []

    def _survivors(self, procs: list[dict[str, Any]]) -> list[int]:
        for child in self._children.values():
            child.poll()
        return [pid for p in procs for pid in group_members(p["pid"], p["cmd"])]

    def _signal_all(self, procs: list[dict[str, Any]], sig: signal.Signals) -> None:
        # Each server runs in its own process group (its pid); only members running the
        # recorded command are signalled, so a recycled pid is never hit.
        for proc in reversed(procs):
            for pid in group_members(proc["pid"], proc["cmd"]):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, sig)

    # -- status

    def status(self) -> dict[str, Any]:
        processes = {
            name: {"pid": proc["pid"], "alive": self._alive(name), "log": proc["log"]}
            for name, proc in self._processes().items()
        }
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
            "mounts": [m["path"] for m in self._state.get("mounts", [])],
        }

    def credentials(self) -> dict[str, str]:
        return {
            "user": self.user,
            "key": self.key,
            "account": self.account,
            "s3_access_key": self.s3_access_key,
            "s3_secret_key": self.s3_secret_key,
        }
