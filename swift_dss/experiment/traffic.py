"""`dss experiment traffic`: the paper's I/O traffic control study (Figs. 10-11).

Four concurrent streams (Files, Pictures, Music, Video), each with its own clients, its
own containers and its own class (USER1-USER4, 25-28, whatever the object size). Five
runs on a fresh cluster in the tier's non-caching `tiered` mode: all four streams on the
HDD, then Files on the SSD, then Files and Pictures, and so on. Each stream PUTs for a
fixed time and then GETs for a fixed time, all four starting each phase together, so the
per-stream bandwidths of one run add up to the aggregate.
"""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import pickle
import subprocess
import sys
import time
import traceback
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from rich.console import Console

from swift_dss import children
from swift_dss.experiment import content as content_mod
from swift_dss.experiment import plots, policy_file, put_waits, server_times, tier_requests
from swift_dss.experiment.cluster import ClusterSpec
from swift_dss.experiment.records import read_record, write_record
from swift_dss.experiment.scale import Scale, paper_workload, split_containers
from swift_dss.experiment.summary import at_real_speed, phase_row, steady_or_whole
from swift_dss.experiment.targets import NetnsTarget, Testbed, check_kept, running_target
from swift_dss.loadgen import report as lg_report
from swift_dss.loadgen import runner
from swift_dss.loadgen.protocols import Credentials, connect, from_json
from swift_dss.loadgen.stats import Recorder
from swift_dss.loadgen.workload import Phase, Workload
from swift_dss.testbed import utilisation

#: Stream name -> the workload type it draws from.
STREAMS = {"Files": "Files", "Pictures": "Picture", "Music": "Music", "Video": "Video"}
#: (run name, streams whose class is placed on the SSD), as in the paper's Fig. 10.
RUNS = [
    ("none", ()),
    ("+Files", ("Files",)),
    ("+Pictures", ("Files", "Pictures")),
    ("+Music", ("Files", "Pictures", "Music")),
    ("+Video", ("Files", "Pictures", "Music", "Video")),
]
#: How many samples of the testbed's CPU and links a phase gets while the streams run
#: (at most one every 5 s, at least 0.5 s apart: each takes a few tc and ip calls), so that
#: a phase's span loses a twentieth of it at most.
SAMPLES_PER_PHASE = 20


def sample_every(workload: Workload) -> float:
    longest = max((p.duration or 0) for p in workload.phases)
    return min(5.0, max(0.5, longest / SAMPLES_PER_PHASE))


CDF_PERCENTILES = [*range(1, 100), 99.5, 99.9, 100]


@dataclass(frozen=True)
class TrafficOptions:
    duration: float = 30.0  # seconds of PUT, then as many of GET
    clients: int = 25  # per stream, as in the paper
    containers: int = 25  # per stream
    cache_size: str = "4GiB"  # the SSD's capacity per device: holds every pinned class
    devices_size: str = "24g"  # tmpfs limit for all backing directories (only used pages)


def stream_workload(base: Workload, stream: str, opts: TrafficOptions, seed: int) -> Workload:
    """The paper workload reduced to one object type, its class kept for every size."""
    otype = next(t for t in base.types if t.name == STREAMS[stream])
    phases = (
        Phase("create", (("create_containers", 1.0),)),
        Phase("put", (("put", 1.0),), duration=opts.duration),
        Phase("get", (("get", 1.0),), duration=opts.duration),
        Phase("delete", (("delete", 1.0),)),
    )
    return replace(
        base,
        name=f"traffic-{stream.lower()}",
        types=(otype,),
        phases=phases,
        containers=opts.containers,
        concurrency=opts.clients,
        processes=1,
        seed=base.seed + seed,
        container_prefix=f"traffic-{stream.lower()}",
        large_above=None,
        large_class=None,
    )


def placement(on_ssd: tuple[str, ...], base: Workload) -> dict[int, str]:
    classes = {t.name: t.cls for t in base.types}
    out = {}
    for stream, tname in STREAMS.items():
        cls = classes[tname]
        if cls is not None:
            out[cls] = "ssd" if stream in on_ssd else "hdd"
    return out


