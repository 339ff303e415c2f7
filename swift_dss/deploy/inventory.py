"""The inventory of a multi-node swift-dss cluster: what `dss deploy generate` reads.

The format (YAML) is documented in docs/deployment.md; `load_inventory` turns a file into an
`Inventory` and refuses anything inconsistent with a one-line reason.
"""

from __future__ import annotations

import ipaddress
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from swift_dss.deploy.tempauth import tempauth_options
from swift_dss.formats import ClassError, Limits
from swift_dss.formats.headers import parse_flag
from swift_dss.settable_classes import SettableClasses
from swift_dss.tierctl.options import (
    META_WRITES,
    TIER_MODES,
    cache_size_bytes,
    meta_memory_error,
    models_error,
)

#: Swift's customary ports; each storage node runs all three servers.
DEFAULT_PORTS = {"account": 6202, "container": 6201, "object": 6200}
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$")
#: A Unix user name as Debian's adduser takes it (NAME_REGEX), upper case allowed.
_USER = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*\$?$")
#: Whole numbers as Swift and memcached read them: ASCII digits only.
_DIGITS = re.compile(r"[0-9]+")
#: What a unit file's RequiresMountsFor= cannot hold in a path: it splits the list on
#: whitespace, and systemd documents no quoting for it.
_MOUNT_PATH_BAD = re.compile(r"[\s\"'\\]")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
#: The settings a tiered device's dss-tier unit is made from (generate.tier_command).
TIER_KEYS = ("mode", "cache_size", "policy", "ssd_model", "hdd_model", "meta_memory",
             "meta_writes", "warm")  # fmt: skip


class InventoryError(Exception):
    """An inventory that cannot be deployed, with a one-line reason."""


@dataclass
class Device:
    name: str
    weight: float = 100.0
    #: Backing directories of the device's dss-tier mount; both or neither.
    ssd: str | None = None
    hdd: str | None = None
    #: Per-device overrides of the cluster's tier settings (mode, cache_size, policy, ...).
    tier: dict[str, str] = field(default_factory=dict)

    @property
    def tiered(self) -> bool:
        return self.ssd is not None


@dataclass
class StorageNode:
    name: str
    ip: str
    zone: int
    region: int = 1
    replication_ip: str | None = None
    devices: list[Device] = field(default_factory=list)


@dataclass
class ProxyNode:
    name: str
    ip: str
    port: int = 8080
    bind_ip: str = "0.0.0.0"


@dataclass
class Cluster:
    replicas: int = 3
    part_power: int = 10
    min_part_hours: int = 1
    hash_path_prefix: str = ""
    hash_path_suffix: str = ""
    swift_dir: str = "/etc/swift"
    devices_root: str = "/srv/node"
    user: str = "swift"
    bin_dir: str = "/usr/local/bin"
    mount_check: bool = True
    #: put_timing in the proxy, object and container pipelines: a log line per PUT with
    #: its steps.
    put_timing: bool = False
    workers: str = "auto"
    #: The proxies' workers; empty: the same as every other server's.
    proxy_workers: str = ""
    ports: dict[str, int] = field(default_factory=lambda: dict(DEFAULT_PORTS))
    memcache_servers: list[str] = field(default_factory=list)
    #: Options of [object-replicator]; sync_method is always ssync.
    replicator: dict[str, str] = field(default_factory=dict)


@dataclass
class Inventory:
    cluster: Cluster
    proxies: list[ProxyNode]
    storage: list[StorageNode]
    #: [filter:dss] options of every proxy.
    dss: dict[str, str] = field(default_factory=dict)
    #: Extra [app:proxy-server] options of every proxy (timeouts, ...).
    proxy_server: dict[str, str] = field(default_factory=dict)
    #: Extra [filter:cache] options of every proxy (memcache_max_connections, timeouts).
    memcache: dict[str, str] = field(default_factory=dict)
    #: Extra [app:object-server] options of every storage node.
    object_server: dict[str, str] = field(default_factory=dict)
    #: dss-tier settings for tiered devices: mode, cache_size, policy, ssd_model, hdd_model,
    #: meta_memory, meta_writes.
    tier: dict[str, str] = field(default_factory=dict)
    #: tempauth users, "account:user" -> "key [groups]"; empty means no tempauth users.
    tempauth_users: dict[str, str] = field(default_factory=dict)

    @property
    def devices(self) -> list[tuple[StorageNode, Device]]:
        return [(node, dev) for node in self.storage for dev in node.devices]

    @property
    def memcache_servers(self) -> list[str]:
        return self.cluster.memcache_servers or [f"{p.ip}:11211" for p in self.proxies]


