"""A fresh all-in-one cluster per configuration, always taken down again, and the tier's
documents (stats, cache content) read from its mounts."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from swift_dss.deploy.saio import Saio, SaioConfig, SaioError
from swift_dss.tierctl import TierError, report

#: The paper's devices (section V.A): Intel 710 SSD, Seagate Constellation ST1000NM0011.
SSD_MODEL = "intel710"
HDD_MODEL = "st1000nm0011"
TIER_FIELDS = ("tier_cache_size", "tier_policy", "tier_ssd_model", "tier_hdd_model")

#: The proxy's timeouts for the modelled devices. Swift's defaults (10 s per backend
#: response or chunk, 0.5 s to connect) suit real disks with a page cache in front; here a
#: request can queue behind dozens of others on one modelled HDD head at 12.7 ms per
#: access (a container database creation alone costs 2.3 s on it, docs/experiments.md), so
#: a backend that is slow but working would be counted as a failure.
SLOW_DEVICE_PROXY = {
    "node_timeout": "120",
    "recoverable_node_timeout": "120",
    "conn_timeout": "5",
    # The proxy reads the client's body only as fast as the backends take it.
    "client_timeout": "120",
}
#: The object servers' wait for the proxy to send a body. The proxy sends to no replica
#: before every replica has answered its connection (100 Continue), so with Swift's
#: 60 s default the fast replicas hung up while a queued one still waited for its HDD
#: (broken pipes, 503, in HDD only); it has to outlast the proxy's node_timeout.
SLOW_DEVICE_OBJECT = {"client_timeout": "300"}


class ExperimentError(RuntimeError):
    """A failure with a one-line explanation."""


@dataclass(frozen=True)
class ClusterSpec:
    mode: str
    policy: str
    cache_size: str  # per device, e.g. "31MiB"
    devices: int
    replicas: int
    workers: int
    devices_size: str  # tmpfs holding every device's SSD and HDD directories
    ssd_model: str = SSD_MODEL
    hdd_model: str = HDD_MODEL
    #: Stop the tier without writing back: the run does not need the data after measuring.
    discard: bool = True


def saio_config(directory: Path, spec: ClusterSpec) -> SaioConfig:
    missing = [f for f in TIER_FIELDS if f not in SaioConfig.__dataclass_fields__]
    if missing:
        raise ExperimentError(
            f"this swift_dss/deploy/saio_config.py has no {', '.join(missing)}: the all-in-one "
            "cluster cannot set the tier's cache size, policy and device models yet"
        )
    settings: dict[str, Any] = {
        "tier_cache_size": spec.cache_size,
        "tier_policy": spec.policy,
        "tier_ssd_model": spec.ssd_model,
        "tier_hdd_model": spec.hdd_model,
    }
    return SaioConfig(
        dir=directory,
        port=0,
        tier_mode=spec.mode,
        devices=spec.devices,
        replicas=spec.replicas,
        workers=spec.workers,
        devices_size=spec.devices_size,
        proxy_options=dict(SLOW_DEVICE_PROXY),
        object_options=dict(SLOW_DEVICE_OBJECT),
        tier_discard=spec.discard,
        **settings,
    )


def clear_leftovers(directory: Path) -> None:
    """Take down a cluster a killed earlier run left in DIRECTORY."""
    if (directory / "saio.json").exists():
        with contextlib.suppress(SaioError):
            Saio.load(directory).down()


@contextlib.contextmanager
def running(
    directory: Path, spec: ClusterSpec, timings: dict[str, float] | None = None
) -> Iterator[Saio]:
    """A cluster up for the duration; TIMINGS, if given, gets "up_s" and "down_s"."""
    timings = {} if timings is None else timings
    clear_leftovers(directory)
    saio = Saio(saio_config(directory, spec))
    t0 = time.monotonic()
    saio.up()  # stops whatever it started if it fails
    timings["up_s"] = round(time.monotonic() - t0, 1)
    try:
        yield saio
    finally:
        t0 = time.monotonic()
        saio.down(timeout=60)
        timings["down_s"] = round(time.monotonic() - t0, 1)


def mountpoints(saio: Saio) -> dict[str, Path]:
    devices = saio.dir / "devices"
    return {p.name: p for p in sorted(devices.iterdir()) if p.is_dir()}


def tier_stats(saio: Saio) -> dict[str, dict[str, Any]]:
    """`dss-tier stats --json` of every device, as printed."""
    return saio.tier_stats()


def tier_dump(saio: Saio) -> dict[str, dict[str, Any]]:
    """`dss-tier dump --json` of every device, without the extents (only totals are used)."""
    try:
        return {name: report.dump(mp).totals() for name, mp in mountpoints(saio).items()}
    except TierError as err:
        raise ExperimentError(str(err)) from None


class PhaseHook:
    """Passed to the load generator's `work` as its barrier: `work` waits on it before each
    phase, which with one process needs no synchronising and is exactly where the tier is
    read. An optional real barrier still synchronises concurrent streams."""

    def __init__(self, on_phase: Callable[[int], None], barrier: Any = None) -> None:
        self.on_phase = on_phase
        self.barrier = barrier
        self.index = 0

    def wait(self, timeout: float | None = None) -> None:
        if self.barrier is not None:
            self.barrier.wait(timeout)
        self.on_phase(self.index)
        self.index += 1

    def abort(self) -> None:
        if self.barrier is not None:
            self.barrier.abort()
