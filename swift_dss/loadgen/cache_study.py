"""``dss loadgen cache-study``: a client-side chunk cache over a trace, after Hou et al. §V.

A cloud-backed file system client is emulated: files are stored as chunks (one object per
chunk), the client keeps an LRU cache of chunks (write-back: dirty chunks go back on
eviction and at every flush interval, off the request path), and reads and writes of the
trace are served from the cache or, on a miss, by fetching the chunks from the store, all
missing chunks of a request in parallel. With prefetching, a history-based window as in
the paper follows sequential runs per file: after ``i`` sequential chunk accesses it grows
to 2^(i-1) chunks (at most ``max_window``), fetched in parallel with the demand chunks, so
they compete with them as in the paper.

Per chunk size, with and without prefetching: mean read and write latency (time until the
demand chunks arrived; hits cost nothing), read and write hit ratios (per chunk access),
and the objects and bytes fetched.

The trace: ``op,file,offset,length`` lines (op r or w), or a synthetic one: files of
log-uniform sizes, each access a sequential run from a random offset, popular files
chosen more often (Zipf), reads:writes 2:1.
"""

from __future__ import annotations

import csv
import json
import math
import random
import statistics
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from swift_dss.loadgen.driver import Driver, DriverOptions
from swift_dss.loadgen.payload import PayloadSource
from swift_dss.loadgen.plan import Request
from swift_dss.loadgen.protocols import Protocol
from swift_dss.loadgen.report import write_csv
from swift_dss.loadgen.sweep import MAX_SIZE
from swift_dss.sizes import format_size


@dataclass(frozen=True)
class Access:
    op: str  # "r" or "w"
    file: int
    offset: int
    length: int


@dataclass
class StudyConfig:
    chunk_sizes: tuple[int, ...] = (64 << 10, 1 << 20, 4 << 20)
    cache_bytes: int = 8 << 20
    max_window: int = 8
    flush_every: int = 200  # accesses between write-backs (the paper: every 30 s)
    parallelism: int = 16  # transfers at once for fetches and write-backs
    timeout: float = 120.0
    container: str = "dss-cache-study"
    seed: int = 1

    def __post_init__(self) -> None:
        if not self.chunk_sizes or not all(0 < cs <= MAX_SIZE for cs in self.chunk_sizes):
            raise ValueError(f"chunk sizes take 1 byte to {format_size(MAX_SIZE)}, e.g. 64KiB,1MiB")
        if len(set(self.chunk_sizes)) != len(self.chunk_sizes):
            raise ValueError("chunk sizes are each given once")


def synthetic_trace(
    files: int = 12,
    accesses: int = 400,
    min_size: int = 256 << 10,
    max_size: int = 8 << 20,
    io_size: int = 64 << 10,
    seed: int = 1,
) -> tuple[dict[int, int], list[Access]]:
    if min(min_size, max_size) <= 0:
        raise ValueError(f"file sizes must be above 0 bytes, not {min(min_size, max_size)}")
    rng = random.Random(seed)
    sizes = {
        f: int(math.exp(rng.uniform(math.log(min_size), math.log(max_size)))) for f in range(files)
    }
    weights = [1 / (k + 1) for k in range(files)]
    trace: list[Access] = []
    while len(trace) < accesses:
        f = rng.choices(range(files), weights)[0]
        op = "w" if rng.random() < 1 / 3 else "r"
        pos = rng.randrange(0, max(1, sizes[f] - io_size))
        for _ in range(rng.randint(1, 32)):
            if pos >= sizes[f] or len(trace) >= accesses:
                break
            n = min(io_size, sizes[f] - pos)
            trace.append(Access(op, f, pos, n))
            pos += n
    return sizes, trace


_OPS = {"r": "r", "read": "r", "w": "w", "write": "w"}
_LINE = "op,file,offset,length (op r or w, offset from 0, length from 1)"


def read_trace(path: Path) -> tuple[dict[int, int], list[Access]]:
    """The accesses of a CSV trace; files are named as the trace names them (numbers or not)."""
    sizes: dict[int, int] = {}
    files: dict[str, int] = {}
    trace = []
    with open(path, newline="") as f:
        try:
            rows = list(csv.reader(f))
        except (UnicodeDecodeError, csv.Error) as err:
            raise ValueError(f"{path} is not a CSV text file: {err}") from err
    for line, row in enumerate(rows, 1):
        if not row or row[0].strip().startswith("#") or row[0].strip() == "op":
            continue
        a = _access(row, files)
        if a is None:
            raise ValueError(f"{path} line {line}: {','.join(row)!r} is not {_LINE}")
        trace.append(a)
        sizes[a.file] = max(sizes.get(a.file, 0), a.offset + a.length)
    if not trace:
        raise ValueError(f"{path} has no accesses (op,file,offset,length lines)")
    return sizes, trace


