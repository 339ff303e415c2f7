"""`dss experiment caching`: the paper's Figs. 7-9.

For each configuration (HDD only, SSD only, LRU cache, DSS cache; the caches at 5% and 10%
of the working set) a fresh all-in-one cluster on dss-tier mounts with the paper's device
models runs the scaled Table I workload in the paper's phases (containers, PUT, GET,
DELETE). The tier is read before every phase (device activity per phase) and its cache
content is dumped before DELETE (Fig. 8). Each configuration's results are written under
DIR/runs/<key>/ as it completes; a rerun skips those unless forced.
"""

from __future__ import annotations

import itertools
import json
import os
import time
import traceback
from collections.abc import Callable
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from rich.console import Console

from swift_dss.experiment import bootstrap, failures, intervals, orders, policy_file
from swift_dss.experiment import content as content_mod
from swift_dss.experiment.caching_configs import (
    CACHE_PCTS,
    Config,
    cluster_spec,
    configurations,
    pct_label,
)
from swift_dss.experiment.cost import dollars_per_gb_per_iops, normalised, price_per_gb
from swift_dss.experiment.paper import FIG7, HEADLINES
from swift_dss.experiment.records import read_record, write_record
from swift_dss.experiment.scale import (
    Scale,
    WorkingSet,
    cache_bytes,
    paper_workload,
    seeded_workload,
    split_containers,
    table_mix,
    working_set,
)
from swift_dss.experiment.summary import at_real_speed, figures, ratio, refreshed
from swift_dss.experiment.targets import Testbed, check_kept, refuse_kept, running_target
from swift_dss.loadgen import report as lg_report
from swift_dss.loadgen import runner
from swift_dss.loadgen.progress import RunProgress
from swift_dss.loadgen.protocols import Credentials, connect
from swift_dss.loadgen.stats import Recorder
from swift_dss.loadgen.workload import Workload
from swift_dss.testbed import utilisation

#: The phases whose figures the paper reports; a CPU-bound one makes the run suspect.
MEASURED_PHASES = ("put", "get")


def run_config(
    cfg: Config,
    setup_w: Workload,
    w: Workload,
    ws: WorkingSet,
    scale: Scale,
    run_dir: Path,
    console: Console,
    testbed: Testbed | None = None,
) -> dict[str, Any]:
    """One configuration on a fresh cluster; returns its summary entry (also in entry.json).
    SETUP_W creates the containers, W is the measured phases."""
    testbed = testbed or Testbed()
    spec = cluster_spec(cfg, ws, scale)
    if scale.cache_block:
        policy = policy_file.with_block(cfg.policy, scale.cache_block, run_dir / "policy.toml")
        spec = replace(spec, policy=str(policy.absolute()))
    if cfg.concurrency and testbed.kind == "saio":
        w = replace(w, concurrency=min(w.concurrency, cfg.concurrency))
    if testbed.kind == "netns":
        # The paper measures no DELETE, and the testbed is thrown away after the run: the
        # phase would only add CPU time (a sixth of the run's) to every configuration.
        w = replace(w, phases=tuple(p for p in w.phases if p.op != "delete"))
    snapshots: list[dict[str, Any]] = []
    samples: list[tuple[str, utilisation.Sample]] = []
    dump: dict[str, Any] = {}
    load_before = os.getloadavg()
    started = time.time()
    timings: dict[str, float] = {}
    where = "testbed nodes" if testbed.kind == "netns" else "tier devices"
    console.print(f"{cfg.key}: starting a cluster ({spec.devices} {where}, {spec.mode})")
    with running_target(run_dir / "cluster", spec, testbed, timings) as target:
        console.print(f"{cfg.key}: cluster up in {timings['up_s']} s")
        proto = connect(target.proxy_url, "swift", Credentials())
        log = run_dir / "client.log"

        def on_phase(index: int) -> None:
            if index >= len(w.phases):  # after the last phase (a remote load generator)
                samples.append(("end", target.sample()))
                snapshots.append({"before": "end", "stats": target.tier_stats()})
                return
            phase = w.phases[index]
            samples.append((phase.name, target.sample()))
            snapshots.append({"before": phase.name, "stats": target.tier_stats()})
            if phase.op == "delete":
                dump.update(target.tier_dump())

        t0 = time.time()
        with RunProgress(setup_w, console) as progress:
            tick = LogTicks(progress, console)
            setup_out = target.work(setup_w, proto, t0, lambda _i: None, tick, log)
        with RunProgress(w, console) as progress:
            out = target.work(w, proto, t0, on_phase, LogTicks(progress, console), log)
        if samples[-1][0] != "end":
            samples.append(("end", target.sample()))
            snapshots.append({"before": "end", "stats": target.tier_stats()})
        if not dump:
            dump.update(target.tier_dump())
        endpoint = target.proxy_url
        rates = target.link_rates()
    setup_rows = runner.summarize(setup_w, [setup_out]).recorder.rows()
    result = runner.summarize(w, [out])
    doc = runner.document(w, endpoint, "swift", result, started)
    doc["rows"] = setup_rows + doc["rows"]
    lg_report.write_run(run_dir / "loadgen", doc, result.recorder)
    (run_dir / "tier.json").write_text(
        json.dumps({"snapshots": snapshots, "content": dump}, indent=1) + "\n"
    )
    usage = utilisation.phases(samples, rates)
    k = testbed.dilation
    entry = {
        "key": cfg.key,
        "mode": cfg.mode,
        "policy": cfg.policy,
        "cache_pct": cfg.cache_pct,
        "cache_block": scale.cache_block,
        "concurrency": w.concurrency,
        "cluster": asdict(spec),
        "testbed": testbed.to_json(),
        **testbed.tcp(),
        **at_real_speed(figures(doc["rows"]), k, testbed.rate_scale),
        "content_bytes": content_mod.by_type(dump, w),
        "content_shares": content_mod.shares(content_mod.by_type(dump, w)),
        "devices_by_phase": device_phases(snapshots),
        "classes_end": content_mod.class_totals(snapshots[-1]["stats"]) if snapshots else {},
        "phases": [
            {**p, "duration_s": round(p["duration_s"] / k, 3), "measured_s": p["duration_s"]}
            for p in result.phases
        ],
        "utilisation": usage,
        "failure_causes": failures.from_cluster(run_dir / "cluster"),
        "cpu_bound_phases": utilisation.cpu_bound_phases(usage, MEASURED_PHASES),
        "warnings": result.warnings,
        "loadavg_before": [round(x, 2) for x in load_before],
        "loadavg_after": [round(x, 2) for x in os.getloadavg()],
        "wall_s": round(time.time() - started, 1),
        **timings,
    }
    write_record(run_dir / "entry.json", entry)
    return entry


