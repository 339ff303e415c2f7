"""Account, container and object rings, built in-process: for the single-node cluster
(`build_rings`) and for clusters of many nodes (`build_ring_from_devices`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from configparser import ConfigParser
from pathlib import Path
from typing import Any

from swift.common.ring import RingBuilder

#: ring name -> file stem Swift looks for in swift_dir (policy 0 keeps the legacy name).
RING_NAMES = ("account", "container", "object")

#: 2**8 partitions: plenty for a handful of devices and fast to build.
PART_POWER = 8


def build_ring(
    path: Path,
    devices: Sequence[str],
    port: int,
    replicas: int,
    part_power: int = PART_POWER,
) -> None:
    """Write PATH.builder and PATH.ring.gz placing REPLICAS copies over DEVICES at 127.0.0.1:PORT.

    Each device is its own zone, so that replicas land on distinct devices.
    """
    devs = [
        {"region": 1, "zone": zone, "ip": "127.0.0.1", "port": port, "device": device}
        for zone, device in enumerate(devices, start=1)
    ]
    # min_part_hours 0: a fresh ring may be rebalanced at once (nothing to protect yet).
    build_ring_from_devices(path, devs, replicas, part_power, min_part_hours=0)


def build_ring_from_devices(
    path: Path,
    devices: Iterable[Mapping[str, Any]],
    replicas: int,
    part_power: int = PART_POWER,
    min_part_hours: int = 0,
) -> None:
    """Write PATH.builder and PATH.ring.gz placing REPLICAS copies over DEVICES.

    Each device is a mapping with region, zone, ip, port, device and optionally weight
    (default 100) and replication_ip / replication_port.
    """
    devs = list(devices)
    if replicas > len(devs):
        raise ValueError(f"{replicas} replicas need at least {replicas} devices")
    builder = RingBuilder(part_power, replicas, min_part_hours)
    for dev in devs:
        builder.add_dev({"weight": 100.0, **dev})
    builder.rebalance()
    builder.save(str(path.with_suffix(".builder")))
    builder.get_ring().save(str(path.with_suffix(".ring.gz")))


def object_ring_name(policy: int) -> str:
    """The stem of storage policy POLICY's object ring (Swift's `object`, `object-N`).
    Swift's own helper looks the index up in the policies its process loaded from
    /etc/swift, which are not the cluster's."""
    return "object" if policy == 0 else f"object-{policy}"


def storage_policies(swift_conf: Path) -> list[int]:
    """The index of every storage policy SWIFT_CONF declares (its `storage-policy:N`
    sections), read without importing Swift's policy module, which would load the host's
    /etc/swift/swift.conf into this process."""
    parser = ConfigParser(strict=False, interpolation=None)
    parser.read(swift_conf)
    prefix = "storage-policy:"
    return [int(s.removeprefix(prefix)) for s in parser.sections() if s.startswith(prefix)]


def build_rings(
    swift_dir: Path,
    devices: Sequence[str],
    ports: Mapping[str, int],
    replicas: int,
    policies: Sequence[int] = (0,),
) -> list[Path]:
    """Build the account and container rings and one object ring per storage policy in
    POLICIES, in SWIFT_DIR, over the same DEVICES; PORTS maps ring name to port."""
    names = [(name, name) for name in RING_NAMES if name != "object"]
    names += [(object_ring_name(policy), "object") for policy in policies]
    paths = []
    for stem, server in names:
        path = swift_dir / stem
        build_ring(path, devices, ports[server], replicas)
        paths.append(path.with_suffix(".ring.gz"))
    return paths
