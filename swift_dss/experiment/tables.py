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
        met = {True: "met", False: "NOT met", None: ""}[h["met"]]
        console.print(
            f"{h['what']}: {_f(h['measured'], 2)} (paper {_f(h['paper'], 2)}"
            + (f", asked >= {h['target']:g}" if h["target"] else "")
            + f") {met}"
        )


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
