"""Account, container and object rings for a single-node cluster, built in-process."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

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
    if replicas > len(devices):
        raise ValueError(f"{replicas} replicas need at least {replicas} devices")
    # min_part_hours 0: a fresh ring may be rebalanced at once (nothing to protect yet).
    builder = RingBuilder(part_power, replicas, 0)
    for zone, device in enumerate(devices, start=1):
        builder.add_dev(
            {
                "region": 1,
                "zone": zone,
                "ip": "127.0.0.1",
                "port": port,
                "device": device,
                "weight": 100.0,
            }
        )
    builder.rebalance()
    builder.save(str(path.with_suffix(".builder")))
    builder.get_ring().save(str(path.with_suffix(".ring.gz")))


def build_rings(
    swift_dir: Path, devices: Sequence[str], ports: Mapping[str, int], replicas: int
) -> list[Path]:
    """Build the account, container and object rings in SWIFT_DIR; PORTS maps ring name to port."""
    paths = []
    for name in RING_NAMES:
        path = swift_dir / name
        build_ring(path, devices, ports[name], replicas)
        paths.append(path.with_suffix(".ring.gz"))
    return paths
