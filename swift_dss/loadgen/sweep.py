"""``dss loadgen sweep``: parallelism x object size x PUT/GET, after Hou et al. section IV.

Each cell (op, size, parallelism) runs on one driver with ``parallelism`` transfers in
flight: a warm-up (not recorded) on the same connections, then ``repetitions`` measured
runs, each bounded by a byte budget and a time cap. GET cells read the objects the PUT
cells of the same size wrote (or, without PUT, objects written first). Reported per cell:
MB/s, ops/s, mean and p99 latency, and CPU: the client process's (100 = one core) and the
whole machine's (all cores, as vmstat shows it in the paper's Fig. 4).
"""

from __future__ import annotations

import json
import math
import statistics
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

from swift_dss.loadgen.driver import Driver, DriverOptions
from swift_dss.loadgen.payload import PayloadSource
from swift_dss.loadgen.plan import Request
from swift_dss.loadgen.protocols import Credentials, Protocol, connect
from swift_dss.loadgen.report import write_csv
from swift_dss.loadgen.stats import Recorder, process_cpu_s
from swift_dss.sizes import format_size, parse_size

DEFAULT_PARALLELISM = (1, 2, 4, 8, 16, 32, 64)
DEFAULT_SIZES = ("1KiB", "4KiB", "16KiB", "64KiB", "256KiB", "1MiB", "4MiB", "16MiB")
#: The largest object one PUT may carry: Swift's default max_file_size and S3's limit.
MAX_SIZE = 5 << 30


@dataclass
class SweepConfig:
    parallelism: tuple[int, ...] = DEFAULT_PARALLELISM
    sizes: tuple[int, ...] = tuple(parse_size(s) for s in DEFAULT_SIZES)
    ops: tuple[str, ...] = ("put", "get")
    repetitions: int = 3
    warmup: int = 1  # requests per connection before measuring
    budget: int = 64 << 20  # bytes per measured run ...
    min_requests: int = 4  # ... but at least this many per connection ...
    max_requests: int = 2000  # ... and at most this many in all
    time_cap: float = 10.0  # seconds per measured run
    timeout: float = 120.0
    container: str = "dss-sweep"
    cls: int | None = None
    seed: int = 1
    cleanup: bool = True

    def __post_init__(self) -> None:
        if not self.parallelism or min(self.parallelism) < 1:
            raise ValueError("parallelism takes whole numbers from 1, e.g. 1,4,16")
        if not self.sizes or not all(0 < size <= MAX_SIZE for size in self.sizes):
            raise ValueError(f"sizes take 1 byte to {format_size(MAX_SIZE)}, e.g. 1KiB,4MiB")
        if not self.ops or not set(self.ops) <= {"put", "get"}:
            raise ValueError("ops take put and/or get")


def parse_list(text: str, conv: Callable[[str], Any]) -> tuple[Any, ...]:
    return tuple(conv(x.strip()) for x in text.split(",") if x.strip())


def whole_number(text: str) -> int:
    if not text.isdigit():
        raise ValueError(f"{text!r} is not a whole number")
    return int(text)


