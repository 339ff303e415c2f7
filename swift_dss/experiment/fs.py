"""`dss experiment fs`: the DSS paper's own evaluation (SOSP'11, section 5) on dss-tier.

Each workload runs on a fresh dss-tier mount per configuration (HDD only, LRU, DSS and
SSD only), with the device models on (the paper's SSD and HDD models), the file server
followed by the file-system utilities as in the paper. The tier classifies every I/O by
its policy (metadata kinds and file-size classes), as the paper's Ext3 did. The devices'
directories are on a tmpfs of the experiment's own, so only the models' time counts.
The paper's database run (section 5.7), workload `tpch`, is in tpch_run.py.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import statistics
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console

from swift_dss.experiment import fs_load
from swift_dss.experiment.cluster import HDD_MODEL, SSD_MODEL, ExperimentError
from swift_dss.experiment.content import class_totals, delta, device_totals
from swift_dss.experiment.fs_load import FsWorkload, Payload, PhaseResult, Pool
from swift_dss.policies import policy_path
from swift_dss.tierctl import TierError, binary, daemon, report
from swift_dss.tierctl.options import MountOptions

MIB = 1 << 20

#: Configuration name -> (tier mode, policy). `lru` takes the class-blind policy with the
#: reference classification, so per-class figures of lru and dss compare.
CONFIGS = {
    "hdd": ("hdd", "reference"),
    "lru": ("lru", "lru"),
    "dss": ("dss", "reference"),
    "ssd": ("ssd", "reference"),
    # Beyond the paper (not in the default set): write-back by file.
    "lru-cluster": ("lru", "lru-cluster"),
    "dss-cluster": ("dss", "dss-cluster"),
}
DEFAULT_CONFIGS = ("hdd", "lru", "dss", "ssd")

#: The reference policy's classes, grouped as the paper's Fig. 2 stacks them.
CONTENT_GROUPS = (
    ("metadata", range(1, 11)),
    ("files <= 64 KiB", range(11, 14)),
    ("files 64-256 KiB", range(14, 15)),
    ("files > 256 KiB", range(15, 23)),
)


#: Every workload: the file workloads of fs_load, and the database run (tpch_run.py).
WORKLOADS = (*fs_load.WORKLOADS, "tpch")
DEFAULT_WORKLOADS = ("sfs", "email", "tpch")

#: The cache's share of the data (percent) when --cache-pct gives none: the paper's 10%
#: of the servers' pools, and its 8 GB cache for the 29 GB TPC-H database (27.6%).
DEFAULT_CACHE_PCT = {"sfs": 10.0, "email": 10.0, "tpch": 100 * 8 / 29}


@dataclass(frozen=True)
class FsOptions:
    workloads: tuple[str, ...] = DEFAULT_WORKLOADS
    configs: tuple[str, ...] = DEFAULT_CONFIGS
    #: Multiplies each workload's default size (DEFAULT_COUNT_SCALE, tpch_run's scale
    #: factor).
    scale: float = 1.0
    #: Percent of the data; None: each workload's DEFAULT_CACHE_PCT.
    cache_pct: float | None = None
    threads: int = 8
    ssd_model: str = SSD_MODEL
    #: The mount passes every write through to the tier at once, while the paper's file
    #: system buffered writes in its page cache and wrote them back merged and sorted; the
    #: HDD model's page cache stands for that write-back. Both it and the kernel's caches
    #: are dropped before each measured phase (`cold`).
    hdd_model: str = f"{HDD_MODEL}:pagecache=64MiB"
    seed: int = 1

    def cache_pct_of(self, workload: str) -> float:
        return DEFAULT_CACHE_PCT[workload] if self.cache_pct is None else self.cache_pct


#: The paper's pools (262,144 and 1,000,000 files) scaled to a run of minutes here.
DEFAULT_COUNT_SCALE = {"sfs": 1 / 500, "email": 1 / 1000}


@dataclass
class Phase:
    """One phase of one run: its time, the tier's counters over it."""

    seconds: float
    ops: int = 0
    bytes: int = 0
    read_hit_ratio: float | None = None
    write_back_share: float | None = None
    hdd_busy_s: float = 0.0
    ssd_busy_s: float = 0.0
    #: What reached the modelled HDD (after its page cache): operations and bytes.
    hdd_read_ops: int = 0
    hdd_write_ops: int = 0
    hdd_read_bytes: int = 0
    hdd_write_bytes: int = 0
    latency_p95_ms: dict[str, dict[str, float]] = field(default_factory=dict)


