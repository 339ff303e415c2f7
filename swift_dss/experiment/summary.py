"""One configuration's figures, taken from the load generator's rows.

Bandwidth and latency are those of the phase x op rows (every type together). Latency is
the mean over successful requests; for GET the paper's figure is time to first byte. A run
on the emulated testbed with time dilation K is read at the testbed's speed
(`at_real_speed`).
The failure rate counts every request without a 2xx, as the paper's Fig. 7(c) does.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from swift_dss.loadgen.stats import UPLOADS_BY_TIME, Recorder

FIG7_KEYS = ("put_mbps", "get_mbps", "get_ttfb_ms", "put_latency_ms", "failure_rate")

#: What the reports call a phase's bandwidth (swift_dss.loadgen.driver's steady state).
STEADY_BANDWIDTH = (
    "- Bandwidth: the bytes moved while every client was busy (from the phase's start to "
    "the first moment a client had no request left to send) over that time. A download "
    "then in flight counts as far as it got, an upload by the share of its time it had "
    "run: what a client has sent may still wait in socket buffers on its way to the "
    "storage nodes."
)


def as_sent_lines(kinds: Iterable[str | None]) -> list[str]:
    """A line on the runs among KINDS (each run's `steady_uploads`; None: not recorded)
    that counted the uploads in flight at the steady state's end as far as sent."""
    kinds = list(kinds)
    old = sum(1 for kind in kinds if kind != UPLOADS_BY_TIME)
    if not old:
        return []
    return [
        f"- {old} of these {len(kinds)} runs were recorded before that: their PUT bandwidth "
        "counts the uploads then in flight as far as the client had sent them, some of "
        "which the links had not carried yet, so it reads high where many large uploads "
        "were in flight behind slow links."
    ]


def phase_row(rows: list[dict[str, Any]], op: str) -> dict[str, Any]:
    for row in rows:
        if row["type"] is None and row["op"] == op and row["phase"] == op:
            return row
    for row in rows:  # a workload whose phases have other names
        if row["type"] is None and row["op"] == op:
            return row
    return {}


def steady_or_whole(row: dict[str, Any], figure: str = "mbps") -> float | None:
    """A phase row's FIGURE (mbps, ops_per_s) while every client was busy (records before
    26 November have only the whole phase's, drain included)."""
    steady = row.get(f"steady_{figure}")
    return steady if steady is not None else row.get(figure)


def _r(value: Any, digits: int = 3) -> float | None:
    return None if value is None else round(float(value), digits)


def figures(rows: list[dict[str, Any]]) -> dict[str, Any]:
    put, get, delete = phase_row(rows, "put"), phase_row(rows, "get"), phase_row(rows, "delete")
    ops = sum(r.get("ops", 0) for r in (put, get))
    failures = sum(r.get("failures", 0) for r in (put, get))
    every = [r for r in rows if r["type"] is None]
    out: dict[str, Any] = {
        "put_mbps": _r(steady_or_whole(put)),
        "get_mbps": _r(steady_or_whole(get)),
        "put_whole_phase_mbps": _r(put.get("mbps")),
        "get_whole_phase_mbps": _r(get.get("mbps")),
        "get_ttfb_ms": _r(get.get("ttfb_mean_ms")),
        "put_latency_ms": _r(put.get("lat_mean_ms")),
        "get_latency_ms": _r(get.get("lat_mean_ms")),
        "put_p99_ms": _r(put.get("lat_p99_ms")),
        "get_ttfb_p99_ms": _r(get.get("ttfb_p99_ms")),
        "put_ops_per_s": _r(steady_or_whole(put, "ops_per_s")),
        "get_ops_per_s": _r(steady_or_whole(get, "ops_per_s")),
        "put_whole_phase_ops_per_s": _r(put.get("ops_per_s")),
        "get_whole_phase_ops_per_s": _r(get.get("ops_per_s")),
        "delete_ops_per_s": _r(delete.get("ops_per_s")),
        "put_failures": put.get("failures", 0),
        "get_failures": get.get("failures", 0),
        "failure_rate": round(failures / ops, 5) if ops else 0.0,
        "failures_all_phases": sum(r.get("failures", 0) for r in every),
        "requests_all_phases": sum(r.get("ops", 0) for r in every),
        "codes": _codes(every),
    }
    out["by_type"] = _by_type(rows)
    return out


def _codes(rows: list[dict[str, Any]]) -> dict[str, int]:
    codes: dict[str, int] = {}
    for r in rows:
        for code, n in (r.get("codes") or {}).items():
            codes[code] = codes.get(code, 0) + n
    return codes


def _by_type(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per op and object type (classes merged): MB/s and mean latency / TTFB."""
    out: dict[str, dict[str, Any]] = {}
    for r in rows:
        if r["type"] is None or r["op"] not in ("put", "get"):
            continue
        cell = out.setdefault(f"{r['op']} {r['type']}", {"ops": 0, "failures": 0, "bytes": 0})
        cell["ops"] += r.get("ops", 0)
        cell["failures"] += r.get("failures", 0)
        cell["bytes"] += r.get("bytes", 0) or 0
        cell.setdefault("rows", []).append(
            {
                "class": r["class"],
                "mbps": _r(r.get("mbps")),
                "lat_mean_ms": _r(r.get("lat_mean_ms")),
                "ttfb_mean_ms": _r(r.get("ttfb_mean_ms")),
            }
        )
    return out


def ratio(a: float | None, b: float | None) -> float | None:
    return round(a / b, 3) if a is not None and b else None


#: The figures a run's raw record (recorder.json) gives anew whenever a summary is built,
#: so that kept runs are read the way this version reads them.
RECORDED_RATES = tuple(
    f"{op}_{kind}"
    for op in ("put", "get")
    for kind in ("mbps", "whole_phase_mbps", "ops_per_s", "whole_phase_ops_per_s")
)


def refreshed(entry: dict[str, Any], recorder: Recorder | None) -> dict[str, Any]:
    """ENTRY with its bandwidths and request rates recomputed from RECORDER (its run's
    recorder.json, None if it has none), read at the testbed's speed as the entry's own
    testbed says."""
    if recorder is None:
        return entry
    rows = recorder.rows()
    tb = entry.get("testbed") or {}
    k = int(tb.get("dilation", 1))
    scale = float((tb.get("settings") or {}).get("rate_scale", 1.0))
    figs = at_real_speed(figures(rows), k, scale)
    rates = {key: figs[key] for key in RECORDED_RATES if figs.get(key) is not None}
    return {**entry, **rates, "steady_uploads": recorder.steady_uploads}


def at_real_speed(figs: dict[str, Any], k: int, rate_scale: float = 1.0) -> dict[str, Any]:
    """FIGS (from `figures`) of a run dilated K times, read at the emulated testbed's speed:
    bandwidths and rates times K, times divided by K (see swift_dss.testbed.dilation).
    With byte rates scaled by RATE_SCALE (the object sizes' scale), a byte moved stands
    for 1/RATE_SCALE of the full-size objects' bytes, so bandwidths are divided by it too:
    they are then the bandwidths at the paper's object sizes."""
    if k == 1 and rate_scale == 1:
        return figs

    def scaled(key: str, value: Any) -> Any:
        if not isinstance(value, int | float) or isinstance(value, bool):
            return value
        if key.endswith("_mbps") or key == "mbps":
            return _r(value * k / rate_scale)
        if key.endswith("_ops_per_s"):
            return _r(value * k)
        if key.endswith("_ms"):
            return _r(value / k)
        return value

    out = {key: scaled(key, value) for key, value in figs.items()}
    out["by_type"] = {
        cell_key: {
            **cell,
            "rows": [{k2: scaled(k2, v) for k2, v in row.items()} for row in cell.get("rows", [])],
        }
        for cell_key, cell in figs.get("by_type", {}).items()
    }
    return out