def _requests(cfg: SweepConfig, p: int, size: int) -> int:
    n = max(cfg.min_requests * p, min(cfg.max_requests, cfg.budget // max(size, 1)))
    return max(1, n)


class _Cell:
    """Objects of one size: ids and names, shared by the PUT and GET cells."""

    def __init__(self, size_index: int, size: int, container: str) -> None:
        self.size = size
        self.base = size_index * 10_000_000
        self.container = container
        self.written = 0  # objects 0..written-1 exist

    def name(self, i: int) -> str:
        return f"sweep/{self.size}/{i:07d}"

    def stream(
        self, phase: str, op: str, cls: int | None, count: int, start: int
    ) -> Iterator[Request]:
        label = format_size(self.size)
        for k in range(count):
            i = start + k if op == "put" else (start + k) % max(1, self.written)
            yield Request(k, phase, op, label, cls, self.size, label, self.container,
                          self.name(i), self.base + i)  # fmt: skip


def run_sweep(
    proto: Protocol,
    cfg: SweepConfig,
    progress: Callable[[str], None] = lambda _m: None,
) -> list[dict[str, Any]]:
    payload = PayloadSource(cfg.seed)
    rows: list[dict[str, Any]] = []
    top = max(cfg.parallelism)
    setup = Driver(proto, payload, Recorder(time.time()), DriverOptions(top, cfg.timeout))
    try:
        setup.run("setup", iter([Request(0, "setup", "create_container", None, None, 0, None,
                                         cfg.container, None, -1)]))  # fmt: skip
        cells = [_Cell(i, s, cfg.container) for i, s in enumerate(cfg.sizes)]
        if "get" in cfg.ops and "put" not in cfg.ops:
            for cell in cells:
                n = max(_requests(cfg, p, cell.size) for p in cfg.parallelism)
                setup.run("setup", cell.stream("setup", "put", cfg.cls, n, 0))
                cell.written = n
        for op in cfg.ops:
            for cell in cells:
                for p in cfg.parallelism:
                    rows.append(_measure(proto, payload, cfg, cell, op, p))
                    r = rows[-1]
                    progress(
                        f"{op} {format_size(cell.size)} x{p}: {r['mbps']:.2f} MB/s, "
                        f"{r['lat_mean_ms']:.1f} ms, cpu {r['cpu_pct']:.0f}%"
                    )
        if cfg.cleanup:
            for cell in cells:
                dels = cell.stream("cleanup", "delete", None, cell.written, 0)
                setup.run("cleanup", dels)
            setup.run("cleanup", iter([Request(0, "cleanup", "delete_container", None, None, 0,
                                               None, cfg.container, None, -1)]))  # fmt: skip
    finally:
        setup.close()
    return rows


def _measure(
    proto: Protocol, payload: PayloadSource, cfg: SweepConfig, cell: _Cell, op: str, p: int
) -> dict[str, Any]:
    n = _requests(cfg, p, cell.size)
    scratch = Recorder(time.time())
    driver = Driver(proto, payload, scratch, DriverOptions(p, cfg.timeout))
    runs = []
    try:
        # Warm-up: open the connections (and, for GET, touch the objects) unrecorded. Each
        # PUT cell writes its objects from the first name on, over what the cell before it
        # wrote, so that a size holds one cell's objects rather than every cell's (64 x
        # 16 MiB x 3 replicas per cell filled the testbed's devices); GETs cycle over what
        # exists.
        start = 0
        if cfg.warmup:
            driver.run("warmup", cell.stream("warmup", op, cfg.cls, cfg.warmup * p, start))
            start += cfg.warmup * p
        for _rep in range(cfg.repetitions):
            rec = driver.recorder = Recorder(time.time())
            cpu0, sys0 = process_cpu_s(), psutil.cpu_times()
            t0 = time.perf_counter()
            deadline = t0 + cfg.time_cap
            s, e = driver.run("m", cell.stream("m", op, cfg.cls, n, start), deadline)
            wall = time.perf_counter() - t0
            cpu, sys1 = process_cpu_s() - cpu0, psutil.cpu_times()
            busy = sum(sys1) - sum(sys0) - (sys1.idle - sys0.idle) - (sys1.iowait - sys0.iowait)
            total = sum(sys1) - sum(sys0)
            rec.phase_window("m", s, e)
            c = rec.cells.get(("m", op, format_size(cell.size), cfg.cls, format_size(cell.size)))
            done = c.ops if c else 0
            if op == "put":
                start += done
                cell.written = max(cell.written, start)
            else:
                start += done
            runs.append(
                {
                    "mbps": (c.bytes if c else 0) / wall / 1e6,
                    "ops_per_s": (done - (c.failures if c else 0)) / wall,
                    "lat_mean_ms": c.lat.get_mean_value() / 1000 if c else math.nan,
                    "lat_p99_ms": c.lat.get_value_at_percentile(99) / 1000 if c else math.nan,
                    "cpu_pct": 100 * cpu / wall,
                    "system_cpu_pct": 100 * busy / total if total > 0 else 0.0,
                    "requests": done,
                    "failures": c.failures if c else 0,
                    "codes": dict(c.codes) if c else {},
                }
            )
    finally:
        driver.close()

    def mean(k: str) -> float:
        return round(statistics.fmean(r[k] for r in runs), 4)

    return {
        "op": op,
        "size": cell.size,
        "size_label": format_size(cell.size),
        "parallelism": p,
        "mbps": mean("mbps"),
        "mbps_stdev": round(statistics.pstdev(r["mbps"] for r in runs), 4),
        "ops_per_s": mean("ops_per_s"),
        "lat_mean_ms": mean("lat_mean_ms"),
        "lat_p99_ms": mean("lat_p99_ms"),
        "cpu_pct": mean("cpu_pct"),
        "system_cpu_pct": mean("system_cpu_pct"),
        "requests": sum(r["requests"] for r in runs),
        "failures": sum(r["failures"] for r in runs),
        "repetitions": len(runs),
    }


# --- tables and plots ------------------------------------------------------------------------


def best(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    out = {}
    for op in sorted({r["op"] for r in rows}):
        r = max((r for r in rows if r["op"] == op), key=lambda r: r["mbps"])
        out[op] = {"size": r["size"], "size_label": r["size_label"],
                   "parallelism": r["parallelism"], "mbps": r["mbps"]}  # fmt: skip
    return out


def table(rows: list[dict[str, Any]], op: str, field: str = "mbps") -> str:
    """Markdown: sizes down, parallelism across; ** the best cell of all, * each size's best."""
    mine = [r for r in rows if r["op"] == op]
    ps = sorted({r["parallelism"] for r in mine})
    sizes = sorted({r["size"] for r in mine})
    top = max(mine, key=lambda r: r[field]) if mine else None
    lines = [
        f"| {op.upper()} {field} | " + " | ".join(f"x{p}" for p in ps) + " |",
        "|---|" + "---:|" * len(ps),
    ]
    for s in sizes:
        cells = {r["parallelism"]: r for r in mine if r["size"] == s}
        row_best = max(cells.values(), key=lambda r: r[field])
        out = []
        for p in ps:
            r = cells.get(p)
            if r is None:
                out.append("")
                continue
            text = f"{r[field]:.2f}"
            out.append(f"**{text}**" if r is top else f"*{text}*" if r is row_best else text)
        lines.append(f"| {format_size(s)} | " + " | ".join(out) + " |")
    return "\n".join(lines)


def write_sweep(out: Path, doc: dict[str, Any]) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    rows = doc["rows"]
    path = out / "results.json"
    path.write_text(json.dumps(doc, indent=1) + "\n")
    write_csv(out / "results.csv", rows)
    md = []
    for op in doc["ops"]:
        md += [f"### {op.upper()}: MB/s (** best of all, * best per size)", "",
               table(rows, op), "", f"### {op.upper()}: mean latency (ms)", "",
               table(rows, op, "lat_mean_ms").replace("*", ""), "",
               f"### {op.upper()}: client CPU (% of one core)", "",
               table(rows, op, "cpu_pct").replace("*", ""), ""]  # fmt: skip
    (out / "tables.md").write_text("\n".join(md))
    plot_sweep(out, rows)
    return path


def plot_sweep(out: Path, rows: list[dict[str, Any]]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    for op in sorted({r["op"] for r in rows}):
        mine = [r for r in rows if r["op"] == op]
        fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))
        for size in sorted({r["size"] for r in mine}):
            pts = sorted((r for r in mine if r["size"] == size), key=lambda r: r["parallelism"])
            xs = [r["parallelism"] for r in pts]
            label = format_size(size)
            axes[0].plot(xs, [r["mbps"] for r in pts], marker="o", label=label)
            axes[1].plot(xs, [r["lat_mean_ms"] for r in pts], marker="o", label=label)
            axes[2].plot(xs, [r["cpu_pct"] for r in pts], marker="o", label=label)
        for ax, ylabel in zip(
            axes,
            ("bandwidth (MB/s)", "mean latency (ms)", "client CPU (% of a core)"),
            strict=True,
        ):
            ax.set_xscale("log", base=2)
            ax.set_xlabel("parallelism")
            ax.set_ylabel(ylabel)
        axes[1].set_yscale("log")
        axes[0].legend(fontsize="small", title="object size")
        fig.suptitle(f"{op.upper()}: bandwidth, latency and client CPU vs parallelism")
        fig.tight_layout()
        fig.savefig(out / f"sweep_{op}.png", dpi=100)
        plt.close(fig)


def sweep(
    endpoint: str,
    protocol: str,
    creds: Credentials,
    cfg: SweepConfig,
    out: Path,
    progress: Callable[[str], None] = lambda _m: None,
) -> dict[str, Any]:
    proto = connect(endpoint, protocol, creds)
    started = time.time()
    rows = run_sweep(proto, cfg, progress)
    doc = {
        "kind": "sweep",
        "endpoint": endpoint,
        "protocol": protocol,
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(started)),
        "ops": list(cfg.ops),
        "parallelism": list(cfg.parallelism),
        "sizes": list(cfg.sizes),
        "repetitions": cfg.repetitions,
        "cpus": psutil.cpu_count(),
        "rows": rows,
        "best": best(rows),
    }
    write_sweep(out, doc)
    return doc