@dataclass
class Run:
    workload: str
    config: str
    files: int
    pool_bytes: int
    cache_bytes: int
    phases: dict[str, Phase]
    content: dict[str, float]  # share of cached bytes per content group
    #: tpch: each query's phase, and a digest of its result rows.
    queries: dict[str, Phase] = field(default_factory=dict)
    answers: dict[str, str] = field(default_factory=dict)


def cache_bytes(config: str, data_bytes: int, pct: float) -> int:
    """The cache's size: PCT of the data, or, for SSD only, room for everything the run
    writes (three times the data: a file workload's creations and archive, a database's
    journals)."""
    if config == "ssd":
        need = 3 * data_bytes + 256 * MIB
    else:
        need = max(16 * MIB, int(data_bytes * pct / 100))
    return -(-need // MIB) * MIB


def cache_bytes_for(config: str, pool: Pool, pct: float) -> int:
    return cache_bytes(config, pool.total_bytes, pct)


#: Per-class counters a phase reports, summed over the classes.
CLASS_SUMS = ("hits", "misses", "written_back_bytes")


def _class_sums(s: report.TierStats) -> dict[str, float]:
    totals = class_totals({"tier": s.raw}).values()
    return {k: sum(c.get(k, 0) for c in totals) for k in CLASS_SUMS}


def _delta(after: report.TierStats, before: report.TierStats) -> dict[str, float]:
    c = delta({"c": _class_sums(after)}, {"c": _class_sums(before)})["c"]
    dev = delta(device_totals({"tier": after.raw}), device_totals({"tier": before.raw}))
    moved = dev["ssd"]["bytes"] + dev["hdd"]["bytes"]
    hdd_io = ("read_ops", "write_ops", "read_bytes", "write_bytes")
    return {
        **{f"hdd_{k}": dev["hdd"][k] for k in hdd_io},
        "hits": c["hits"],
        "misses": c["misses"],
        # A write-back reads the SSD and writes the HDD: both transfers are its cost.
        "write_back_share": (2 * c["written_back_bytes"] / moved) if moved else 0.0,
        "ssd_busy_s": dev["ssd"]["busy_s"],
        "hdd_busy_s": dev["hdd"]["busy_s"],
    }


def phase_between(seconds: float, before: report.TierStats, after: report.TierStats) -> Phase:
    """A phase of SECONDS from the tier's counters before and after it."""
    d = _delta(after, before)
    looked = d["hits"] + d["misses"]
    return Phase(
        seconds=seconds,
        read_hit_ratio=d["hits"] / looked if looked else None,
        write_back_share=d["write_back_share"],
        hdd_busy_s=d["hdd_busy_s"],
        ssd_busy_s=d["ssd_busy_s"],
        hdd_read_ops=d["hdd_read_ops"],
        hdd_write_ops=d["hdd_write_ops"],
        hdd_read_bytes=d["hdd_read_bytes"],
        hdd_write_bytes=d["hdd_write_bytes"],
    )


def latency_p95(result: PhaseResult) -> dict[str, dict[str, float]]:
    """95th percentile latency (ms) per operation and file size."""
    by: dict[str, dict[int, list[float]]] = {}
    for o in result.ops:
        by.setdefault(o.op, {}).setdefault(o.size, []).append(o.seconds * 1000)
    out: dict[str, dict[str, float]] = {}
    for op, sizes in by.items():
        out[op] = {
            str(size): (statistics.quantiles(v, n=20)[-1] if len(v) > 1 else v[0])
            for size, v in sorted(sizes.items())
        }
    return out


def content_shares(
    content: report.TierContent, groups: tuple[tuple[str, Any], ...] = CONTENT_GROUPS
) -> dict[str, float]:
    """Share of the cached bytes per group of classes, the rest as "other"."""
    total = sum(c.cached_bytes for c in content.classes.values())
    shares = {}
    for name, ids in groups:
        got = sum(content.classes[i].cached_bytes for i in ids if i in content.classes)
        shares[name] = got / total if total else 0.0
    shares["other"] = max(0.0, 1.0 - sum(shares.values())) if total else 0.0
    return shares


def cold(mnt: Path, tier_bin: str) -> None:
    """Start the next phase cold at every level a real system caches: the kernel's caches
    above the tier, and the modelled HDD's page cache below it (the SSD cache stays: it
    is what is measured)."""
    fs_load.drop_caches()
    report.control("drop-caches", mnt, tier_bin)


class Devices:
    """A tmpfs of the experiment's own for the devices' directories (a plain directory
    when it cannot be mounted)."""

    def __init__(self, path: Path, console: Console) -> None:
        self.path = path
        path.mkdir(parents=True, exist_ok=True)
        got = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=75%", "tmpfs", str(path)],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        self.mounted = got.returncode == 0
        if not self.mounted:
            console.print(f"[yellow]no tmpfs for the devices ({got.stderr.strip()}); using {path}")

    def close(self) -> None:
        if self.mounted:
            subprocess.run(["umount", "-l", str(self.path)], check=False)


def mount_options(
    config: str, cache: int, opts: FsOptions, policy: Path | None = None
) -> MountOptions:
    """CONFIG's mode and policy (or the policy file POLICY) with the models of OPTS."""
    mode, name = CONFIGS[config]
    return MountOptions(
        cache_size=str(cache),
        policy=policy or policy_path(name),
        mode=mode,
        ssd_model=opts.ssd_model,
        hdd_model=opts.hdd_model,
    )


@contextlib.contextmanager
def mounted(base: Path, options: MountOptions, log: Path, what: str) -> Iterator[tuple[Path, str]]:
    """A fresh dss-tier on BASE/mnt over BASE/ssd and BASE/hdd: (mount point, binary).
    Unmounted after its write-back when the body succeeds; in any case stopped and BASE
    removed. Failures become ExperimentError naming WHAT."""
    mnt = base / "mnt"
    tier_bin = binary.require()
    d = daemon.spawn(tier_bin, base / "ssd", base / "hdd", mnt, options, log)
    try:
        daemon.wait_mounted(d)
        yield mnt, tier_bin
        daemon.clean_umount(mnt, tier_bin)
    except (TierError, OSError, subprocess.SubprocessError) as err:
        raise ExperimentError(f"{what}: {err}") from err
    finally:
        if daemon.alive(d):
            with contextlib.suppress(TierError):
                daemon.unmount(mnt)
            daemon.stop(d, timeout=30)
        daemon.reap()
        shutil.rmtree(base, ignore_errors=True)


def run_one(
    w: FsWorkload,
    config: str,
    opts: FsOptions,
    devices: Path,
    log: Path,
    progress: Callable[[str], None],
) -> Run:
    base = devices / w.name / config
    root = base / "mnt" / "pool"
    pool = fs_load.plan_pool(root, w, DEFAULT_COUNT_SCALE[w.name] * opts.scale, opts.seed)
    cache = cache_bytes_for(config, pool, opts.cache_pct_of(w.name))
    options = mount_options(config, cache, opts)
    with mounted(base, options, log, f"{w.name} on {config}") as (mnt, tier_bin):
        payload = Payload()

        def tick(what: str) -> Callable[[int, int], None]:
            step = 0

            def f(done: int, total: int) -> None:
                nonlocal step
                if done * 10 // total > step or done == total:
                    step = done * 10 // total
                    progress(f"{w.name} {config} {what}: {done}/{total}")

            return f

        phases: dict[str, Phase] = {}
        s0 = report.stats(mnt, tier_bin)
        setup = fs_load.populate(pool, w.request_size, opts.threads, payload, tick("setup"))
        s1 = report.stats(mnt, tier_bin)
        phases["setup"] = phase_between(setup.seconds, s0, s1)
        cold(mnt, tier_bin)
        s1 = report.stats(mnt, tier_bin)
        count = max(1, round(w.transactions * DEFAULT_COUNT_SCALE[w.name] * opts.scale))
        tx = fs_load.transactions(
            pool, w, count, w.request_size, opts.threads, payload, opts.seed + 1,
            tick("transactions"),
        )  # fmt: skip
        s2 = report.stats(mnt, tier_bin)
        phase = phase_between(tx.seconds, s1, s2)
        phase.ops, phase.bytes = len(tx.ops), tx.bytes
        phase.latency_p95_ms = latency_p95(tx)
        phases["transactions"] = phase
        content = content_shares(report.dump(mnt, tier_bin))
        if w.utilities:
            for u in fs_load.UTILITIES:
                cold(mnt, tier_bin)
                before = report.stats(mnt, tier_bin)
                seconds = fs_load.run_utility(u.name, mnt, pool)
                phases[u.name] = phase_between(seconds, before, report.stats(mnt, tier_bin))
                progress(f"{w.name} {config} {u.name}: {seconds:.1f} s")
    return Run(w.name, config, len(pool.paths), pool.total_bytes, cache, phases, content)


def check_options(opts: FsOptions) -> None:
    unknown = [w for w in opts.workloads if w not in WORKLOADS]
    unknown += [c for c in opts.configs if c not in CONFIGS]
    if unknown:
        raise ExperimentError(
            f"unknown workload or configuration: {', '.join(unknown)} "
            f"(workloads {', '.join(WORKLOADS)}; configurations {', '.join(CONFIGS)})"
        )
    if not opts.workloads or not opts.configs:
        raise ExperimentError("at least one workload and one configuration are needed")
    for what, names in (("workload", opts.workloads), ("configuration", opts.configs)):
        if len(set(names)) != len(names):
            # A second run of one would overwrite the first's results under the same name.
            raise ExperimentError(f"each {what} is named once: {', '.join(names)}")
    if opts.cache_pct is not None and not 0 < opts.cache_pct <= 100:
        raise ExperimentError(f"--cache-pct must be in (0, 100], not {opts.cache_pct}")
    if not opts.scale > 0:
        raise ExperimentError(f"--scale must be above 0, not {opts.scale}")


def run_fs(out: Path, opts: FsOptions, console: Console) -> dict[str, Any]:
    """Every workload in every configuration; writes OUT/summary.json, report.md, plots."""
    from swift_dss.experiment import tpch_run
    from swift_dss.experiment.fs_report import write_report

    check_options(opts)
    why = binary.why_unusable(binary.find(), "make setup")
    if why:
        raise ExperimentError(why)
    out.mkdir(parents=True, exist_ok=True)
    devices = Devices(out / "devices", console)
    runs: list[Run] = []
    database: dict[str, Any] | None = None
    try:
        for wname in opts.workloads:
            if wname == "tpch":
                database = tpch_run.stage(devices.path, opts, console.log)
            for config in opts.configs:
                console.log(f"{wname} on {config}")
                log = out / "tier.log"
                if wname == "tpch":
                    run = tpch_run.run_one(config, opts, devices.path, log, console.log)
                else:
                    w = fs_load.WORKLOADS[wname]
                    run = run_one(w, config, opts, devices.path, log, console.log)
                runs.append(run)
    finally:
        tpch_run.unstage(devices.path)
        devices.close()
    summary: dict[str, Any] = {
        "options": asdict(opts),
        "count_scale": {
            w: DEFAULT_COUNT_SCALE[w] * opts.scale for w in opts.workloads if w != "tpch"
        },
        "cache_pct": {w: opts.cache_pct_of(w) for w in opts.workloads},
        "runs": [asdict(r) for r in runs],
    }
    if database is not None:
        summary["tpch"] = database
    (out / "summary.json").write_text(json.dumps(summary, indent=2))
    write_report(out, summary)
    return summary