# --- parsing -----------------------------------------------------------------------------------


def _strings(value: Any, what: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise InventoryError(f"{what} must be a mapping of option to value")
    out = {}
    for key, val in value.items():
        if isinstance(val, bool):
            val = "true" if val else "false"
        if isinstance(val, dict | list) or val is None:
            raise InventoryError(f"{what}.{key} must be a single value")
        out[str(key)] = str(val)
    return out


def _fields(cls: type, data: Any, what: str, required: tuple[str, ...] = ()) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise InventoryError(f"{what} must be a mapping")
    known = set(cls.__dataclass_fields__)  # type: ignore[attr-defined]
    unknown = sorted(set(data) - known)
    if unknown:
        raise InventoryError(
            f"{what}: unknown key {unknown[0]!r} (known: {', '.join(sorted(known))})"
        )
    missing = [k for k in required if k not in data]
    if missing:
        raise InventoryError(f"{what}: {missing[0]!r} is required")
    return dict(data)


def _text(value: Any, what: str) -> str:
    """A single YAML value as text: a string, or a number YAML read as one."""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise InventoryError(f"{what} must be a single text value, not {value!r}")
    return str(value)


def _ip(value: Any, what: str) -> str:
    try:
        return str(ipaddress.ip_address(str(value)))
    except ValueError:
        raise InventoryError(f"{what}: {value!r} is not an IP address") from None


def _name(value: Any, what: str) -> str:
    if not isinstance(value, str) or not _NAME.match(value):
        raise InventoryError(f"{what}: name {value!r} must be letters, digits, '.', '_' or '-'")
    return value


def _int(value: Any, what: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise InventoryError(f"{what} must be an integer from {low} to {high}, not {value!r}")
    return value


def parse_device(data: Any, what: str) -> Device:
    if isinstance(data, str):
        data = {"name": data}
    raw = _fields(Device, data, what, ("name",))
    weight = raw.get("weight", 100.0)
    if isinstance(weight, bool) or not isinstance(weight, int | float) or not math.isfinite(weight):
        raise InventoryError(f"{what}: weight must be a number, not {weight!r}")
    dev = Device(
        name=_name(raw["name"], what),
        weight=float(weight),
        ssd=None if raw.get("ssd") is None else str(raw["ssd"]),
        hdd=None if raw.get("hdd") is None else str(raw["hdd"]),
        tier=_strings(raw.get("tier"), f"{what}.tier"),
    )
    if (dev.ssd is None) != (dev.hdd is None):
        raise InventoryError(f"{what}: a tiered device needs both ssd and hdd paths")
    if dev.tier and not dev.tiered:
        raise InventoryError(f"{what}: tier settings need a tiered device (ssd and hdd paths)")
    if reason := _tier_error(dev.tier):
        raise InventoryError(f"{what}.tier: {reason}")
    for key, path in (("ssd", dev.ssd), ("hdd", dev.hdd)):
        if path is not None and not path.startswith("/"):
            raise InventoryError(f"{what}: {path!r} must be an absolute path")
        if path is not None and _MOUNT_PATH_BAD.search(path):
            raise InventoryError(
                f"{what}.{key}: {path!r} must not contain whitespace, quotes or backslashes "
                "(systemd's RequiresMountsFor= of its tier unit could not hold it)"
            )
    if dev.weight <= 0:
        raise InventoryError(f"{what}: weight must be positive")
    return dev


def parse_storage(data: Any, what: str) -> StorageNode:
    raw = _fields(StorageNode, data, what, ("name", "ip", "zone", "devices"))
    devices = raw["devices"]
    if not isinstance(devices, list) or not devices:
        raise InventoryError(f"{what}: devices must be a non-empty list")
    node = StorageNode(
        name=_name(raw["name"], what),
        ip=_ip(raw["ip"], f"{what}.ip"),
        zone=_int(raw["zone"], f"{what}.zone", 0, 2**31),
        region=_int(raw.get("region", 1), f"{what}.region", 0, 2**31),
        replication_ip=None
        if raw.get("replication_ip") is None
        else _ip(raw["replication_ip"], f"{what}.replication_ip"),
        devices=[parse_device(d, f"{what}.devices[{i}]") for i, d in enumerate(devices)],
    )
    names = [d.name for d in node.devices]
    if len(set(names)) != len(names):
        raise InventoryError(f"{what}: device names repeat")
    return node


def parse_proxy(data: Any, what: str) -> ProxyNode:
    raw = _fields(ProxyNode, data, what, ("name", "ip"))
    return ProxyNode(
        name=_name(raw["name"], what),
        ip=_ip(raw["ip"], f"{what}.ip"),
        port=_int(raw.get("port", 8080), f"{what}.port", 1, 65535),
        bind_ip=_ip(raw.get("bind_ip", "0.0.0.0"), f"{what}.bind_ip"),
    )


def parse_cluster(data: Any) -> Cluster:
    raw = _fields(Cluster, data or {}, "cluster")
    cluster = Cluster()
    for key, value in raw.items():
        if key == "ports":
            if value is not None and not isinstance(value, dict):
                raise InventoryError(
                    "cluster.ports must be a mapping of account, container and object to a port"
                )
            ports = {**DEFAULT_PORTS, **(value or {})}
            if set(ports) != set(DEFAULT_PORTS):
                raise InventoryError("cluster.ports: only account, container and object")
            cluster.ports = {k: _int(v, f"cluster.ports.{k}", 1, 65535) for k, v in ports.items()}
        elif key == "memcache_servers":
            if not isinstance(value, list):
                raise InventoryError("cluster.memcache_servers must be a list of host:port")
            cluster.memcache_servers = [str(v) for v in value]
        elif key == "replicator":
            cluster.replicator = _strings(value, "cluster.replicator")
        elif key in ("replicas", "part_power", "min_part_hours"):
            setattr(cluster, key, _int(value, f"cluster.{key}", 0, 32))
        elif key in ("mount_check", "put_timing"):
            if not isinstance(value, bool):
                raise InventoryError(f"cluster.{key} must be true or false")
            setattr(cluster, key, value)
        else:
            setattr(cluster, key, _text(value, f"cluster.{key}"))
    for key in ("swift_dir", "devices_root", "bin_dir"):
        if not getattr(cluster, key).startswith("/"):
            raise InventoryError(
                f"cluster.{key} must be an absolute path, not {getattr(cluster, key)!r}"
            )
        if _CONTROL.search(getattr(cluster, key)):
            raise InventoryError(f"cluster.{key} must not contain control characters")
    if not _USER.match(cluster.user):
        raise InventoryError(f"cluster.user {cluster.user!r} is not a user name")
    for key in ("workers", "proxy_workers"):
        value = getattr(cluster, key)
        if not (
            value == "auto" or _DIGITS.fullmatch(value) or (key == "proxy_workers" and not value)
        ):
            raise InventoryError(f"cluster.{key} must be auto or a whole number, not {value!r}")
    for server in cluster.memcache_servers:
        host, _, port = server.rpartition(":")
        if not host or not _DIGITS.fullmatch(port) or not 1 <= int(port) <= 65535:
            raise InventoryError(f"cluster.memcache_servers: {server!r} is not HOST:PORT")
    if cluster.replicas < 1:
        raise InventoryError("cluster.replicas must be at least 1")
    if not 1 <= cluster.part_power <= 24:
        raise InventoryError("cluster.part_power must be from 1 to 24")
    return cluster


def parse_inventory(data: Any) -> Inventory:
    if not isinstance(data, dict):
        raise InventoryError("an inventory is a YAML mapping (cluster, proxies, storage, ...)")
    raw = _fields(Inventory, data, "inventory", ("proxies", "storage"))
    for key in ("proxies", "storage"):
        if not isinstance(raw[key], list) or not raw[key]:
            raise InventoryError(f"{key} must be a non-empty list")
    inv = Inventory(
        cluster=parse_cluster(raw.get("cluster")),
        proxies=[parse_proxy(p, f"proxies[{i}]") for i, p in enumerate(raw["proxies"])],
        storage=[parse_storage(s, f"storage[{i}]") for i, s in enumerate(raw["storage"])],
        dss=_strings(raw.get("dss"), "dss"),
        proxy_server=_strings(raw.get("proxy_server"), "proxy_server"),
        memcache=_strings(raw.get("memcache"), "memcache"),
        object_server=_strings(raw.get("object_server"), "object_server"),
        tier=_strings(raw.get("tier"), "tier"),
        tempauth_users=_strings(raw.get("tempauth_users"), "tempauth_users"),
    )
    validate(inv)
    return inv


def validate(inv: Inventory) -> None:
    """Cross-checks that no single section can make on its own."""
    names = [n.name for n in (*inv.proxies, *inv.storage)]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise InventoryError(f"node name {dup[0]!r} is used twice")
    ips = [n.ip for n in inv.storage]
    dup = sorted({ip for ip in ips if ips.count(ip) > 1})
    if dup:
        raise InventoryError(f"storage ip {dup[0]} is used by two nodes")
    devices = inv.devices
    if inv.cluster.replicas > len(devices):
        raise InventoryError(
            f"{inv.cluster.replicas} replicas need at least as many devices ({len(devices)})"
        )
    zones = {(n.region, n.zone) for n in inv.storage}
    if inv.cluster.replicas > len(zones):
        # Swift would place two replicas in one zone: a zone failure could lose both.
        raise InventoryError(
            f"{inv.cluster.replicas} replicas need as many zones; the inventory has {len(zones)}"
        )
    if any(dev.tiered for _, dev in devices):
        for key in ("cache_size", "policy"):
            if key not in inv.tier and not all(key in d.tier for _, d in devices if d.tiered):
                raise InventoryError(f"tiered devices need tier.{key}")
    if reason := _tier_error(inv.tier):
        raise InventoryError(f"tier: {reason}")
    try:
        SettableClasses(inv.dss, Limits.from_conf(inv.dss))
    except ValueError as err:
        raise InventoryError(f"dss: {err}") from None
    try:
        tempauth_options(inv.tempauth_users)
    except ValueError as err:
        raise InventoryError(f"tempauth_users: {err}") from None
    if not inv.cluster.hash_path_prefix and not inv.cluster.hash_path_suffix:
        raise InventoryError(
            "cluster.hash_path_prefix/suffix are required: a secret shared by every node "
            "(e.g. `openssl rand -hex 16`), never changed once objects are stored"
        )


def _tier_error(settings: dict[str, str]) -> str | None:
    """Why SETTINGS cannot make a dss-tier command line, if they cannot: what dss-tier
    itself would refuse at a node's start, found on the admin host instead."""
    unknown = sorted(set(settings) - set(TIER_KEYS))
    if unknown:
        return f"unknown key {unknown[0]!r} (known: {', '.join(TIER_KEYS)})"
    if settings.get("mode", "dss") not in TIER_MODES:
        return f"mode {settings['mode']!r} is not one of {', '.join(TIER_MODES)}"
    if "policy" in settings and not settings["policy"].startswith("/"):
        # The unit runs from /, so a relative path would be read from wherever that leads.
        return f"policy {settings['policy']!r} must be an absolute path on the nodes"
    if "cache_size" in settings and not cache_size_bytes(settings["cache_size"]):
        return f"cache_size {settings['cache_size']!r} is not a size such as 64G"
    if reason := models_error(settings.get("ssd_model"), settings.get("hdd_model")):
        return reason
    if "meta_memory" in settings and (reason := meta_memory_error(settings["meta_memory"])):
        return reason
    if settings.get("meta_writes", "sync") not in META_WRITES:
        return f"meta_writes {settings['meta_writes']!r} is not one of {', '.join(META_WRITES)}"
    try:
        parse_flag(settings.get("warm"), "warm")
    except ClassError as err:
        return str(err)
    return None


def load_inventory(path: Path | str) -> Inventory:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as err:
        raise InventoryError(f"cannot read {path}: {err.strerror}") from None
    except UnicodeDecodeError as err:
        raise InventoryError(f"{path} is not UTF-8 text (byte {err.start})") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as err:
        raise InventoryError(f"{path} is not valid YAML: {str(err).splitlines()[0]}") from None
    return parse_inventory(data)
