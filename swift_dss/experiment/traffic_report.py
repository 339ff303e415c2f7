"""report.md of the traffic-control experiment (Figs. 10-11)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from swift_dss.experiment import plots, put_waits, server_times, tier_requests
from swift_dss.experiment.caching_report import rate_scale_lines
from swift_dss.experiment.link_notes import queue_lines
from swift_dss.experiment.paper import FIG10_TREND, FIG11_FILES_UNDER_100MS
from swift_dss.experiment.summary import STEADY_BANDWIDTH, as_sent_lines
from swift_dss.testbed import shaping, utilisation
from swift_dss.testbed.settings import ROLES


def _f(value: Any, digits: int = 1) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def testbed_lines(setup: dict[str, Any]) -> list[str]:
    tb = setup.get("testbed") or {}
    if tb.get("kind") != "netns":
        return []
    st, k = tb["settings"], tb["dilation"]
    return [
        f"On the emulated testbed: client and proxy on {st['client_rate']} links, storage "
        f"nodes on {st['storage_rate']} each, time dilation K = {k} (links and devices {k} "
        f"times slower, timeouts {k} times longer; figures read at the testbed's speed, "
        f"the {opts_duration(setup):g} s phases are {opts_duration(setup) / k:g} s of it).",
        *rate_scale_lines(st),
        *queue_lines(st),
        "",
    ]


def workers(setup: dict[str, Any]) -> str:
    """The servers' workers as the run had them: the testbed sets its own."""
    tb = setup.get("testbed") or {}
    if tb.get("kind") == "netns":
        st = tb["settings"]
        return f"{st['proxy_workers']} proxy workers and {st['server_workers']} per storage server"
    return f"{setup['scale']['workers']} workers per server"


def opts_duration(setup: dict[str, Any]) -> float:
    return float(setup["options"]["duration"])


#: TCP payload per byte a link's counters see: 1448 of each 1514-byte frame.
PAYLOAD_PER_FRAME_BYTE = 1448 / 1514


def links_carried(run: dict[str, Any], setup: dict[str, Any], op: str) -> float | None:
    """The object bytes per second (MB/s, at the full object sizes) the storage nodes'
    links carried in RUN's OP phase, each replica counted once: from the links' measured
    use, a check on the aggregate that the streams' own clients measured."""
    u = (run.get("utilisation") or {}).get(op)
    tb = setup.get("testbed") or {}
    if not u or tb.get("kind") != "netns":
        return None
    rate = shaping.parse_rate(tb["settings"]["storage_rate"]) / 8
    used = sum(share for name, share in u["links"].items() if name not in ROLES)
    copies = setup["scale"]["replicas"] if op == "put" else 1
    return used * rate * PAYLOAD_PER_FRAME_BYTE / copies / 1e6


def bandwidth_table(summary: dict[str, Any], op: str) -> list[str]:
    streams = summary["streams"]
    lines = [
        f"| run | on the SSD | {' | '.join(streams)} | aggregate {op.upper()} MB/s "
        "| carried by the storage links |",
        "|---|---|" + "---:|" * (len(streams) + 2),
    ]
    for run in summary["runs"]:
        cells = [_f((run["streams"].get(s) or {}).get(f"{op}_mbps")) for s in streams]
        carried = links_carried(run, summary["setup"], op)
        lines.append(
            f"| {run['name']} | {', '.join(run['on_ssd']) or '-'} | {' | '.join(cells)} | "
            f"{_f(run.get(f'{op}_mbps'))} | {_f(carried)} |"
        )
    return lines


def latency_table(summary: dict[str, Any], op: str) -> list[str]:
    streams = summary["streams"]
    lines = [
        f"| run | {' | '.join(f'{s} mean / <100 ms' for s in streams)} |",
        "|---|" + "---:|" * len(streams),
    ]
    for run in summary["runs"]:
        cells = []
        for s in streams:
            e = run["streams"].get(s) or {}
            frac = e.get(f"{op}_under_100ms")
            cells.append(
                f"{_f(e.get(f'{op}_latency_ms'), 0)} ms / "
                + ("-" if frac is None else f"{100 * frac:.0f}%")
            )
        lines.append(f"| {run['name']} | {' | '.join(cells)} |")
    return lines


