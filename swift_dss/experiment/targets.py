"""Where an experiment's configuration runs: the all-in-one cluster (`--testbed saio`, a
quick mode) or the emulated testbed (`--testbed netns`: a client node, a proxy node and
one storage node per device, each in a network namespace of its own, every link shaped,
time dilated by K; docs/experiments.md).

A `Target` is one such cluster while it is up. Both kinds answer the same questions: the
proxy's URL, the tiers' stats and cache content, running the load generator with a hook
before each phase, and a utilisation sample (CPU per node, bytes per link).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from swift_dss.deploy.local_cluster import LocalCluster, LocalClusterConfig
from swift_dss.deploy.local_cluster_config import ClusterError
from swift_dss.experiment.cluster import (
    ClusterSpec,
    ExperimentError,
    PhaseHook,
    running,
    tier_dump,
)
from swift_dss.loadgen import remote, runner
from swift_dss.loadgen.protocols import Protocol
from swift_dss.loadgen.workload import Workload
from swift_dss.testbed import congestion, utilisation
from swift_dss.testbed.settings import (
    PAPER_SERVER_WORKERS,
    TESTBED_HDD,
    UNRECORDED,
    UNRECORDED_REAL_QUEUE_MS,
    TestbedSettings,
)
from swift_dss.tierctl import TierError, report

TESTBEDS = ("saio", "netns")


@dataclass(frozen=True)
class TestbedDefaults:
    """An experiment's testbed settings where its options leave them unsaid."""

    __test__ = False  # not a test class, whatever pytest makes of the name

    dilation: int
    #: The byte rates scale with the object sizes (else they are the paper's hardware's).
    rates_follow_sizes: bool
    server_workers: int

    def rate_scale(self, size_scale: float) -> float:
        """The byte-rate scale for objects SIZE_SCALE times the paper's."""
        return min(size_scale, 1.0) if self.rates_follow_sizes else 1.0


#: The caching experiment's, measured on a 2-core machine (docs/experiments.md and
#: docs/results.md): with byte rates scaled as the object sizes, every object moves as
#: long as the paper's and the testbed carries a tenth of the requests per second it did
#: with the rates unscaled, so K = 2 leaves the machine at most half busy; the paper's 8
#: workers per storage server keep one blocking write from holding all of a node's
#: requests past Swift's timeouts (with 1, HDD only lost 61% of its requests).
CACHING_TESTBED = TestbedDefaults(
    dilation=2, rates_follow_sizes=True, server_workers=PAPER_SERVER_WORKERS
)
#: The traffic study's: as the caching experiment's, but K = 8. Its 100 clients made the
#: machine CPU-bound in two runs of five at K = 2 (79% and 75% busy) and in one at K = 4
#: (79%), whose uploads were 14-33% below K = 8's in every run; at K = 8 no run passed 59%
#: (docs/results.md).
TRAFFIC_TESTBED = TestbedDefaults(
    dilation=8, rates_follow_sizes=True, server_workers=PAPER_SERVER_WORKERS
)


@dataclass(frozen=True)
class Testbed:
    """Which cluster, and for the emulated testbed its settings (the dilation among them)."""

    kind: str = "saio"
    settings: TestbedSettings | None = None

    def __post_init__(self) -> None:
        if self.kind not in TESTBEDS:
            raise ExperimentError(f"unknown testbed {self.kind!r} (one of {', '.join(TESTBEDS)})")
        if self.kind == "netns" and self.settings is None:
            object.__setattr__(self, "settings", TestbedSettings(hdd_model=TESTBED_HDD))

    @property
    def dilation(self) -> int:
        return self.settings.dilation if self.settings is not None else 1

    @property
    def rate_scale(self) -> float:
        return self.settings.rate_scale if self.settings is not None else 1.0

    def tcp(self) -> dict[str, str]:
        """A run entry's record of the TCP congestion control its nodes ran (the setting
        may leave it to the host), nothing on the all-in-one cluster."""
        if self.settings is None:
            return {}
        return {"tcp": congestion.effective(self.settings.tcp_congestion)}

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "dilation": self.dilation}
        if self.settings is not None:
            out["settings"] = dataclasses.asdict(self.settings)
        return out


def check_kept(entry: dict[str, Any], testbed: Testbed, where: Path) -> None:
    """Refuse to mix a run measured on another testbed (another K, other workers...) into
    this one's summary, where its figures would be read with this testbed's settings."""
    was = entry.get("testbed")
    if was is None:
        return
    ran, runs = entry.get("tcp"), testbed.tcp().get("tcp")
    if ran and runs and ran != runs:
        refuse_kept(where, [f"TCP {ran} (now {runs})"])
    was = as_measured(was)
    now = testbed.to_json()
    if was == now:
        return
    old, new = was.get("settings") or {}, now.get("settings") or {}
    keys = sorted(old.keys() | new.keys())
    changed = [f"{k} {old.get(k)} (now {new.get(k)})" for k in keys if old.get(k) != new.get(k)]
    if was.get("kind") != now.get("kind") or not changed:
        changed = [f"testbed {was.get('kind')} (now {now.get('kind')})"]
    refuse_kept(where, changed)


def as_measured(testbed: dict[str, Any]) -> dict[str, Any]:
    """A kept run's recorded TESTBED as it was measured: a run from before the link queue
    was a setting had the queue it had then, not today's default, and one from before the
    congestion control was a setting had the host's, one from before the error limit
    was a setting had Swift's, one from before the burst was a setting had "gso", and one
    from before TCP's minimum RTO was dilated had the kernel's (0)."""
    settings = testbed.get("settings")
    if not settings:
        return testbed
    unrecorded: dict[str, Any] = dict(UNRECORDED)
    if "link_queue_ms" not in settings:
        unrecorded["link_queue_ms"] = UNRECORDED_REAL_QUEUE_MS / int(testbed.get("dilation", 1))
    return {**testbed, "settings": {**unrecorded, **settings}}


