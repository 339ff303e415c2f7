"""The summary tables printed at the end of a command."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table


def _f(value: Any, digits: int = 1) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def print_caching(summary: dict[str, Any], console: Console) -> None:
    table = Table(title="caching (paper section V.C): measured (paper)")
    for col in ("config", "PUT MB/s", "GET MB/s", "GET TTFB ms", "PUT lat ms", "failures"):
        table.add_column(col, justify="left" if col == "config" else "right")
    for key, e in summary.items():
        if "@" not in key or not isinstance(e, dict):
            continue
        p = e.get("paper") or {}

        def cell(metric: str, e: dict[str, Any] = e, p: dict[str, Any] = p) -> str:
            ref = p.get(metric)
            return _f(e.get(metric)) + ("" if ref is None else f" ({ref:g})")

        table.add_row(
            key,
            cell("put_mbps"),
            cell("get_mbps"),
            cell("get_ttfb_ms"),
            _f(e.get("put_latency_ms")),
            f"{100 * (e.get('failure_rate') or 0):.2f}%",
        )
    console.print(table)
    for h in summary.get("headlines", []):
        if h["paper"] is None:
            continue
        met = {True: "met", False: "NOT met", None: ""}[h["met"]]
        ci = f" [{h['ci'][0]:.2f}-{h['ci'][1]:.2f}]" if h.get("ci") else ""
        console.print(
            f"{h['what']}: {_f(h['measured'], 2)}{ci} (paper {_f(h['paper'], 2)}"
            + (f", asked >= {h['target']:g}" if h["target"] else "")
            + f") {met}"
        )
    held = {True: "holds", False: "DOES NOT hold", None: "not measured"}
    for row in summary.get("orders", []):
        console.print(
            f"{row['what']}: {row['pair']} ({_f(row['a'], 2)} vs {_f(row['b'], 2)}): "
            f"{held[row['held']]}",
            highlight=False,
        )
    print_cost(summary, console)
    # HDD only and SSD only appear under every cache size, measured once.
    bound = {
        e["measured_as"]: e["cpu_bound_phases"]
        for e in summary.values()
        if isinstance(e, dict) and e.get("cpu_bound_phases") and e.get("measured_as")
    }
    console.print(
        "CPU-bound phases (the machine, not the emulated hardware, set the pace): "
        + (", ".join(f"{k} {'+'.join(v)}" for k, v in bound.items()) if bound else "none"),
        highlight=False,
    )


def print_cost(summary: dict[str, Any], console: Console) -> None:
    """Fig. 9 at 10% cache: $/GB/IOPS normalised to HDD only, ours (the paper's)."""
    from swift_dss.experiment.paper import FIG9

    table = Table(title="Fig. 9 cost efficiency, 10% cache: $/GB/IOPS / HDD's (paper)")
    for col in ("config", "PUT", "GET"):
        table.add_column(col, justify="left" if col == "config" else "right")
    for key in ("hdd@10%", "ssd@10%", "lru@10%", "dss@10%"):
        e = summary.get(key)
        if not isinstance(e, dict):
            continue
        ref = FIG9.get(key.split("@")[0] if key[:3] in ("hdd", "ssd") else key, {})

        def cell(op: str, e: dict[str, Any] = e, ref: dict[str, Any] = ref) -> str:
            paper = ref.get(op, (None,))[0]
            return _f(e.get(f"cost_norm_{op}"), 2) + ("" if paper is None else f" ({paper:g})")

        table.add_row(key, cell("put"), cell("get"))
    console.print(table)


def print_traffic(summary: dict[str, Any], console: Console) -> None:
    streams = summary.get("streams", [])
    table = Table(title="traffic control (paper section V.D): PUT MB/s per stream")
    table.add_column("run")
    for s in streams:
        table.add_column(s, justify="right")
    table.add_column("aggregate PUT", justify="right")
    table.add_column("aggregate GET", justify="right")
    for run in summary.get("runs", []):
        table.add_row(
            run["name"],
            *[_f((run["streams"].get(s) or {}).get("put_mbps")) for s in streams],
            _f(run.get("put_mbps")),
            _f(run.get("get_mbps")),
        )
    console.print(table)
    from swift_dss.experiment.traffic_report import trends

    for line in trends(summary):
        console.print(line.removeprefix("- ").replace("**", ""), highlight=False)