def _access(row: list[str], files: dict[str, int]) -> Access | None:
    if len(row) != 4:
        return None
    op, name, offset, length = (field.strip() for field in row)
    if op.lower() not in _OPS or not name or not offset.isdigit() or not length.isdigit():
        return None
    if int(length) == 0:
        return None
    return Access(_OPS[op.lower()], files.setdefault(name, len(files)), int(offset), int(length))


class _Latencies:
    """A recorder for the driver that keeps each request's latency (one batch at a time)."""

    def __init__(self) -> None:
        self.cells: dict = {}
        self.batch: list[tuple[str, str, float, int]] = []

    def record(self, key: tuple, outcome: str, _end: float, _ttfb: float, total: float,
               nbytes: int) -> None:  # fmt: skip
        self.batch.append((key[2] or "", outcome, total, nbytes))


class ChunkStore:
    def __init__(self, proto: Protocol, cfg: StudyConfig, sizes: dict[int, int]) -> None:
        self.cfg = cfg
        self.sizes = sizes
        self.lat = _Latencies()
        self.driver = Driver(proto, PayloadSource(cfg.seed), self.lat,  # type: ignore[arg-type]
                             DriverOptions(cfg.parallelism, cfg.timeout))  # fmt: skip

    def close(self) -> None:
        self.driver.close()

    def _req(self, op: str, role: str, cs: int, f: int, c: int) -> Request:
        size = min(cs, self.sizes[f] - c * cs)
        ci = self.cfg.chunk_sizes.index(cs)
        return Request(0, "cache", op, role, None, size, None, self.cfg.container,
                       f"c{cs}/f{f}/{c:06d}", (ci << 40) | (f << 20) | c)  # fmt: skip

    def batch(self, reqs: Iterable[Request]) -> list[tuple[str, str, float, int]]:
        self.lat.batch = []
        self.driver.run("cache", iter(list(reqs)))
        return self.lat.batch

    def setup(self) -> None:
        self.batch([Request(0, "cache", "create_container", None, None, 0, None,
                            self.cfg.container, None, -1)])  # fmt: skip
        for cs in self.cfg.chunk_sizes:
            reqs = [self._req("put", "setup", cs, f, c) for f, size in self.sizes.items()
                    for c in range(math.ceil(size / cs))]  # fmt: skip
            bad = [b for b in self.batch(reqs) if not b[1].startswith("2")]
            if bad:
                raise RuntimeError(f"setup: {len(bad)} chunk uploads failed ({bad[0][1]})")

    def cleanup(self) -> None:
        for cs in self.cfg.chunk_sizes:
            self.batch(self._req("delete", "cleanup", cs, f, c) for f, size in self.sizes.items()
                       for c in range(math.ceil(size / cs)))  # fmt: skip
        self.batch([Request(0, "cache", "delete_container", None, None, 0, None,
                            self.cfg.container, None, -1)])  # fmt: skip


