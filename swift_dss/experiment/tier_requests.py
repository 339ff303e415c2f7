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
    by_class: dict[str, tuple[Counter[str], Counter[str]]] = {}
    under_way = 0
    for doc in stats.values():
        counts.update(doc.get("fuse_requests") or {})
        seconds.update(doc.get("fuse_request_s") or {})
        under_way += int(doc.get("fuse_under_way_seen") or 0)
        for cls, kinds in (doc.get("fuse_class_requests") or {}).items():
            n, s = by_class.setdefault(cls, (Counter(), Counter()))
            for kind, (count, secs) in kinds.items():
                n[kind] += count
                s[kind] += secs
    return {
        "counts": dict(counts),
        "seconds": dict(seconds),
        "under_way_seen": under_way,
        "by_class": {c: (dict(n), dict(s)) for c, (n, s) in by_class.items()},
    }


def _kinds(
    after: tuple[dict[str, int], dict[str, float]],
    before: tuple[dict[str, int], dict[str, float]],
    dilation: int,
) -> dict[str, dict[str, float]]:
    """{kind: {n, mean_ms, total_s}} of the requests answered between BEFORE and AFTER,
    each a (counts, seconds) pair; kinds without seconds (untimed) are left out."""
    kinds: dict[str, dict[str, float]] = {}
    for kind, n_after in sorted(after[0].items()):
        n = n_after - before[0].get(kind, 0)
        if n <= 0 or kind not in after[1]:
            continue
        s = (after[1][kind] - before[1].get(kind, 0.0)) / dilation
        kinds[kind] = {"n": n, "mean_ms": round(1000 * s / n, 3), "total_s": round(s, 3)}
    return kinds


def delta(
    after: dict[str, dict[str, Any]], before: dict[str, dict[str, Any]], dilation: int = 1
) -> dict[str, Any]:
    """{"kinds": {kind: {n, mean_ms, total_s}}, "classes": {class: {kind: ...}},
    "concurrency"} of the requests answered between BEFORE and AFTER, the classes' for
    the data requests only; empty kinds when the daemons did not time their requests (a
    tier older than the timing)."""
    a, b = totals(after), totals(before)
    kinds = _kinds((a["counts"], a["seconds"]), (b["counts"], b["seconds"]), dilation)
    classes = {
        cls: per
        for cls, pair in sorted(a["by_class"].items(), key=lambda item: int(item[0]))
        if (per := _kinds(pair, b["by_class"].get(cls, ({}, {})), dilation))
    }
    n_all = sum(k["n"] for k in kinds.values())
    seen = a["under_way_seen"] - b["under_way_seen"]
    return {
        "kinds": kinds,
        "classes": classes,
        "concurrency": round(seen / n_all, 2) if n_all and seen else None,
    }


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


def class_table(
    runs: list[tuple[str, dict[str, Any] | None, dict[str, str]]],
    names: dict[str, str],
    kinds: tuple[str, ...] = ("write", "fsync"),
) -> list[str]:
    """A markdown table, a row per run, of each named class's mean time in ms per kind,
    with the device the run placed the class on; RUNS are (name, requests, placement
    {class: "ssd"|"hdd"}) and NAMES {class: stream}. Empty when no run has them."""
    rows = []
    for run, req, placement in runs:
        per = (req or {}).get("classes") or {}
        if not per:
            continue
        cells = []
        for cls in names:
            got = per.get(cls) or {}
            times = " / ".join(f"{got[k]['mean_ms']:,.1f}" if k in got else "-" for k in kinds)
            cells.append(f"{times} ({placement.get(cls, '-')})")
        rows.append(f"| {run} | " + " | ".join(cells) + " |")
    if not rows:
        return []
    what = " / ".join(kinds)
    return [
        "| run | " + " | ".join(f"{s}: {what} ms" for s in names.values()) + " |",
        "|---|" + "---:|" * len(names),
        *rows,
    ]
