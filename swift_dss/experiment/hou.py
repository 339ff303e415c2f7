"""The shape of Hou et al.'s figures, as numbers a sweep can be held against.

The study's absolute figures are of S3 in 2015 from EC2 clients, so they cannot be
matched here; what can is the shape of its Figs. 1-6 and 10-11: how much parallelism buys
a small request, where latency starts to climb, how much larger requests gain, how far a
long round trip lowers each size's peak. Each `Shape` is one such statement as a ratio of
two cells of a sweep (bandwidth, mean latency or client CPU at a size and parallelism, or
a size's peak over all parallelism), with the study's value from its text. A ratio is
read as up (above 1.15), flat or down (below 1/1.15); ours has the study's shape when it
reads the same way, whatever its size.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from swift_dss.sizes import format_size

KIB = 1024
MIB = 1024 * KIB
#: Closer to 1 than this, a ratio reads as flat.
FLAT = 1.15

Docs = dict[str, dict[str, Any]]  # case name -> its sweep's results.json


def cell(doc: dict[str, Any], op: str, size: int, parallelism: int) -> dict[str, Any] | None:
    for r in doc["rows"]:
        if r["op"] == op and r["size"] == size and r["parallelism"] == parallelism:
            return r
    return None


def peak_by_size(doc: dict[str, Any], op: str) -> dict[int, dict[str, Any]]:
    """Size -> the row of the best parallelism for it (the study's "peak bandwidth")."""
    out: dict[int, dict[str, Any]] = {}
    for r in doc["rows"]:
        if r["op"] == op and (r["size"] not in out or r["mbps"] > out[r["size"]]["mbps"]):
            out[r["size"]] = r
    return out


def peak(doc: dict[str, Any], op: str, size: int) -> dict[str, Any] | None:
    return peak_by_size(doc, op).get(size)


def _ratio(a: dict[str, Any] | None, b: dict[str, Any] | None, field: str) -> float | None:
    if a is None or b is None or not b[field] or a[field] != a[field] or b[field] != b[field]:
        return None
    return a[field] / b[field]


def direction(ratio: float | None) -> str:
    if ratio is None:
        return "-"
    if ratio > FLAT:
        return "up"
    if ratio < 1 / FLAT:
        return "down"
    return "flat"


@dataclass(frozen=True)
class Shape:
    figure: str
    what: str
    study: float
    measure: Callable[[Docs], float | None]

    def row(self, docs: Docs) -> dict[str, Any]:
        ours = self.measure(docs)
        return {
            "figure": self.figure,
            "what": self.what,
            "study": self.study,
            "ours": None if ours is None else round(ours, 3),
            "same_shape": None if ours is None else direction(ours) == direction(self.study),
        }


def _in(case: str, f: Callable[[dict[str, Any]], float | None]) -> Callable[[Docs], float | None]:
    return lambda docs: f(docs[case]) if case in docs else None


def _gain(op: str, size: int) -> Callable[[dict[str, Any]], float | None]:
    return lambda d: _ratio(peak(d, op, size), cell(d, op, size, 1), "mbps")


def _lat(op: str, size: int, p: int, over: int) -> Callable[[dict[str, Any]], float | None]:
    return lambda d: _ratio(cell(d, op, size, p), cell(d, op, size, over), "lat_mean_ms")


def _peaks(op: str, size: int, over: int) -> Callable[[dict[str, Any]], float | None]:
    return lambda d: _ratio(peak(d, op, size), peak(d, op, over), "mbps")


def _cpu(
    small: tuple[int, int], large: tuple[int, int]
) -> Callable[[dict[str, Any]], float | None]:
    return lambda d: _ratio(cell(d, "put", *small), cell(d, "put", *large), "cpu_pct")


def _far(
    far: str, near: str, pick: Callable[[dict[str, Any]], dict[str, Any] | None], field: str
) -> Callable[[Docs], float | None]:
    def measure(docs: Docs) -> float | None:
        if far not in docs or near not in docs:
            return None
        return _ratio(pick(docs[far]), pick(docs[near]), field)

    return measure


#: Combinations that keep 4 MiB in flight (Fig. 6), as the sweep's grid has them.
COMBINATIONS = ((64 * KIB, 64), (256 * KIB, 16), (1 * MIB, 4), (4 * MIB, 1))


def best_combination(doc: dict[str, Any], op: str = "put") -> tuple[str, float] | None:
    """(the best of COMBINATIONS, its bandwidth over the worst's), None if any is missing."""
    cells = [(s, p, cell(doc, op, s, p)) for s, p in COMBINATIONS]
    if any(c is None or not c["mbps"] for _, _, c in cells):
        return None
    ranked = sorted(cells, key=lambda t: t[2]["mbps"])  # type: ignore[index]
    (s, p, top), bottom = ranked[-1], ranked[0][2]
    return f"{format_size(s)} x {p}", top["mbps"] / bottom["mbps"]  # type: ignore[index]


def shapes(near: str = "baseline", far: str = "long-distance") -> list[Shape]:
    """The study's statements, measured in case NEAR (and FAR for its section IV-C)."""
    return [
        Shape(
            "1a",
            "1 KiB PUT: peak bandwidth over parallelism 1's",
            27.0,
            _in(near, _gain("put", KIB)),
        ),
        Shape(
            "1b",
            "1 KiB GET: peak bandwidth over parallelism 1's",
            21.0,
            _in(near, _gain("get", KIB)),
        ),
        Shape(
            "2a",
            "4 KiB PUT latency, parallelism 16 over 1",
            1.0,
            _in(near, _lat("put", 4 * KIB, 16, 1)),
        ),
        Shape(
            "2a",
            "4 KiB PUT latency, parallelism 64 over 16",
            1.43,
            _in(near, _lat("put", 4 * KIB, 64, 16)),
        ),
        Shape(
            "2b",
            "16 MiB PUT latency, parallelism 64 over 4",
            16.6,
            _in(near, _lat("put", 16 * MIB, 64, 4)),
        ),
        Shape(
            "1a",
            "PUT peak bandwidth, 4 MiB over 4 KiB",
            23.5,
            _in(near, _peaks("put", 4 * MIB, 4 * KIB)),
        ),
        Shape(
            "1b",
            "GET peak bandwidth, 4 MiB over 4 KiB",
            10.7,
            _in(near, _peaks("get", 4 * MIB, 4 * KIB)),
        ),
        Shape(
            "6",
            "client CPU at about the same PUT bandwidth, 1 KiB x 16 over 16 KiB x 1",
            13.0,
            _in(near, _cpu((KIB, 16), (16 * KIB, 1))),
        ),
        Shape(
            "10",
            "4 MiB PUT peak bandwidth, long distance over baseline",
            0.90,
            _far(far, near, lambda d: peak(d, "put", 4 * MIB), "mbps"),
        ),
        Shape(
            "10",
            "4 MiB GET peak bandwidth, long distance over baseline",
            1.01,
            _far(far, near, lambda d: peak(d, "get", 4 * MIB), "mbps"),
        ),
        Shape(
            "11",
            "16 MiB PUT latency at parallelism 1, long distance over baseline",
            2.6,
            _far(far, near, lambda d: cell(d, "put", 16 * MIB, 1), "lat_mean_ms"),
        ),
        Shape(
            "11",
            "16 MiB PUT latency at parallelism 16, long distance over baseline",
            1.02,
            _far(far, near, lambda d: cell(d, "put", 16 * MIB, 16), "lat_mean_ms"),
        ),
    ]


def compare(docs: Docs, near: str = "baseline", far: str = "long-distance") -> dict[str, Any]:
    """The study's shapes measured in DOCS, and Fig. 6's best combination."""
    rows = [s.row(docs) for s in shapes(near, far)]
    combo = best_combination(docs[near]) if near in docs else None
    return {
        "shapes": rows,
        "same_shape": sum(1 for r in rows if r["same_shape"]),
        "measured": sum(1 for r in rows if r["same_shape"] is not None),
        "fig6": {
            "study": {"best": "256 KiB x 16", "best_over_worst": 3.05},
            "ours": None
            if combo is None
            else {"best": combo[0], "best_over_worst": round(combo[1], 2)},
        },
    }


def markdown(comparison: dict[str, Any]) -> list[str]:
    lines = [
        "## The study's shapes, measured here",
        "",
        f"A ratio reads up above {FLAT:g}, down below 1/{FLAT:g}, flat between; "
        f"{comparison['same_shape']} of {comparison['measured']} measured read the study's way.",
        "",
        "| study's Fig. | ratio | study | ours | same shape |",
        "|---|---|---:|---:|---|",
    ]
    for r in comparison["shapes"]:
        ours = "-" if r["ours"] is None else f"{r['ours']:.2f}"
        same = "-" if r["same_shape"] is None else ("yes" if r["same_shape"] else "no")
        lines.append(f"| {r['figure']} | {r['what']} | {r['study']:g} | {ours} | {same} |")
    f6 = comparison["fig6"]
    ours6 = f6["ours"]
    lines += [
        "",
        "Fig. 6, 4 MiB in flight (64 KiB x 64, 256 KiB x 16, 1 MiB x 4, 4 MiB x 1), PUT: the "
        f"study's best is {f6['study']['best']}, "
        f"{f6['study']['best_over_worst']:g} times the worst; "
        + (
            "ours is not measured (a combination is missing)."
            if ours6 is None
            else f"ours is {ours6['best']}, {ours6['best_over_worst']:g} times the worst."
        ),
        "",
    ]
    return lines
