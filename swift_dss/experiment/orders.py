"""The paper's orderings of the configurations (section V.C), checked on a summary:
which held, which did not, by how much.

PUT bandwidth: SSD > DSS@10 > DSS@5 > HDD > LRU (both sizes).
GET bandwidth: SSD > DSS@10 > HDD >= LRU@10 > LRU@5.
GET latency (time to first byte): DSS@10 < SSD < LRU@10.
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