def files_put_servers(summary: dict[str, Any]) -> list[str]:
    """Where the Files stream's PUTs spent their time, server by server (runs recorded
    before the servers' times were read have none)."""
    rows = server_times.table(
        [(run["name"], run.get("server_times") or {}) for run in summary["runs"]], "files", "PUT"
    )
    if not rows:
        return []
    return [
        "Files PUTs at each server, from their access logs (emulated ms): the proxy's time is "
        "the client's request; each object server's is one replica's (body, write, fsync, "
        "renames, and the container update it waits for); each container server's is that "
        "update:",
        "",
        *rows,
        "",
    ]


def files_put_steps(summary: dict[str, Any]) -> list[str]:
    """The Files stream's PUTs step by step, joined across the proxy, object and container
    servers by transaction (runs of a cluster without put_timing have none)."""
    rows = put_waits.table(
        [(run["name"], run.get("put_waits")) for run in summary["runs"]], "files"
    )
    if not rows:
        return []
    return [
        "Files PUTs step by step (median emulated ms; put_timing lines joined by "
        "transaction): the proxy's whole time; from its start to the first object server's "
        "and until every replica had answered 100-continue; at each replica, its temporary "
        "file's creation, the wait for the body, the body, and the commit (fsync, renames, "
        "container update), and of the commit the time until the container server had the "
        "update, its time there and the time after; when the replicas replied, in order; "
        "the proxy's time after the last; and the share of PUTs within 100 ms at the proxy "
        "and at each replica's reply:",
        "",
        *rows,
        "",
    ]


def tier_request_times(summary: dict[str, Any]) -> list[str]:
    """What the storage nodes' tier daemons took per request of an object server's PUT
    (runs recorded before the daemons timed their requests have none)."""
    runs = summary["runs"]
    rows = tier_requests.table([(run["name"], run.get("tier_requests")) for run in runs])
    if not rows:
        return []
    # placement() lists the streams' classes in the streams' order. Its keys are class
    # numbers in a fresh run and strings once read back from JSON, as the daemons' are.
    names = {str(c): s for c, s in zip(runs[0]["placement"], summary["streams"], strict=True)}
    placed = [{str(c): tier for c, tier in run["placement"].items()} for run in runs]
    by_class = tier_requests.class_table(
        [(run["name"], run.get("tier_requests"), p) for run, p in zip(runs, placed, strict=True)],
        names,
    )
    return [
        "The tier daemons' time per FUSE request, arrival to reply, over the whole run "
        "(emulated ms, and how many); the last column is the requests an arrival found "
        "under way, itself included, against the daemon's threads (32 by default):",
        "",
        *rows,
        "",
        *(
            [
                "Each stream's writes and fsyncs, by the class of its files (and where the run "
                "placed it):",
                "",
                *by_class,
                "",
            ]
            if by_class
            else []
        ),
    ]


def devices_table(summary: dict[str, Any]) -> list[str]:
    lines = [
        "| run | SSD MB | SSD busy s | HDD MB | HDD busy s | failed requests | load before/after |",
        "|---|---:|---:|---:|---:|---:|---|",
    ]
    for run in summary["runs"]:
        ssd, hdd = run["devices"].get("ssd", {}), run["devices"].get("hdd", {})
        lines.append(
            f"| {run['name']} | {_f(ssd.get('bytes', 0) / 1e6, 0)} | {_f(ssd.get('busy_s'))} | "
            f"{_f(hdd.get('bytes', 0) / 1e6, 0)} | {_f(hdd.get('busy_s'))} | "
            f"{run['failures_all_phases']} | {run['loadavg_before'][0]:.1f} / "
            f"{run['loadavg_after'][0]:.1f} |"
        )
    return lines


def usage_table(summary: dict[str, Any]) -> list[str]:
    """What was busy in each run's PUT and GET phases (while all four streams were in it)
    and over the whole run, on the emulated testbed."""
    lines = [f"| run | phase | {utilisation.CELLS_HEADER}", "|---|---|---:|---|---|---|"]
    for run in summary["runs"]:
        for phase in ("put", "get", "run"):
            u = (run.get("utilisation") or {}).get(phase)
            if u:
                label = "whole run" if phase == "run" else phase.upper()
                lines.append(f"| {run['name']} | {label} | {utilisation.cells(u)} |")
    return lines


#: An aggregate within this share of the best run's is level, neither a fall nor a rise:
#: one run's aggregate moves by several percent between repeats.
LEVEL = 0.01