def refuse_kept(where: Path, changed: list[str]) -> None:
    """A kept run measured with other settings (CHANGED: "name old (now new)") cannot
    join this one's summary."""
    raise ExperimentError(
        f"{where} was measured with {', '.join(changed)}: rerun with the options it was "
        "measured with, or with --force to measure it again"
    )


class Target:
    """A cluster up for one configuration."""

    proxy_url: str
    dilation: int = 1

    def tier_stats(self) -> dict[str, dict[str, Any]]:
        raise NotImplementedError

    def tier_dump(self) -> dict[str, Any]:
        raise NotImplementedError

    def link_rates(self) -> dict[str, int]:
        """Link name -> its shaped (dilated) rate in bit/s; none outside the testbed."""
        return {}

    def sample(self) -> utilisation.Sample:
        raise NotImplementedError

    def work(
        self,
        w: Workload,
        proto: Protocol,
        t0: float,
        on_phase: Callable[[int], None],
        tick: runner.Progress | None,
        log: Path,
    ) -> dict[str, Any]:
        """`runner.work` of W with ON_PHASE(i) called before each phase i."""
        raise NotImplementedError


class SaioTarget(Target):
    """The all-in-one cluster; the load generator runs in this process."""

    def __init__(self, saio: Any) -> None:
        self.saio = saio
        self.proxy_url = saio.proxy_url

    def tier_stats(self) -> dict[str, dict[str, Any]]:
        return self.saio.tier_stats()

    def tier_dump(self) -> dict[str, Any]:
        return tier_dump(self.saio)

    def sample(self) -> utilisation.Sample:
        procs = self.saio._procs
        pids = [pid for rec in procs.records.values() for pid in procs.members(rec)]
        tiers = [int(m["pid"]) for m in self.saio.tier_mounts().values()]
        return utilisation.sample({"cluster": pids + tiers, "client": [os.getpid()]}, {})

    def work(self, w, proto, t0, on_phase, tick, log):  # type: ignore[no-untyped-def]
        return runner.work(w, proto, t0, barrier=PhaseHook(on_phase), tick=tick)


class NetnsTarget(Target):
    """The emulated testbed; the load generator runs on its client node."""

    def __init__(self, cluster: LocalCluster) -> None:
        self.cluster = cluster
        self.proxy_url = cluster.proxy_url
        assert cluster.cfg.testbed is not None
        self.dilation = cluster.cfg.testbed.dilation
        self.client_pid: int | None = None

    def tier_stats(self) -> dict[str, dict[str, Any]]:
        return {n: self.cluster.tier_stats(n) for n in self.cluster.node_names}

    def tier_dump(self) -> dict[str, Any]:
        try:
            return {
                n: report.dump(self.cluster.device_path(n)).totals()
                for n in self.cluster.node_names
            }
        except TierError as err:
            raise ExperimentError(str(err)) from None

    def link_rates(self) -> dict[str, int]:
        return {link.name: link.rate for link in self.cluster.links()}

    def sample(self) -> utilisation.Sample:
        nodes = self.cluster.node_pids()
        if self.client_pid is not None:
            nodes["client"] = [self.client_pid]
        links = self.cluster.links()
        return utilisation.sample(nodes, {link.name: link.outer for link in links}, links)

    def work(self, w, proto, t0, on_phase, tick, log):  # type: ignore[no-untyped-def]
        def started(pid: int) -> None:
            self.client_pid = pid

        try:
            return remote.work(
                self.cluster.client_command([]), w, proto, t0, on_phase, tick, log, started
            )
        except remote.RemoteError as err:
            raise ExperimentError(f"the client node's load generator: {err} (see {log})") from None


def local_cluster_config(directory: Path, spec: ClusterSpec, tb: Testbed) -> LocalClusterConfig:
    """The emulated testbed for SPEC: one storage node per device; the testbed's workers,
    timeouts and (dilated) device models; the I/O classes to the tier (dssio auto)."""
    assert tb.settings is not None
    return LocalClusterConfig(
        dir=directory,
        nodes=spec.devices,
        replicas=spec.replicas,
        tier_mode=spec.mode,
        tier_cache_size=spec.cache_size,
        tier_policy=spec.policy,
        devices_size=spec.devices_size,
        dssio_backend="auto",
        tier_discard=spec.discard,
        testbed=tb.settings,
    )


@contextlib.contextmanager
def running_target(
    directory: Path, spec: ClusterSpec, tb: Testbed, timings: dict[str, float]
) -> Iterator[Target]:
    """A fresh cluster for SPEC up for the duration, taken down whatever happens; TIMINGS
    gets "up_s" and "down_s"."""
    if tb.kind == "saio":
        with running(directory, spec, timings) as saio:
            yield SaioTarget(saio)
        return
    with contextlib.suppress(ClusterError):
        if (directory / LocalCluster.state_file).exists():
            LocalCluster.load(directory).down()
    cluster = LocalCluster(local_cluster_config(directory, spec, tb))
    t0 = time.monotonic()
    try:
        cluster.up()
    except ClusterError as err:
        raise ExperimentError(f"the testbed did not come up: {err}") from None
    timings["up_s"] = round(time.monotonic() - t0, 1)
    try:
        yield NetnsTarget(cluster)
    finally:
        t0 = time.monotonic()
        cluster.down(timeout=60)
        timings["down_s"] = round(time.monotonic() - t0, 1)