def _stream_child(args: tuple[Any, ...]) -> None:
    k, workload, proto_json, t0, barrier, shared, queue = args

    def tick(index: int, _phase: str, done: int, failed: int, nbytes: int, sec: float) -> None:
        shared[k * 5 : k * 5 + 5] = [index, done, failed, nbytes, sec]

    try:
        proto = from_json(proto_json)
        setup, measured = split_containers(workload)
        # One client per stream creates the containers: see split_containers.
        setup_out = runner.work(replace(setup, concurrency=1), proto, t0)
        out = runner.work(measured, proto, t0, barrier=barrier, tick=tick)
        out["setup"] = setup_out
        queue.put((k, out, None))
    except BaseException as err:
        barrier.abort()
        queue.put((k, None, f"{type(err).__name__}: {err}"))


def run_streams(workloads: list[Workload], endpoint: str, console: Console) -> list[dict[str, Any]]:
    """The streams in processes of their own, each phase started by all together."""
    proto = connect(endpoint, "swift", Credentials())
    ctx = mp.get_context("spawn")
    n = len(workloads)
    barrier = ctx.Barrier(n)
    shared = ctx.Array("d", 5 * n, lock=False)
    queue = ctx.Queue()
    t0 = time.time()
    procs = [
        ctx.Process(
            target=_stream_child,
            args=((k, w, proto.to_json(), t0, barrier, shared, queue),),
            daemon=True,
        )
        for k, w in enumerate(workloads)
    ]
    for p in procs:
        p.start()
    outs: dict[int, dict[str, Any]] = {}
    errors: list[str] = []
    last = 0.0
    try:
        while len(outs) + len(errors) < n:
            try:
                k, out, err = queue.get(timeout=0.5)
                if err:
                    errors.append(f"stream {workloads[k].name}: {err}")
                else:
                    outs[k] = out
            except Exception:  # queue.Empty
                if all(p.exitcode is not None for p in procs):
                    errors.append("stream processes exited without a result")
            if time.time() - last > 10:
                last = time.time()
                parts = []
                for k, w in enumerate(workloads):
                    index, done, failed = (int(shared[5 * k + j]) for j in range(3))
                    phase = w.phases[1:][index].name
                    parts.append(f"{w.name[8:]} {phase} {done} ({failed} failed)")
                console.print(f"  {time.time() - t0:5.0f} s  " + ", ".join(parts))
    finally:
        children.join(procs, grace=10)
    if errors:
        raise RuntimeError("; ".join(errors))
    return [outs[k] for k in range(n)]


