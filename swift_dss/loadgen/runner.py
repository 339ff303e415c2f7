"""A whole run: the workload's phases in order, in one process or several, with barriers.

With ``processes`` > 1 every process walks the same plan (see plan.py), owns a share of the
objects and runs ``concurrency / processes`` transfers; a barrier starts each phase in all
processes together, and the parent merges their histograms. Client CPU is measured per
phase with getrusage, which together with the driver's loop statistics feeds the guard
that warns when the client rather than the server is the bottleneck.
"""

from __future__ import annotations

import math
import multiprocessing as mp
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from swift_dss import children
from swift_dss.loadgen.driver import Driver, DriverOptions
from swift_dss.loadgen.payload import PayloadSource
from swift_dss.loadgen.plan import Plan
from swift_dss.loadgen.protocols import Credentials, Protocol, connect, from_json
from swift_dss.loadgen.stats import Recorder, process_cpu_s
from swift_dss.loadgen.workload import Workload

#: Above this share of one core (process CPU) or of the loop's time (outside select), the
#: client is taken to be the bottleneck.
CPU_GUARD_PCT = 90.0
LATENESS_GUARD_MS = 10.0

#: phase index, phase name, requests done, failed, bytes, seconds into the phase
Progress = Callable[[int, str, int, int, int, float], None]


@dataclass
class RunResult:
    recorder: Recorder
    phases: list[dict[str, Any]]
    client: dict[str, Any]
    warnings: list[str] = field(default_factory=list)


def work(
    workload: Workload,
    protocol: Protocol,
    t0: float,
    worker: int = 0,
    workers: int = 1,
    verify: bool = False,
    barrier: Any = None,
    tick: Progress | None = None,
) -> dict[str, Any]:
    """One process's part of a run; returns its record as JSON-able data."""
    plan = Plan(workload, worker, workers)
    recorder = Recorder(t0)
    concurrency = max(1, math.ceil(workload.concurrency / workers))
    opts = DriverOptions(concurrency=concurrency, timeout=workload.timeout, verify=verify)
    current = [0]

    def driver_tick(phase: str, done: int, failed: int, nbytes: int, seconds: float) -> None:
        if tick is not None:
            tick(current[0], phase, done, failed, nbytes, seconds)

    driver = Driver(protocol, PayloadSource(workload.seed), recorder, opts, driver_tick)
    phases = []
    try:
        for i, phase in enumerate(workload.phases):
            current[0] = i
            if barrier is not None:
                barrier.wait(timeout=workload.timeout * 4 + 60)
            cpu0 = process_cpu_s()
            deadline = None if phase.duration is None else time.perf_counter() + phase.duration
            rate = None if phase.rate is None else phase.rate / workers
            start, end = driver.run(phase.name, plan.requests(i), deadline, rate)
            recorder.phase_window(phase.name, start, end)
            if driver.steady is not None:
                recorder.steady_state(phase.name, start, *driver.steady)
            phases.append(
                {"name": phase.name, "cpu_s": process_cpu_s() - cpu0, "wall_s": end - start}
            )
    finally:
        driver.close()
    lat = driver.loop.lateness
    return {
        "recorder": recorder.to_json(),
        "phases": phases,
        "loop_busy_pct": driver.loop.busy_pct,
        "lateness_p99_ms": lat.get_value_at_percentile(99) / 1000 if lat.get_total_count() else 0,
    }


def _child(args: tuple[Any, ...]) -> None:
    workload, proto_json, t0, worker, workers, verify, barrier, shared, queue = args

    def tick(index: int, _phase: str, done: int, failed: int, nbytes: int, sec: float) -> None:
        shared[worker * 5 : worker * 5 + 5] = [index, done, failed, nbytes, sec]

    try:
        out = work(workload, from_json(proto_json), t0, worker, workers, verify, barrier, tick)
        queue.put((worker, out, None))
    except BaseException as err:  # reported to the parent, which fails the run
        if barrier is not None:
            barrier.abort()
        queue.put((worker, None, f"{type(err).__name__}: {err}"))


def run(
    workload: Workload,
    endpoint: str,
    protocol: str = "swift",
    creds: Credentials | None = None,
    verify: bool = False,
    progress: Progress | None = None,
) -> RunResult:
    proto = connect(endpoint, protocol, creds)
    t0 = time.time()
    n = workload.processes
    if n == 1:
        outs = [work(workload, proto, t0, verify=verify, tick=progress)]
    else:
        outs = _run_processes(workload, proto, t0, verify, progress)
    return summarize(workload, outs)


