"""The cost of dss: the same all-in-one cluster with and without it, measured side by side.

Both clusters run at once (the baseline has the stock pipeline and object server; ours has
the dss middleware and the dss object server on dssio's `none` backend), both on plain
directories on a tmpfs (tier mode none; `dss bench saio-tier` measures the tier), and the
rounds alternate between them so that drift in the machine's load falls on both alike. Every
request carries a class, which the baseline simply stores nowhere.
"""

from __future__ import annotations

import http.client
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from swift_dss.bench.report import Figure
from swift_dss.deploy.saio import Saio, SaioConfig

KIB = 1024
SIZES = {"4KiB": 4 * KIB, "4MiB": 4 * KIB * KIB}


def batch(size: int) -> int:
    """Requests per round: small rounds, many of them, alternate the clusters finely enough
    that a burst of load elsewhere on the machine falls on both."""
    return 40 if size < 1 << 20 else 4


@dataclass
class Target:
    name: str
    cluster: Saio
    host: str
    port: int
    path: str
    token: str

    @classmethod
    def connect(cls, name: str, cluster: Saio) -> Target:
        url, token = cluster.get_token()
        parts = urlsplit(url)
        return cls(
            name, cluster, parts.hostname or "127.0.0.1", parts.port or 80, parts.path, token
        )

    def conn(self) -> http.client.HTTPConnection:
        return http.client.HTTPConnection(self.host, self.port, timeout=120)


def _request(
    conn: http.client.HTTPConnection, method: str, path: str, headers: dict, body: bytes | None
) -> int:
    conn.request(method, path, body=body, headers=headers)
    resp = conn.getresponse()
    n = 0
    while chunk := resp.read(1 << 20):
        n += len(chunk)
    if resp.status >= 300:
        raise RuntimeError(f"{method} {path}: HTTP {resp.status}")
    return n


def run_round(target: Target, op: str, size: int, count: int, data: bytes) -> float:
    """Seconds for ``count`` sequential requests over one keep-alive connection."""
    conn = target.conn()
    headers = {"X-Auth-Token": target.token}
    # The objects are classified when written; a GET with class headers would reclassify.
    put_headers = {**headers, "X-DSS-Object-Class": "25", "Content-Length": str(size)}
    try:
        start = time.perf_counter()
        for i in range(count):
            path = f"{target.path}/bench/o{size}-{i}"
            if op == "put":
                _request(conn, "PUT", path, put_headers, data)
            else:
                _request(conn, "GET", path, headers, None)
        return time.perf_counter() - start
    finally:
        conn.close()


def measure(
    ours: Target,
    baseline: Target,
    rounds: int,
    goal: float,
    progress: Callable[[str], None] = lambda _msg: None,
) -> list[Figure]:
    """Throughput of each side, and requests per CPU-second of each side's servers.

    Wall-clock throughput is what the goal is about, but on a machine shared with other
    work it moves with whatever else runs; the CPU the servers spend per request does not,
    so it is reported beside it, with the same goal.
    """
    figures = []
    for label, size in SIZES.items():
        count = batch(size)
        data = bytes(range(256)) * (size // 256)
        for op in ("put", "get"):
            times: dict[str, list[float]] = {"ours": [], "baseline": []}
            cpu: dict[str, float] = {"ours": 0.0, "baseline": 0.0}
            for r in range(rounds):
                # Alternate who goes first so neither always runs on a warmer machine.
                order = (ours, baseline) if r % 2 == 0 else (baseline, ours)
                for target in order:
                    key = "ours" if target is ours else "baseline"
                    before = target.cluster.cpu_seconds()
                    times[key].append(run_round(target, op, size, count, data))
                    cpu[key] += target.cluster.cpu_seconds() - before
                if (r + 1) % 5 == 0 or r + 1 == rounds:
                    progress(f"{op} {label}: round {r + 1}/{rounds}")
            unit = "ops/s" if size < 1 << 20 else "MB/s"
            scale = count if unit == "ops/s" else count * size / 1e6
            name = f"{op.upper()} {label}"
            figures.append(
                Figure(
                    name,
                    scale / statistics.median(times["ours"]),
                    scale / statistics.median(times["baseline"]),
                    unit,
                    goal=goal,
                )
            )
            requests = count * rounds
            figures.append(
                Figure(
                    f"{name} server CPU",
                    requests / max(cpu["ours"], 1e-9),
                    requests / max(cpu["baseline"], 1e-9),
                    "requests/CPU-s",
                    goal=goal,
                )
            )
    return figures


def compare(
    ours: SaioConfig,
    baseline: SaioConfig,
    rounds: int,
    goal: float,
    progress: Callable[[str], None] = print,
) -> list[Figure]:
    """Bring both clusters up, warm them, measure them side by side, take them down."""
    clusters = {"ours": Saio(ours), "baseline": Saio(baseline)}
    try:
        for c in clusters.values():
            c.up()
        targets = {k: Target.connect(k, c) for k, c in clusters.items()}
        for t in targets.values():
            conn = t.conn()
            _request(conn, "PUT", f"{t.path}/bench", {"X-Auth-Token": t.token}, b"")
            conn.close()
        # One warm-up round each fills caches and creates the objects the GETs read.
        for t in targets.values():
            for size in SIZES.values():
                run_round(t, "put", size, batch(size), bytes(size))
        return measure(targets["ours"], targets["baseline"], rounds, goal, progress)
    finally:
        for c in clusters.values():
            c.down()


def run(out: Path, rounds: int = 25, progress: Callable[[str], None] = print) -> list[Figure]:
    return compare(
        SaioConfig(dir=out / "with-dss", port=0, dss=True, dssio_backend="none", tier_mode=None),
        SaioConfig(dir=out / "without-dss", port=0, dss=False, tier_mode=None),
        rounds,
        goal=0.97,
        progress=progress,
    )