class LogTicks:
    """The load generator's tick: to the live display, and when the console is not a
    terminal (a log file), also a plain line per phase every INTERVAL seconds, since the
    live display only shows there when a phase ends."""

    def __init__(self, progress: Callable[..., None], console: Console, interval: float = 30):
        self.progress = progress
        self.console = console
        self.interval = interval
        self.last: dict[int, float] = {}

    def __call__(
        self, index: int, name: str, done: int, failed: int, nbytes: int, seconds: float
    ) -> None:
        self.progress(index, name, done, failed, nbytes, seconds)
        if self.console.is_terminal:
            return
        now = time.monotonic()
        if now - self.last.setdefault(index, now) >= self.interval:
            self.last[index] = now
            self.console.print(
                f"  {name}: {done} done, {failed} failed, "
                f"{nbytes / max(seconds, 1e-3) / 1e6:.2f} MB/s, {seconds:.0f} s",
                highlight=False,
            )


def device_phases(snapshots: list[dict[str, Any]]) -> dict[str, Any]:
    """SSD and HDD activity (ops, bytes, busy seconds, summed over devices) per phase."""
    totals = [(s["before"], content_mod.device_totals(s["stats"])) for s in snapshots]
    return {
        name: content_mod.delta(after, before)
        for (name, before), (_, after) in itertools.pairwise(totals)
    }


def check_measured(
    entry: dict[str, Any], testbed: Testbed, scale: Scale, where: Path, seed: int
) -> None:
    """Refuse to mix a run measured on another testbed, with another cache block or on
    another draw (SEED: this run's) into this one's summary: a ratio pairs two runs'
    requests by their objects."""
    check_kept(entry, testbed, where)
    was, now = entry.get("cache_block"), scale.cache_block
    if was != now:
        refuse_kept(where, [f"cache block {was or 'of its policy'} (now {now or 'of its policy'})"])
    drawn = kept_seed(where.parent)
    if drawn is not None and drawn != seed:
        refuse_kept(where, [f"the workload's seed {drawn} (now {seed})"])


def kept_seed(run_dir: Path) -> int | None:
    """The seed a kept run's load generator drew its plan with, None if it has no record."""
    results = run_dir / "loadgen" / "results.json"
    return json.loads(results.read_text()).get("seed") if results.exists() else None