def _run_processes(
    workload: Workload, proto: Protocol, t0: float, verify: bool, progress: Progress | None
) -> list[dict[str, Any]]:
    n = workload.processes
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(n)
    shared = ctx.Array("d", 5 * n, lock=False)
    queue = ctx.Queue()
    procs = [
        ctx.Process(
            target=_child,
            args=((workload, proto.to_json(), t0, k, n, verify, barrier, shared, queue),),
            daemon=True,
        )
        for k in range(n)
    ]
    for p in procs:
        p.start()
    results: dict[int, dict[str, Any]] = {}
    errors = []
    try:
        while len(results) + len(errors) < n:
            try:
                worker, out, err = queue.get(timeout=0.25)
                if err:
                    errors.append(f"process {worker}: {err}")
                else:
                    results[worker] = out
            except Exception:  # queue.Empty: show progress, check for dead children
                if any(p.exitcode not in (None, 0) for p in procs) and not errors:
                    dead = [k for k, p in enumerate(procs) if p.exitcode not in (None, 0)]
                    if all(k not in results for k in dead):
                        errors.append(f"process(es) {dead} died")
            if progress is not None:
                index = int(min(shared[5 * k] for k in range(n)))
                done, failed, nbytes = (
                    int(sum(shared[5 * k + j] for k in range(n))) for j in (1, 2, 3)
                )
                sec = max(shared[5 * k + 4] for k in range(n))
                progress(index, workload.phases[index].name, done, failed, nbytes, sec)
    finally:
        children.join(procs, grace=5)
    if errors:
        raise RuntimeError("; ".join(errors))
    return [results[k] for k in sorted(results)]


def summarize(workload: Workload, outs: list[dict[str, Any]]) -> RunResult:
    recorder = Recorder.from_json(outs[0]["recorder"])
    for o in outs[1:]:
        recorder.merge(Recorder.from_json(o["recorder"]))
    phases = []
    warnings = []
    cpu_total = wall_total = 0.0
    for i, phase in enumerate(workload.phases):
        cpu = sum(o["phases"][i]["cpu_s"] for o in outs if i < len(o["phases"]))
        wall = recorder.duration(phase.name)
        per_proc = 100 * cpu / wall / len(outs) if wall > 0 else 0.0
        cpu_total += cpu
        wall_total += wall if not math.isnan(wall) else 0
        phases.append(
            {
                "name": phase.name,
                "op": phase.op,
                "duration_s": round(wall, 3),
                "client_cpu_s": round(cpu, 3),
                "client_cpu_pct": round(per_proc, 1),
            }
        )
        if per_proc > CPU_GUARD_PCT and wall > 0.5:
            warnings.append(
                f"phase {phase.name}: client CPU at {per_proc:.0f}% of a core per process; "
                "the client may be the bottleneck (add processes)"
            )
    busy = max(o["loop_busy_pct"] for o in outs)
    late = max(o["lateness_p99_ms"] for o in outs)
    if busy > CPU_GUARD_PCT and wall_total > 0.5:
        warnings.append(
            f"event loop busy {busy:.0f}% of the time: requests wait for the client (add processes)"
        )
    if late > LATENESS_GUARD_MS:
        warnings.append(f"rate-limited requests started late: p99 {late:.1f} ms behind schedule")
    client = {
        "processes": len(outs),
        "cpu_s": round(cpu_total, 3),
        "wall_s": round(wall_total, 3),
        "cpu_pct": round(100 * cpu_total / wall_total / len(outs), 1) if wall_total else 0.0,
        "loop_busy_pct": round(busy, 1),
        "lateness_p99_ms": round(late, 3),
    }
    return RunResult(recorder, phases, client, warnings)


def failures(rows: list[dict[str, Any]]) -> tuple[int, int]:
    """(failed, all) requests of a run, from the per-phase-and-op rows of ``document``."""
    totals = [r for r in rows if r["type"] is None and r["class"] is None]
    return sum(r["failures"] for r in totals), sum(r["ops"] for r in totals)


def document(
    workload: Workload, endpoint: str, protocol: str, result: RunResult, started: float
) -> dict[str, Any]:
    """results.json for ``dss loadgen run``."""
    rec = result.recorder
    return {
        "kind": "run",
        "workload": workload.name,
        "source": workload.source,
        "endpoint": endpoint,
        "protocol": protocol,
        "seed": workload.seed,
        "scale": workload.scale,
        "concurrency": workload.concurrency,
        "processes": workload.processes,
        "containers": workload.containers,
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(started)),
        "phases": result.phases,
        "rows": rec.rows(),
        "size_rows": rec.size_rows(),
        "timeseries": rec.series_rows(),
        "client": result.client,
        "warnings": result.warnings,
    }
