"""The paper's orderings of the configurations (section V.C), checked on a summary:
which held, which did not, by how much.

PUT bandwidth: SSD > DSS@10 > DSS@5 > HDD > LRU (both sizes).
GET bandwidth: SSD > DSS@10 > HDD >= LRU@10 > LRU@5.
GET latency (time to first byte): DSS@10 < SSD < LRU@10.
Cache content (Fig. 8): large objects (VMDK and others over 10 MiB) take most of LRU's cache
and a small share of DSS's; DSS's cache holds mostly metadata and small files.
"""

from __future__ import annotations

from typing import Any

#: (what, metric, [(a, relation, b), ...]); relations ">", ">=" and "<" on the means.
ORDERS: tuple[tuple[str, str, tuple[tuple[str, str, str], ...]], ...] = (
    (
        "PUT bandwidth",
        "put_mbps",
        (
            ("ssd@10%", ">", "dss@10%"),
            ("dss@10%", ">", "dss@5%"),
            ("dss@5%", ">", "hdd@10%"),
            ("hdd@10%", ">", "lru@10%"),
            ("hdd@10%", ">", "lru@5%"),
        ),
    ),
    (
        "GET bandwidth",
        "get_mbps",
        (
            ("ssd@10%", ">", "dss@10%"),
            ("dss@10%", ">", "hdd@10%"),
            ("hdd@10%", ">=", "lru@10%"),
            ("lru@10%", ">", "lru@5%"),
        ),
    ),
    (
        "GET latency",
        "get_ttfb_ms",
        (("dss@10%", "<", "ssd@10%"), ("ssd@10%", "<", "lru@10%")),
    ),
)

LARGE = "large (>10 MiB)"
#: Slices of Fig. 8 the paper says DSS keeps: file-system metadata and the small Files.
SMALL = ("FS metadata", "Files")

_HOLDS = {">": lambda a, b: a > b, ">=": lambda a, b: a >= b, "<": lambda a, b: a < b}


def check(summary: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per pair: the two measured values, whether the paper's relation held (None
    when either configuration was not measured)."""
    rows = []
    for what, metric, pairs in ORDERS:
        for a, rel, b in pairs:
            va = (summary.get(a) or {}).get(metric)
            vb = (summary.get(b) or {}).get(metric)
            held = None if va is None or vb is None else _HOLDS[rel](va, vb)
            rows.append({"what": what, "pair": f"{a} {rel} {b}", "a": va, "b": vb, "held": held})
    return rows


def content(summary: dict[str, Any]) -> list[dict[str, Any]]:
    """Fig. 8's statements per cache size: DSS caches a smaller share of large objects than
    LRU, and more metadata and small files than large objects."""
    rows = []
    pcts = sorted({k.split("@", 1)[1] for k in summary if k.startswith("dss@")})
    for pct in pcts:
        dss = (summary.get(f"dss@{pct}") or {}).get("content_shares")
        lru = (summary.get(f"lru@{pct}") or {}).get("content_shares")
        if dss and lru:
            a, b = dss.get(LARGE, 0.0), lru.get(LARGE, 0.0)
            rows.append(
                {"what": "Cache content", "pair": f"large objects: dss@{pct} < lru@{pct}",
                 "a": a, "b": b, "held": a < b}
            )  # fmt: skip
        if dss:
            small = sum(dss.get(k, 0.0) for k in SMALL)
            rows.append(
                {"what": "Cache content", "pair": f"dss@{pct}: metadata + Files > large objects",
                 "a": small, "b": dss.get(LARGE, 0.0), "held": small > dss.get(LARGE, 0.0)}
            )  # fmt: skip
    return rows