def kept_recorder(run_dir: Path) -> Recorder | None:
    """A kept run's raw record (`loadgen/recorder.json`), None if it has none."""
    record = run_dir / "loadgen" / "recorder.json"
    return Recorder.from_json(json.loads(record.read_text())) if record.exists() else None


def caching(
    out: Path,
    scale: Scale,
    pcts: tuple[float, ...] = CACHE_PCTS,
    only: list[str] | None = None,
    force: bool = False,
    console: Console | None = None,
    variants: tuple[str, ...] = (),
    workload: str = "paper",
    on_entry: Callable[[str, dict[str, Any]], None] | None = None,
    run_nothing: bool = False,
    testbed: Testbed | None = None,
    repeats: int = 1,
) -> dict[str, Any]:
    """Runs what is not done yet, REPEATS times each (every configuration once, then again:
    a slow drift of the machine's load then spreads over all of them), then writes
    summary.json and report.md from every entry."""
    console = console or Console(stderr=True)
    testbed = testbed or Testbed()
    out.mkdir(parents=True, exist_ok=True)
    setup_w, w = split_containers(seeded_workload(paper_workload(scale, workload), scale))
    ws = working_set(w)
    setup = setup_doc(w, ws, scale, pcts)
    setup["testbed"] = testbed.to_json()
    setup["repeats"] = repeats
    (out / "setup.json").write_text(json.dumps(setup, indent=1) + "\n")
    every = configurations(pcts, variants)
    configs = [c for c in every if not only or c.key in only or c.mode in only]
    runs: dict[str, list[dict[str, Any]]] = {c.key: [] for c in every}
    todo = [(r, c) for r in range(1, repeats + 1) for c in configs]
    for n, (rep, cfg) in enumerate(todo, 1):
        run_dir = out / "runs" / cfg.slug / f"r{rep}"
        done = run_dir / "entry.json"
        if run_nothing:
            continue
        before = None if force else read_record(done)
        if before is not None:
            check_measured(before, testbed, scale, done, w.seed)
            console.print(f"[{n}/{len(todo)}] {cfg.key} #{rep}: done before, kept ({done})")
            continue
        done.unlink(missing_ok=True)
        run_dir.mkdir(parents=True, exist_ok=True)
        console.rule(f"[{n}/{len(todo)}] {cfg.key} #{rep}  (load {os.getloadavg()[0]:.2f})")
        try:
            e = run_config(cfg, setup_w, w, ws, scale, run_dir, console, testbed)
            (run_dir / "error.txt").unlink(missing_ok=True)
        except KeyboardInterrupt:
            raise
        except Exception as err:
            (run_dir / "error.txt").write_text(traceback.format_exc())
            console.print(f"[red]{cfg.key} failed: {err}[/red] (see {run_dir / 'error.txt'})")
            continue
        bound = ", ".join(e["cpu_bound_phases"])
        bound = f", CPU-bound in {bound}" if bound else ""
        console.print(
            f"{cfg.key} #{rep}: PUT {e['put_mbps']} MB/s, GET {e['get_mbps']} MB/s, "
            f"GET TTFB {e['get_ttfb_ms']} ms, failures {e['failure_rate']:.2%}{bound}"
        )
        if on_entry:
            on_entry(cfg.key, e)
    # What any run measured counts in the summary, whatever this one selected.
    samples: dict[str, dict[str, Any]] = {}
    for cfg in every:
        kept = [
            (done, record)
            for done in sorted((out / "runs" / cfg.slug).glob("r*/entry.json"))
            if (record := read_record(done)) is not None
        ]
        recorders = [kept_recorder(done.parent) for done, _ in kept]
        requests = [bootstrap.samples(r) if r else {} for r in recorders]
        for (done, record), recorder, got in zip(kept, recorders, requests, strict=True):
            entry = bootstrap.with_excluding(refreshed(record, recorder), got)
            check_measured(entry, testbed, scale, done, w.seed)
            runs[cfg.key].append(entry)
        if len(kept) == 1:  # a single run's intervals come from its requests
            samples[cfg.key] = requests[0]
    entries = {
        key: intervals.single_or_combined(found, samples.get(key)) for key, found in runs.items()
    }
    entries = {key: e for key, e in entries.items() if e}
    summary = build_summary(entries, setup, pcts, [c.key for c in every], samples)
    (out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    from swift_dss.experiment.caching_report import write_report

    write_report(out, summary)
    return summary


def setup_doc(w: Workload, ws: WorkingSet, scale: Scale, pcts: tuple[float, ...]) -> dict:
    return {
        "scale": scale.to_json(),
        "workload": {
            "name": w.name,
            "phases": [
                {"name": p.name, "op": p.op, "count": p.count, "duration": p.duration}
                for p in w.phases
            ],
            "containers": w.containers,
            "concurrency": w.concurrency,
        },
        "working_set": ws.to_json(),
        "byte_mix_table_i": table_mix(w),
        "byte_mix_table_i_types": table_mix(w, slices=False),
        "cache_bytes_per_device": {pct_label(p): cache_bytes(ws, scale, p) for p in pcts},
        "bytes_per_device": ws.per_device(scale.replicas, scale.devices),
        "machine": {"cpus": os.cpu_count(), "loadavg_at_start": list(os.getloadavg())},
    }


def build_summary(
    entries: dict[str, dict[str, Any]],
    setup: dict[str, Any],
    pcts: tuple[float, ...],
    expected: list[str] | None = None,
    samples: dict[str, dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """summary.json: an entry per configuration and cache size ("hdd@10%", "dss@5%", ...);
    HDD only and SSD only are measured once and appear under every cache size. EXPECTED
    (default: the paper's configurations) names those reported missing if not in ENTRIES.
    SAMPLES (configuration -> its run's requests per phase) gives a ratio of two single
    runs its bootstrap interval; ratios of repeated configurations pair the repeats."""
    expected = expected or [c.key for c in configurations(pcts)]
    extra = sorted({k.split("@", 1)[0] for k in [*entries, *expected] if "@" in k})
    bases = ["hdd", "ssd", "lru", "dss", *(b for b in extra if b not in ("lru", "dss"))]
    keyed: dict[str, dict[str, Any]] = {}
    for pct in pcts:
        for base in bases:
            key = f"{base}@{pct_label(pct)}"
            source = entries.get(base if base in ("hdd", "ssd") else key)
            if source is None:
                continue
            entry = {**source, "measured_as": source["key"]}
            fraction = pct / 100
            price = price_per_gb(entry["mode"], fraction)
            entry["price_per_gb"] = round(price, 4)
            for phase in ("put", "get"):
                cost = dollars_per_gb_per_iops(price, entry.get(f"{phase}_ops_per_s") or 0)
                entry[f"cost_{phase}"] = cost
            paper = FIG7.get(key) or FIG7.get(base if base in ("hdd", "ssd") else "", {})
            entry["paper"] = {k: v for k, (v, _how) in paper.items()}
            keyed[key] = entry
    for pct in pcts:
        group = {k: v for k, v in keyed.items() if k.endswith(f"@{pct_label(pct)}")}
        normalised(group, f"hdd@{pct_label(pct)}", ("put", "get"))
    headlines = []
    for num, den, metric, paper_ratio, target in HEADLINES:
        a, b = keyed.get(num, {}).get(metric), keyed.get(den, {}).get(metric)
        measured = ratio(a, b)
        headlines.append(
            {
                "what": f"{num} / {den} {metric}",
                "measured": measured,
                "ci": intervals.headline_ci(keyed, num, den, metric, measured, samples or {}),
                "paper": paper_ratio,
                "target": target or None,
                "met": None if measured is None or not target else measured >= target,
            }
        )
    for num, den, metric in (
        ("dss@10%", "lru@10%", "put_mbps_excl_vmdk"),
        ("dss@10%", "lru@10%", "get_mbps_excl_vmdk"),
        ("dss@10%", "ssd@10%", "get_mbps_excl_vmdk"),
        ("dss@10%", "lru@10%", "put_ops_per_s"),
        ("dss@10%", "lru@10%", "get_ops_per_s"),
        ("dss@10%", "ssd@10%", "get_ops_per_s"),
    ):
        a, b = keyed.get(num, {}).get(metric), keyed.get(den, {}).get(metric)
        measured = ratio(a, b)
        headlines.append(
            {
                "what": f"{num} / {den} {metric}",
                "measured": measured,
                "ci": intervals.headline_ci(keyed, num, den, metric, measured, samples or {}),
                "paper": None,
                "target": None,
                "met": None,
            }
        )
    dss_failures = {
        k: v.get("failures_all_phases") for k, v in keyed.items() if k.startswith("dss@")
    }
    return {
        "experiment": "caching",
        **keyed,
        "headlines": headlines,
        "orders": orders.check(keyed) + orders.content(keyed),
        "dss_failures_all_phases": dss_failures,
        "setup": setup,
        "missing": [k for k in expected if k not in entries],
    }
