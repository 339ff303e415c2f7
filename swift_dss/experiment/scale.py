"""The scaled paper workload: Table I shrunk to fit this machine, and its working set.

Object sizes shrink by ``size_scale`` and request counts by ``count_scale``; the types'
shares and size distributions stay, so "most bytes in few large objects" holds as long as
the run still draws some objects above 10 MiB (unscaled). ``--scale F`` multiplies the
counts only, so a larger run has more objects of the same sizes (a steadier byte mix), not
larger objects with a different mix of per-request overhead and transfer time.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from swift_dss.loadgen.plan import Plan
from swift_dss.loadgen.workload import Workload, load

MIB = 1 << 20
LARGE = "large (>10 MiB)"


@dataclass(frozen=True)
class Scale:
    """What makes a run of the paper's workload fit the machine (docs/experiments.md)."""

    size_scale: float = 0.1
    count_scale: float = 0.006
    concurrency: int = 32
    devices: int = 4
    replicas: int = 3
    workers: int = 8  # per server, as the paper's object, container and account servers
    #: The client's limit per request: HDD only wrote the largest object (166 MiB) at
    #: about 0.5 MB/s and a 300 s limit cut it off at 151 MB.
    timeout: float = 900.0
    containers: int = 25
    #: No object larger than this at the paper's full size (bytes; 2.5 GiB holds Table I's
    #: VMDK, at most 2.4 GiB); times the size scale in a run (`max_object`), so that a
    #: larger size scale draws the same objects, each larger, and not a mix without them.
    max_full_object: int = 2560 * MIB
    #: Seeds tried, from the workload's own, for the draw closest to Table I's byte mix.
    seeds: int = 200
    #: The tiers' cache block in bytes; None: the policy's own (4 KiB, the paper's).
    cache_block: int | None = None

    @property
    def max_object(self) -> int:
        """The largest object (bytes) a run at this size scale may draw."""
        return int(self.max_full_object * self.size_scale)

    def times(self, factor: float) -> Scale:
        return replace(self, count_scale=self.count_scale * factor)

    def dilated(self, k: int) -> Scale:
        """The client's per-request limit K times longer, as every timeout of a testbed
        dilated K times."""
        return replace(self, timeout=self.timeout * k)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


DEFAULT = Scale()
#: The emulated testbed's run of record: 1,040 PUTs and 4,000 GETs (399 MiB, 11 objects
#: over 10 MiB at full size, two of them VMDKs carrying 71% of the bytes), one run of
#: each configuration with per-request bootstrap intervals (bootstrap.py). Dilated K = 2
#: times with byte rates scaled as the object sizes, one configuration takes 4-9 minutes
#: here (docs/experiments.md). The servers' workers are the testbed's (TestbedSettings
#: and the experiment's defaults); the client's idle limit per request is Swift's own
#: client_timeout, 60 s, before dilation: a request that the paper's testbed left without
#: a byte moved for that long counts as failed, as in its Fig. 7(c).
TESTBED_DEFAULT = Scale(count_scale=0.04, timeout=60.0, seeds=50)
#: Runs per configuration on the testbed. One run of 5,040 requests takes about as long as
#: three of 1,260 and no single object decides it; its intervals come from its own
#: requests. `--repeats 3` gives Student t intervals over whole runs instead.
TESTBED_REPEATS = 1


def paper_workload(scale: Scale, workload: str = "paper") -> Workload:
    return load(workload).with_options(
        scale=scale.size_scale,
        count_scale=scale.count_scale,
        concurrency=scale.concurrency,
        timeout=scale.timeout,
        containers=scale.containers,
    )


#: Containers are created by a few clients: the paper does not measure that phase, and
#: dozens of concurrent sqlite creations queued on one modelled HDD (2.3 s each) make
#: every one of them wait (docs/experiments.md).
SETUP_CONCURRENCY = 4


def split_containers(w: Workload) -> tuple[Workload, Workload]:
    """(the container phase at SETUP_CONCURRENCY, the measured phases)."""
    create = tuple(p for p in w.phases if p.op == "create_containers")
    rest = tuple(p for p in w.phases if p.op != "create_containers")
    setup = replace(w, phases=create, concurrency=min(w.concurrency, SETUP_CONCURRENCY))
    return setup, replace(w, phases=rest)


def type_of(w: Workload, type_name: str, cls: int | None) -> str:
    """The object type a Fig. 8 slice names: large objects are their own slice."""
    if w.large_class is not None and cls == w.large_class:
        return LARGE
    return type_name


