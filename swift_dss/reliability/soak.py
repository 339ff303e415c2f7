"""The soak: the paper's workload at the cluster's capacity (through loadgen), every
daemon's resident memory sampled, and the verdict on whether any of it grows."""

from __future__ import annotations

import threading
import time
import uuid
from typing import Any

from swift_dss.deploy.local_cluster import LocalCluster

#: A daemon's memory counts as flat unless the last quarter of the soak holds more than
#: this much above the second quarter (after the warm-up), both as medians, ...
MEMORY_GROWTH_PCT = 20.0
#: ... and more than this in absolute terms (small daemons wobble by a few MiB).
MEMORY_GROWTH_MIN_KIB = 16 * 1024


def soak_workload(duration: float, concurrency: int, scale: float, prefill: int) -> Any:
    """The paper's workload (object types, sizes, classes) as a steady state: a prefill,
    then DURATION seconds of GET:PUT:DELETE 2:1:1 (the data set stays the same size)."""
    from dataclasses import replace

    from swift_dss.loadgen.workload import Phase, load

    paper = load("paper").with_options(scale=scale, concurrency=concurrency, containers=10)
    phases = (
        Phase("create", (("create_containers", 1.0),)),
        Phase("prefill", (("put", 1.0),), count=prefill),
        Phase("steady", (("get", 2.0), ("put", 1.0), ("delete", 1.0)), duration=duration),
        Phase("delete", (("delete", 1.0),)),
    )
    return replace(paper, phases=phases, container_prefix=f"soak{uuid.uuid4().hex[:6]}")


def memory_verdict(samples: list[tuple[float, dict[str, int]]]) -> dict[str, dict[str, Any]]:
    """Per process: RSS medians of the second and the last quarter of the samples, and
    whether it grew by more than MEMORY_GROWTH_PCT and MEMORY_GROWTH_MIN_KIB."""
    out: dict[str, dict[str, Any]] = {}
    n = len(samples)
    if n < 8:
        return out
    q2, q4 = samples[n // 4 : n // 2], samples[3 * n // 4 :]
    for name in samples[0][1]:
        early = sorted(s[1].get(name, 0) for s in q2)[len(q2) // 2]
        late = sorted(s[1].get(name, 0) for s in q4)[len(q4) // 2]
        grew = late - early
        out[name] = {
            "rss_kib_second_quarter": early,
            "rss_kib_last_quarter": late,
            "rss_kib_max": max(s[1].get(name, 0) for s in samples),
            "growing": grew > MEMORY_GROWTH_MIN_KIB and grew > early * MEMORY_GROWTH_PCT / 100,
        }
    return out


def soak(
    cluster: LocalCluster,
    duration: float = 600.0,
    concurrency: int = 16,
    scale: float = 0.01,
    prefill: int = 400,
    interval: float = 10.0,
) -> dict[str, Any]:
    """The paper's workload at the cluster's capacity (closed loop, CONCURRENCY transfers
    in flight, GETs verified byte for byte) for DURATION seconds, every daemon's resident
    memory sampled every INTERVAL seconds."""
    from swift_dss.loadgen.protocols import Credentials
    from swift_dss.loadgen.runner import run as run_workload

    # A short soak (a test's) gets a prefill in proportion.
    workload = soak_workload(duration, concurrency, scale, min(prefill, max(20, int(duration * 2))))
    creds = Credentials(cluster.user, cluster.key, auth_url=cluster.auth_url)
    samples: list[tuple[float, dict[str, int]]] = []
    done = threading.Event()

    def sample() -> None:
        t0 = time.monotonic()
        while not done.is_set():
            samples.append((round(time.monotonic() - t0, 1), cluster.daemon_rss_kib()))
            done.wait(interval)

    sampler = threading.Thread(target=sample)
    sampler.start()
    try:
        result = run_workload(workload, cluster.proxy_url, "swift", creds, verify=True)
    finally:
        done.set()
        sampler.join()
    rows = [r for r in result.recorder.rows() if r["type"] is None]
    memory = memory_verdict(samples)
    steady = [r for r in rows if r["phase"] == "steady"]
    return {
        "workload": "paper",
        "duration_s": duration,
        "concurrency": concurrency,
        "scale": scale,
        "requests": sum(r["ops"] for r in rows),
        "failures": sum(r["failures"] for r in rows),
        "failures_by_phase_and_op": {
            f"{r['phase']}/{r['op']}": {k: v for k, v in r["codes"].items() if k[:1] != "2"}
            for r in rows
            if r["failures"]
        },
        "steady_ops_per_s": round(sum(r["ops_per_s"] for r in steady), 1),
        "steady_mbps": round(sum(r["mbps"] for r in steady), 2),
        "puts_acknowledged": sum(r["ops"] - r["failures"] for r in rows if r["op"] == "put"),
        "gets_verified": sum(r["ops"] - r["failures"] for r in rows if r["op"] == "get"),
        "rss_samples": len(samples),
        "memory": memory,
        "tier_memory_growing": sorted(
            n for n, m in memory.items() if n.endswith("/dss-tier") and m["growing"]
        ),
        "server_memory_growing": sorted(
            n for n, m in memory.items() if not n.endswith("/dss-tier") and m["growing"]
        ),
        "warnings": result.warnings,
        "rss_series": [{"t": t, **rss} for t, rss in samples],
    }
