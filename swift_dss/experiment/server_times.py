"""Where a stream's requests spend their time: each server's own time for them, read
from the cluster's access logs.

A client sees one latency per request. Behind it, the proxy logs its own time for the
request; each object server logs its time for its replica (for a PUT: the body, the
write, the fsync and renames, and the container update it waits for); each container
server logs its time for that update. Set side by side per stream, they say in which
server a request waited. Times are divided by the dilation K, so that they are read in
the emulated testbed's time like every other latency.

Only object requests of the traffic study's streams count: their containers are named
``traffic-<stream>-<n>``.
"""

from __future__ import annotations

import re
import statistics
from collections import defaultdict
from pathlib import Path
from typing import Any

from swift_dss.experiment import swift_logs as log

#: A storage server's access line (Swift's default format): the request, its status,
#: and the request time after the quoted user agent.
_SERVER = re.compile(r'"(?P<method>[A-Z]+) (?P<path>/\S+)" \d{3} .*?" (?P<time>\d+\.\d+) "')
_STREAM = re.compile(r"^traffic-(?P<stream>[a-z]+)-\d+$")
SERVERS = ("proxy", "object", "container")


def stream_of(path: str, account_at: int) -> str | None:
    """The stream of an object path, whose account is its ACCOUNT_AT-th part (the proxy's
    /v1/AUTH_x/c/o: 1; a storage server's /dev/part/AUTH_x/c/o: 2); None for a path that
    names no object of a stream's container."""
    parts = path.split("?", 1)[0].strip("/").split("/")
    if len(parts) < account_at + 3:
        return None
    m = _STREAM.match(parts[account_at + 1])
    return m.group("stream") if m else None


def proxy_times(lines: list[str]) -> dict[tuple[str, str], list[float]]:
    """Seconds per (method, stream) of the clients' object requests, from proxy LINES."""
    out: dict[tuple[str, str], list[float]] = defaultdict(list)
    for line in lines:
        fields = line.split(log.PROXY_PREFIX, 1)[-1].split()
        if len(fields) <= log.SOURCE or fields[log.SOURCE] != "-":
            continue
        stream = stream_of(fields[log.PATH], 1)
        try:
            seconds = float(fields[log.REQUEST_TIME])
        except ValueError:
            continue
        if stream:
            out[(fields[log.METHOD], stream)].append(seconds)
    return out


def server_times(lines: list[str]) -> dict[tuple[str, str], list[float]]:
    """Seconds per (method, stream) of object requests, from storage server LINES."""
    out: dict[tuple[str, str], list[float]] = defaultdict(list)
    for line in lines:
        m = _SERVER.search(line)
        stream = stream_of(m.group("path"), 2) if m else None
        if m and stream:
            out[(m.group("method"), stream)].append(float(m.group("time")))
    return out


def figures(seconds: list[float], dilation: int) -> dict[str, Any]:
    """Count, mean, median, 90th percentile (emulated ms) and the share under 100 ms."""
    ms = sorted(s * 1000 / dilation for s in seconds)
    n = len(ms)
    return {
        "n": n,
        "mean_ms": round(statistics.fmean(ms), 1),
        "p50_ms": round(ms[n // 2], 1),
        "p90_ms": round(ms[min(n - 1, int(n * 0.9))], 1),
        "under_100ms": round(sum(t < 100 for t in ms) / n, 4),
    }


def from_cluster(cluster_dir: Path, dilation: int = 1) -> dict[str, Any]:
    """{server: {stream: {method: figures}}} from every access log under a cluster's
    directory; a server without lines is left out."""
    raw = {
        "proxy": proxy_times(log.lines(cluster_dir, "proxy-server")),
        "object": server_times(log.lines(cluster_dir, "object-server")),
        "container": server_times(log.lines(cluster_dir, "container-server")),
    }
    out: dict[str, Any] = {}
    for server, times in raw.items():
        for (method, stream), seconds in sorted(times.items()):
            per = out.setdefault(server, {}).setdefault(stream, {})
            per[method] = figures(seconds, dilation)
    return out


def table(runs: list[tuple[str, dict[str, Any]]], stream: str, method: str) -> list[str]:
    """A markdown table, a row per run, of STREAM's METHOD requests at each server (mean
    and median ms, share under 100 ms); empty when no run has them."""
    rows = []
    for name, times in runs:
        cells = []
        for server in SERVERS:
            f = (times.get(server, {}).get(stream) or {}).get(method)
            cells.append(
                f"{f['mean_ms']:,.0f} / {f['p50_ms']:,.0f} / {100 * f['under_100ms']:.0f}%"
                if f
                else "-"
            )
        if any(c != "-" for c in cells):
            rows.append(f"| {name} | " + " | ".join(cells) + " |")
    if not rows:
        return []
    return [
        "| run | proxy: mean / p50 ms / <100 ms | object servers | container servers |",
        "|---|---:|---:|---:|",
        *rows,
    ]