@dataclass(frozen=True)
class WorkingSet:
    objects: int
    bytes: int
    by_type: dict[str, int]  # bytes PUT per Fig. 8 slice
    count_by_type: dict[str, int]
    gets: int
    largest: int = 0
    #: Bytes and objects PUT per Table I type, large objects with their own type.
    by_object_type: dict[str, int] = field(default_factory=dict)
    count_by_object_type: dict[str, int] = field(default_factory=dict)

    def per_device(self, replicas: int, devices: int) -> int:
        return math.ceil(self.bytes * replicas / devices)

    def mix(self) -> dict[str, float]:
        """Bytes per Fig. 8 slice, as shares."""
        return self._shares(self.by_type)

    def type_mix(self) -> dict[str, float]:
        """Bytes per Table I type, as shares."""
        return self._shares(self.by_object_type)

    def _shares(self, nbytes: dict[str, int]) -> dict[str, float]:
        return {k: v / self.bytes for k, v in nbytes.items()} if self.bytes else {}

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "mix": self.mix(), "type_mix": self.type_mix()}


def working_set(w: Workload) -> WorkingSet:
    """The bytes the PUT phases store, from the seeded plan (the same draws the run makes)."""
    plan = Plan(w)
    by_type: dict[str, int] = defaultdict(int)
    count: dict[str, int] = defaultdict(int)
    by_object_type: dict[str, int] = defaultdict(int)
    count_by_object_type: dict[str, int] = defaultdict(int)
    gets = 0
    largest = 0
    for i, phase in enumerate(w.phases):
        if phase.op == "delete":
            break
        for req in plan.requests(i):
            if req.op == "get":
                gets += 1
            if req.op != "put" or req.type is None:
                continue
            key = type_of(w, req.type, req.cls)
            by_type[key] += req.size
            count[key] += 1
            by_object_type[req.type] += req.size
            count_by_object_type[req.type] += 1
            largest = max(largest, req.size)
    total = sum(by_type.values())
    return WorkingSet(
        len(plan.pool),
        total,
        dict(by_type),
        dict(count),
        gets,
        largest,
        dict(by_object_type),
        dict(count_by_object_type),
    )


def mix_distance(drawn: dict[str, float], expected: dict[str, float]) -> float:
    """L1 distance between two byte mixes (0: the same, 2: disjoint)."""
    return sum(abs(drawn.get(k, 0.0) - expected.get(k, 0.0)) for k in drawn.keys() | expected)


def pick_seed(
    draws: list[tuple[int, WorkingSet]], expected: dict[str, float], max_object: int
) -> int:
    """The seed whose draw is closest to the EXPECTED byte mix of Table I's types with no
    object above MAX_OBJECT (the first such seed on a tie); the first seed if none fits.

    A thousand objects draw Table I's rarest type (VMDK: 0.1% of objects, three quarters
    of the bytes) about once, and a lone VMDK carries either most of the bytes or, small,
    too few; so a seed is chosen for its byte mix, from the plan alone, before anything
    is measured. The mix is judged per type, not per Fig. 8 slice: a slice of "large"
    objects lets large videos stand in for the VMDK bytes, and one VMDK decide the run."""
    fitting = [
        (mix_distance(ws.type_mix(), expected), i)
        for i, (_, ws) in enumerate(draws)
        if ws.largest <= max_object
    ]
    if not fitting:
        return draws[0][0]
    return draws[min(fitting)[1]][0]


def seeded_workload(w: Workload, scale: Scale) -> Workload:
    """W with the seed `pick_seed` chooses among SCALE.seeds, judged on the draws of its
    measured phases (`split_containers`), which are the ones the run makes."""
    expected = table_mix(w, slices=False)
    draws = [
        (seed, working_set(split_containers(w.with_options(seed=seed))[1]))
        for seed in range(w.seed, w.seed + max(1, scale.seeds))
    ]
    return w.with_options(seed=pick_seed(draws, expected, scale.max_object))


def table_mix(w: Workload, slices: bool = True) -> dict[str, float]:
    """Table I's expected byte mix (sizes uniform inside each bucket), for comparison with
    what a seeded, scaled run actually draws: per Fig. 8 slice (large objects one slice)
    or, with SLICES false, per Table I type."""
    expected: dict[str, float] = defaultdict(float)
    total_share = sum(t.share for t in w.types)
    for t in w.types:
        prev = 0.0
        for bucket, cum in zip(t.buckets, t.cdf, strict=True):
            p, prev = cum - prev, cum
            if p <= 0:
                continue
            mean = (bucket.low + bucket.high) / 2
            large = slices and w.large_above is not None and bucket.low >= w.large_above
            expected[LARGE if large else t.name] += t.share / total_share * p * mean
    total = sum(expected.values())
    return {k: v / total for k, v in expected.items()}


def cache_bytes(ws: WorkingSet, scale: Scale, pct: float) -> int:
    """Per-device cache: PCT of the bytes each device stores, rounded up to whole MiB."""
    return max(1, math.ceil(ws.per_device(scale.replicas, scale.devices) * pct / 100 / MIB)) * MIB


def size_arg(nbytes: int) -> str:
    return f"{math.ceil(nbytes / MIB)}MiB"