def emulate(store: ChunkStore, trace: list[Access], cs: int, prefetch: bool) -> dict[str, Any]:
    cfg = store.cfg
    cache: OrderedDict[tuple[int, int], bool] = OrderedDict()  # (file, chunk) -> dirty
    used = 0
    run_len: dict[int, tuple[int, int]] = {}  # file -> (last chunk, sequential run length)
    lat = {"r": [], "w": []}  # type: dict[str, list[float]]
    hits = {"r": 0, "w": 0}
    accesses = {"r": 0, "w": 0}
    fetched = fetched_bytes = wasted = written_back = 0

    def chunk_size(f: int, c: int) -> int:
        return min(cs, store.sizes[f] - c * cs)

    def evict_to(room: int) -> list[Request]:
        nonlocal used
        out = []
        while cache and used + room > cfg.cache_bytes:
            (f, c), dirty = cache.popitem(last=False)
            used -= chunk_size(f, c)
            if dirty:
                out.append(store._req("put", "writeback", cs, f, c))
        return out

    for n, a in enumerate(trace):
        first, last = a.offset // cs, (a.offset + a.length - 1) // cs
        demand = []
        for c in range(first, last + 1):
            accesses[a.op] += 1
            if (a.file, c) in cache:
                hits[a.op] += 1
                cache.move_to_end((a.file, c))
                if a.op == "w":
                    cache[(a.file, c)] = True
            else:
                whole = (
                    a.op == "w"
                    and a.offset <= c * cs
                    and (a.offset + a.length >= c * cs + chunk_size(a.file, c))
                )
                if not whole:  # a partial write reads the chunk first
                    demand.append(c)
                else:  # a miss that needs no fetch: the write covers the chunk
                    _admit(cache, a.file, c, True)
                    used += chunk_size(a.file, c)
        extra: list[int] = []
        prev, length = run_len.get(a.file, (-2, 0))
        length = length + (last - first + 1) if first in (prev, prev + 1) else 1
        run_len[a.file] = (last, length)
        if prefetch and length > 1:
            window = min(cfg.max_window, 2 ** (min(length, 16) - 1))
            top = math.ceil(store.sizes[a.file] / cs)
            extra = [c for c in range(last + 1, min(top, last + 1 + window))
                     if (a.file, c) not in cache]  # fmt: skip
        wanted = demand + extra
        writebacks = evict_to(sum(chunk_size(a.file, c) for c in wanted))
        if wanted or writebacks:
            reqs = [store._req("get", "demand", cs, a.file, c) for c in demand]
            reqs += [store._req("get", "prefetch", cs, a.file, c) for c in extra]
            results = store.batch(reqs + writebacks)
            written_back += len(writebacks)
            for role, outcome, _t, nbytes in results:
                if role in ("demand", "prefetch"):
                    fetched += 1
                    fetched_bytes += nbytes
                    if not outcome.startswith("2"):
                        wasted += 1
            demand_lat = [t for role, _o, t, _b in results if role == "demand"]
            lat[a.op].append(max(demand_lat) if demand_lat else 0.0)
        else:
            lat[a.op].append(0.0)
        for c in wanted:
            _admit(cache, a.file, c, a.op == "w" and c in demand)
            used += chunk_size(a.file, c)
        if (n + 1) % cfg.flush_every == 0:
            dirty = [k for k, d in cache.items() if d]
            store.batch(store._req("put", "writeback", cs, f, c) for f, c in dirty)
            written_back += len(dirty)
            for k in dirty:
                cache[k] = False
    return {
        "chunk_size": cs,
        "chunk_label": format_size(cs),
        "prefetch": prefetch,
        "read_lat_mean_ms": round(1000 * statistics.fmean(lat["r"]), 3) if lat["r"] else None,
        "write_lat_mean_ms": round(1000 * statistics.fmean(lat["w"]), 3) if lat["w"] else None,
        "read_hit_ratio": round(hits["r"] / accesses["r"], 4) if accesses["r"] else None,
        "write_hit_ratio": round(hits["w"] / accesses["w"], 4) if accesses["w"] else None,
        "objects_fetched": fetched,
        "mb_fetched": round(fetched_bytes / 1e6, 3),
        "failed_fetches": wasted,
        "chunks_written_back": written_back,
    }


def _admit(cache: OrderedDict, f: int, c: int, dirty: bool) -> None:
    cache[(f, c)] = dirty or cache.get((f, c), False)
    cache.move_to_end((f, c))


def study(
    proto: Protocol,
    cfg: StudyConfig,
    sizes: dict[int, int],
    trace: list[Access],
    out: Path,
    progress: Callable[[str], None] = lambda _m: None,
) -> dict[str, Any]:
    store = ChunkStore(proto, cfg, sizes)
    rows = []
    try:
        store.setup()
        for cs in cfg.chunk_sizes:
            for prefetch in (False, True):
                t = time.perf_counter()
                rows.append(emulate(store, trace, cs, prefetch))
                r = rows[-1]
                took = time.perf_counter() - t
                progress(f"chunk {r['chunk_label']} prefetch={prefetch}: read "
                         f"{r['read_lat_mean_ms']} ms hit {r['read_hit_ratio']}, write "
                         f"{r['write_lat_mean_ms']} ms ({took:.1f} s)")  # fmt: skip
        store.cleanup()
    finally:
        store.close()
    doc = {"kind": "cache-study", "files": len(sizes), "footprint": sum(sizes.values()),
           "accesses": len(trace), "cache_bytes": cfg.cache_bytes,
           "max_window": cfg.max_window, "rows": rows}  # fmt: skip
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(doc, indent=1) + "\n")
    write_csv(out / "results.csv", rows)
    _plot(out, rows)
    return doc


def _plot(out: Path, rows: list[dict[str, Any]]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for prefetch, style in ((False, "o-"), (True, "s--")):
        pts = [r for r in rows if r["prefetch"] is prefetch]
        xs = [r["chunk_label"] for r in pts]
        tag = "prefetch" if prefetch else "no prefetch"
        for key, name in (("read_lat_mean_ms", "read"), ("write_lat_mean_ms", "write")):
            axes[0].plot(xs, [r[key] or 0 for r in pts], style, label=f"{name}, {tag}")
        for key, name in (("read_hit_ratio", "read"), ("write_hit_ratio", "write")):
            axes[1].plot(xs, [r[key] or 0 for r in pts], style, label=f"{name}, {tag}")
    axes[0].set_ylabel("mean latency (ms)")
    axes[1].set_ylabel("hit ratio")
    for ax in axes:
        ax.set_xlabel("chunk size")
        ax.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(out / "cache_study.png", dpi=100)
    plt.close(fig)