def trends(summary: dict[str, Any]) -> list[str]:
    """Whether the paper's two observations held: aggregate bandwidth falls once every
    stream is on the SSD (against the best run before, by more than LEVEL), and the
    share of Files requests under 100 ms rises when Files moves to the SSD."""
    runs = {r["name"]: r for r in summary["runs"]}
    out = []
    for op in ("put", "get"):
        last, before = runs.get("+Video"), [r for n, r in runs.items() if n != "+Video"]
        if last and before:
            best = max(before, key=lambda r: r.get(f"{op}_mbps") or 0)
            now, top = last.get(f"{op}_mbps") or 0, best.get(f"{op}_mbps") or 0
            if now < top * (1 - LEVEL):
                way = "falls, as in the paper"
            elif now < top:
                way = f"level (within {LEVEL:.0%}), **does not fall**"
            else:
                way = "**does not fall**"
            out.append(
                f"- Aggregate {op.upper()} with every stream on the SSD: "
                f"{_f(now)} MB/s against {_f(top)} in {best['name']}: {way}."
            )
        none, files = runs.get("none"), runs.get("+Files")
        if none and files:
            a = (none["streams"].get("Files") or {}).get(f"{op}_under_100ms")
            b = (files["streams"].get("Files") or {}).get(f"{op}_under_100ms")
            if a is not None and b is not None:
                way = "rises, as in the paper" if b > a else "**does not rise**"
                out.append(
                    f"- Files {op.upper()}s under 100 ms: {100 * a:.1f}% (none) -> "
                    f"{100 * b:.1f}% (+Files): {way}."
                )
    return out


def write_report(out: Path, summary: dict[str, Any]) -> Path:
    runs, streams = summary["runs"], summary["streams"]
    if runs:
        for op in ("put", "get"):
            plots.fig10(runs, streams, op, out / f"fig10_{op}.png")
            plots.fig11(runs, streams, op, out / f"fig11_{op}.png")
    setup = summary["setup"]
    opts, sc = setup["options"], setup["scale"]
    md = [
        "# I/O traffic control (paper section V.D, Figs. 10-11)",
        "",
        f"Four concurrent streams of {opts['clients']} clients each, one object type per "
        f"stream and one class per stream (25-28, whatever the size); {opts['duration']:g} s "
        f"of PUT, then {opts['duration']:g} s of GET, each phase started by all streams "
        f"together. Tier mode `tiered` (no caching): each stream's class is pinned on the SSD "
        f"or placed on the HDD by the run's policy (`runs/<run>/policy.toml`); metadata "
        f"classes stay on the SSD in every run. Object sizes x{sc['size_scale']:g}; "
        f"{sc['devices']} devices, {sc['replicas']} replicas, {workers(setup)}. Every number "
        "is in `summary.json`.",
        "",
        *testbed_lines(setup),
        STEADY_BANDWIDTH + " A stream's bandwidth is its own steady state's, as the paper "
        "computed each stream's on its own; Fig. 10's aggregate is their sum.",
        *as_sent_lines(s.get("steady_uploads") for r in runs for s in r["streams"].values()),
        "",
        "## The paper's observations, checked",
        "",
        *trends(summary),
        "",
        "## Fig. 10: bandwidth per stream and aggregate",
        "",
        f"The paper: {FIG10_TREND}.",
        "",
        "![Fig. 10 PUT](fig10_put.png) ![Fig. 10 GET](fig10_get.png)",
        "",
        "PUT (MB/s):",
        "",
        *bandwidth_table(summary, "put"),
        "",
        "GET (MB/s):",
        "",
        *bandwidth_table(summary, "get"),
        "",
        "## Fig. 11: latency per stream",
        "",
        f"The paper: Files requests under 100 ms: {json.dumps(FIG11_FILES_UNDER_100MS)} "
        "(before and after Files moved to the SSD).",
        "",
        "![Fig. 11 PUT](fig11_put.png)",
        "",
        "![Fig. 11 GET](fig11_get.png)",
        "",
        "PUT latency, mean and share of requests under 100 ms:",
        "",
        *latency_table(summary, "put"),
        "",
        "GET latency:",
        "",
        *latency_table(summary, "get"),
        "",
        *files_put_servers(summary),
        *files_put_steps(summary),
        *tier_request_times(summary),
        "## Devices and machine",
        "",
        *devices_table(summary),
        "",
    ]
    if any(r.get("utilisation") for r in runs):
        md += [
            "What was busy in each phase while all four streams were in it, sampled every "
            "few seconds, and over the whole run (setup, PUT, GET and clean-up):",
            "",
            *usage_table(summary),
            "",
        ]
    if summary.get("missing"):
        md += [f"Not measured (failed or not run): {', '.join(summary['missing'])}.", ""]
    path = out / "report.md"
    path.write_text("\n".join(md))
    return path
