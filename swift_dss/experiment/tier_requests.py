"""What the storage nodes' tier daemons spent their time answering during a run: per
kind of FUSE request (write, fsync, create, rename, setxattr, ...), how many the daemons
answered and their mean time from arrival to reply, from `dss-tier stats` before and
after the run.

An object server waits on each of these: its writes block its worker's event loop, its
fsyncs hold a thread of its pool. Set beside the servers' own times (server_times), they
say whether a request waited on the tier or elsewhere in its server. Times are divided by
the dilation K, as every latency is, to read in the emulated testbed's time.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

#: The requests of an object server's PUT, in the order it makes them, for the report.
PUT_KINDS = ("create", "fallocate", "write", "fsync", "setxattr", "rename", "fsyncdir")


def totals(stats: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Counts and seconds by kind, and the concurrency sum, over every daemon's stats."""
    counts: Counter[str] = Counter()
    seconds: Counter[str] = Counter()
    under_way = 0
    for doc in stats.values():
        counts.update(doc.get("fuse_requests") or {})
        seconds.update(doc.get("fuse_request_s") or {})
        under_way += int(doc.get("fuse_under_way_seen") or 0)
    return {"counts": dict(counts), "seconds": dict(seconds), "under_way_seen": under_way}


def delta(
    after: dict[str, dict[str, Any]], before: dict[str, dict[str, Any]], dilation: int = 1
) -> dict[str, Any]:
    """{"kinds": {kind: {n, mean_ms, total_s}}, "concurrency"} of the requests answered
    between BEFORE and AFTER; empty kinds when the daemons did not time their requests
    (a tier older than the timing)."""
    a, b = totals(after), totals(before)
    kinds: dict[str, dict[str, float]] = {}
    for kind, n_after in sorted(a["counts"].items()):
        n = n_after - b["counts"].get(kind, 0)
        if n <= 0 or kind not in a["seconds"]:
            continue
        s = (a["seconds"][kind] - b["seconds"].get(kind, 0.0)) / dilation
        kinds[kind] = {"n": n, "mean_ms": round(1000 * s / n, 3), "total_s": round(s, 3)}
    n_all = sum(k["n"] for k in kinds.values())
    seen = a["under_way_seen"] - b["under_way_seen"]
    return {"kinds": kinds, "concurrency": round(seen / n_all, 2) if n_all and seen else None}


def table(runs: list[tuple[str, dict[str, Any]]], kinds: tuple[str, ...] = PUT_KINDS) -> list[str]:
    """A markdown table, a row per run, of each kind's mean time in ms (and count), and
    the concurrency arrivals met; empty when no run has timed requests."""
    rows = []
    for name, req in runs:
        per = (req or {}).get("kinds") or {}
        if not per:
            continue
        cells = [f"{per[k]['mean_ms']:,.2f} ({per[k]['n']:,})" if k in per else "-" for k in kinds]
        conc = req.get("concurrency")
        rows.append(f"| {name} | " + " | ".join(cells) + f" | {'-' if conc is None else conc} |")
    if not rows:
        return []
    return [
        "| run | " + " | ".join(kinds) + " | under way at arrival |",
        "|---|" + "---:|" * (len(kinds) + 1),
        *rows,
    ]