def streams_on_client(target: NetnsTarget, workloads: list[Workload], run_dir: Path) -> list:
    """`run_streams` on the testbed's client node, in a process of its own there (its stream
    processes inherit the namespace); its progress lines show on this stderr."""
    request = run_dir / "streams.pickle"
    request.write_bytes(pickle.dumps(workloads))
    cmd = target.cluster.client_command(
        [sys.executable, "-m", "swift_dss.experiment.traffic", str(request), target.proxy_url]
    )
    limit = sum(w.timeout * 4 + (p.duration or 0) for w in workloads[:1] for p in w.phases)
    try:
        done = subprocess.run(
            cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, text=True, timeout=limit + 300
        )
    except subprocess.TimeoutExpired:
        raise RuntimeError(
            f"the client node's streams did not end within {limit + 300:g} s"
        ) from None
    finally:
        request.unlink(missing_ok=True)
    if done.returncode != 0 or not done.stdout.strip():
        raise RuntimeError(f"the client node's streams exited {done.returncode}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def cdf(recorder: Recorder, phase: str, op: str, k: int = 1) -> list[list[float]]:
    """[percentile, latency ms] of the successful requests of PHASE x OP, read at the
    emulated testbed's speed (latencies / K)."""
    for key, cell in recorder.grouped(2).items():
        if key == (phase, op) and cell.lat.get_total_count():
            return [
                [p, round(cell.lat.get_value_at_percentile(p) / 1000 / k, 3)]
                for p in CDF_PERCENTILES
            ]
    return []


def under(recorder: Recorder, phase: str, op: str, ms: float) -> float | None:
    for key, cell in recorder.grouped(2).items():
        if key == (phase, op) and cell.lat.get_total_count():
            xs, ys = lg_report.cdf_points(cell)
            below = [y for x, y in zip(xs, ys, strict=True) if x <= ms]
            return round(below[-1], 4) if below else 0.0
    return None


def stream_entry(
    workload: Workload, out: dict[str, Any], run_dir: Path, k: int = 1, rate_scale: float = 1.0
) -> dict[str, Any]:
    """One stream's figures, read at the emulated testbed's speed when dilated K times
    (and at the full object sizes when byte rates were scaled by RATE_SCALE)."""
    setup, workload = split_containers(workload)
    setup_rows = runner.summarize(setup, [out.pop("setup")]).recorder.rows()
    result = runner.summarize(workload, [out])
    doc = runner.document(workload, "", "swift", result, time.time())
    lg_report.write_run(run_dir / workload.name, doc, result.recorder, plots=False)
    rows = doc["rows"]
    put, get = phase_row(rows, "put"), phase_row(rows, "get")
    rec = result.recorder
    every = [r for r in setup_rows + rows if r["type"] is None]
    figs = at_real_speed(
        {
            "put_mbps": steady_or_whole(put),
            "get_mbps": steady_or_whole(get),
            "put_whole_phase_mbps": put.get("mbps"),
            "get_whole_phase_mbps": get.get("mbps"),
            "put_latency_ms": put.get("lat_mean_ms"),
            "get_latency_ms": get.get("lat_mean_ms"),
            "get_ttfb_ms": get.get("ttfb_mean_ms"),
            "put_p99_ms": put.get("lat_p99_ms"),
        },
        k,
        rate_scale,
    )
    return {
        **figs,
        "put_ops": put.get("ops"),
        "get_ops": get.get("ops"),
        "put_duration_s": put.get("duration_s"),
        "get_duration_s": get.get("duration_s"),
        "steady_uploads": rec.steady_uploads,
        # 100 ms of the emulated testbed are 100 K ms of the dilated run.
        "put_under_100ms": under(rec, "put", "put", 100 * k),
        "get_under_100ms": under(rec, "get", "get", 100 * k),
        "put_cdf": cdf(rec, "put", "put", k),
        "get_cdf": cdf(rec, "get", "get", k),
        "failures_all_phases": sum(r.get("failures", 0) for r in every),
        "requests_all_phases": sum(r.get("ops", 0) for r in every),
        # Wall-clock [start, end] of the measured phases, for their links' utilisation.
        "spans": {p: rec.phases[p] for p in ("put", "get") if p in rec.phases},
    }


def common_spans(streams: Iterable[Mapping[str, Any]]) -> dict[str, tuple[float, float]]:
    """Phase -> the span in which every stream was in it: the streams start a phase
    together, but each ends it when its last request returns."""
    spans: dict[str, tuple[float, float]] = {}
    for phase in ("put", "get"):
        each = [s["spans"][phase] for s in streams if phase in s.get("spans", {})]
        if each:
            start, end = max(w[0] for w in each), min(w[1] for w in each)
            if end > start:
                spans[phase] = (start, end)
    return spans


def run_one(
    name: str,
    on_ssd: tuple[str, ...],
    scale: Scale,
    opts: TrafficOptions,
    run_dir: Path,
    console: Console,
    testbed: Testbed | None = None,
) -> dict[str, Any]:
    testbed = testbed or Testbed()
    k = testbed.dilation
    base = paper_workload(scale)
    workloads = [stream_workload(base, s, opts, k) for k, s in enumerate(STREAMS)]
    policy = policy_file.tiered(f"traffic {name}", placement(on_ssd, base))
    policy_path = run_dir / "policy.toml"
    policy_path.write_text(policy_file.dumps(policy))
    spec = ClusterSpec(
        mode="tiered",
        policy=str(policy_path.absolute()),
        cache_size=opts.cache_size,
        devices=scale.devices,
        replicas=scale.replicas,
        workers=scale.workers,
        devices_size=opts.devices_size,
    )
    load_before = os.getloadavg()
    started = time.time()
    timings: dict[str, float] = {}
    with running_target(run_dir / "cluster", spec, testbed, timings) as target:
        before = target.tier_stats()
        samples = [("run", target.sample())]
        with utilisation.Sampler(target.sample, sample_every(workloads[0])) as sampler:
            if isinstance(target, NetnsTarget):
                outs = streams_on_client(target, workloads, run_dir)
            else:
                outs = run_streams(workloads, target.proxy_url, console)
        samples.append(("end", target.sample()))
        after = target.tier_stats()
        rates = target.link_rates()
    streams = {
        s: stream_entry(w, o, run_dir, k, testbed.rate_scale)
        for s, w, o in zip(STREAMS, workloads, outs, strict=True)
    }
    usage = {
        **utilisation.phases(samples, rates),
        **utilisation.windows(sampler.taken, common_spans(streams.values()), rates),
    }
    devices = content_mod.delta(content_mod.device_totals(after), content_mod.device_totals(before))
    entry = {
        "name": name,
        "on_ssd": list(on_ssd),
        "placement": placement(on_ssd, base),
        "cluster": asdict(spec),
        "streams": streams,
        "put_mbps": round(sum(s["put_mbps"] or 0 for s in streams.values()), 3),
        "get_mbps": round(sum(s["get_mbps"] or 0 for s in streams.values()), 3),
        "failures_all_phases": sum(s["failures_all_phases"] for s in streams.values()),
        "devices": devices,
        "server_times": server_times.from_cluster(run_dir / "cluster", k),
        "put_waits": put_waits.from_cluster(run_dir / "cluster", k),
        "tier_requests": tier_requests.delta(after, before, k),
        "testbed": testbed.to_json(),
        **testbed.tcp(),
        "utilisation": usage,
        "cpu_bound": any(u["cpu_bound"] for u in usage.values()),
        "loadavg_before": [round(x, 2) for x in load_before],
        "loadavg_after": [round(x, 2) for x in os.getloadavg()],
        "wall_s": round(time.time() - started, 1),
        **timings,
    }
    write_record(run_dir / "entry.json", entry)
    return entry


def slug(name: str) -> str:
    return name.lstrip("+").lower()


def traffic(
    out: Path,
    scale: Scale,
    opts: TrafficOptions,
    force: bool = False,
    console: Console | None = None,
    run_nothing: bool = False,
    testbed: Testbed | None = None,
) -> dict[str, Any]:
    console = console or Console(stderr=True)
    testbed = testbed or Testbed()
    out.mkdir(parents=True, exist_ok=True)
    runs: list[dict[str, Any]] = []
    for n, (name, on_ssd) in enumerate(RUNS, 1):
        run_dir = out / "runs" / slug(name)
        done = run_dir / "entry.json"
        kept = read_record(done) if run_nothing or not force else None
        if kept is not None:
            check_kept(kept, testbed, done)
            k = (kept.get("testbed") or {}).get("dilation", 1)
            if "server_times" not in kept:
                # Recorded before they were read: the kept logs still have them.
                kept["server_times"] = server_times.from_cluster(run_dir / "cluster", k)
            if (run_dir / "cluster").is_dir():
                # Read again, so that every run of a study is read the same way.
                kept["put_waits"] = put_waits.from_cluster(run_dir / "cluster", k)
            runs.append(kept)
            if not run_nothing:
                console.print(f"[{n}/{len(RUNS)}] {name}: done before, kept ({done})")
            continue
        if run_nothing:
            continue
        done.unlink(missing_ok=True)
        run_dir.mkdir(parents=True, exist_ok=True)
        console.rule(f"[{n}/{len(RUNS)}] {name}  (load {os.getloadavg()[0]:.2f})")
        try:
            entry = run_one(name, on_ssd, scale, opts, run_dir, console, testbed)
        except KeyboardInterrupt:
            raise
        except Exception as err:
            (run_dir / "error.txt").write_text(traceback.format_exc())
            console.print(f"[red]{name} failed: {err}[/red] (see {run_dir / 'error.txt'})")
            continue
        (run_dir / "error.txt").unlink(missing_ok=True)
        runs.append(entry)
        console.print(
            f"{name}: PUT {entry['put_mbps']:.1f} MB/s, GET {entry['get_mbps']:.1f} MB/s, "
            f"{entry['failures_all_phases']} failed requests"
        )
    summary = {
        "experiment": "traffic",
        "streams": list(STREAMS),
        "runs": runs,
        "setup": {
            "scale": scale.to_json(),
            "options": asdict(opts),
            "testbed": testbed.to_json(),
        },
        "missing": [name for name, _ in RUNS if name not in {r["name"] for r in runs}],
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    from swift_dss.experiment.traffic_report import write_report

    write_report(out, summary)
    return summary


def main(argv: list[str]) -> None:
    """On the client node: the streams of a pickled workload list against ENDPOINT, their
    records printed as one JSON line."""
    workloads = pickle.loads(Path(argv[0]).read_bytes())
    outs = run_streams(workloads, argv[1], Console(stderr=True))
    print(json.dumps(outs))


__all__ = ["RUNS", "STREAMS", "TrafficOptions", "plots", "traffic"]

if __name__ == "__main__":
    main(sys.argv[1:])
