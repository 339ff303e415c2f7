"""report.md of the caching experiment: each figure's measurements next to the paper's,
with the device activity and cache counters that explain the differences."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from swift_dss.experiment import failures, plots
from swift_dss.experiment.link_notes import queue_lines
from swift_dss.experiment.paper import FIG7, FIG9
from swift_dss.experiment.summary import FIG7_KEYS, STEADY_BANDWIDTH, as_sent_lines
from swift_dss.testbed import utilisation
from swift_dss.testbed.settings import SWIFT_ERROR_LIMIT

MIB = 1 << 20


def _f(value: Any, digits: int = 1) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:,.{digits}f}"
    return f"{value:,}" if isinstance(value, int) else str(value)


def config_keys(summary: dict[str, Any]) -> list[str]:
    return [k for k in summary if "@" in k and isinstance(summary[k], dict)]


def pcts_of(summary: dict[str, Any]) -> list[str]:
    seen: list[str] = []
    for k in config_keys(summary):
        pct = k.split("@", 1)[1]
        if pct not in seen:
            seen.append(pct)
    return seen


def measured_entries(summary: dict[str, Any]) -> list[dict[str, Any]]:
    """One entry per measured configuration (HDD and SSD only appear under every size)."""
    seen: dict[str, dict[str, Any]] = {}
    for key in config_keys(summary):
        seen.setdefault(summary[key]["measured_as"], summary[key])
    return list(seen.values())


def fig7_table(summary: dict[str, Any]) -> list[str]:
    lines = [
        "| config | PUT MB/s (paper) | GET MB/s (paper) | GET TTFB ms (paper) | "
        "PUT latency ms | failure rate | PUT req/s | GET req/s |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for key in config_keys(summary):
        e = summary[key]
        p = e.get("paper") or {}

        def both(metric: str, e: dict[str, Any] = e, p: dict[str, Any] = p) -> str:
            ref = p.get(metric)
            return f"{with_ci(e, metric)} ({_f(ref, 0) if ref is not None else '-'})"

        lines.append(
            f"| {key} | {both('put_mbps')} | {both('get_mbps')} | {both('get_ttfb_ms')} | "
            f"{_f(e.get('put_latency_ms'))} | {100 * (e.get('failure_rate') or 0):.2f}% | "
            f"{_f(e.get('put_ops_per_s'))} | {_f(e.get('get_ops_per_s'))} |"
        )
    return lines


def failure_causes(summary: dict[str, Any]) -> list[str]:
    """Fig. 7(c)'s failures by the cause the proxy logged (none when nothing failed)."""
    rows = failures.table(
        [(e["key"], e.get("failure_causes") or {}) for e in measured_entries(summary)]
    )
    return ["", "Failed requests by the cause the proxy logged:", "", *rows] if rows else []


def with_ci(e: dict[str, Any], metric: str) -> str:
    """A figure, with its 95% interval: over the repeats when there were several, from
    its requests (bootstrap) when there was one run."""
    ci = (e.get("ci") or {}).get(metric)
    if not ci or (len(e.get("repeats") or []) < 2 and e.get("ci_from") != "requests"):
        return _f(e.get(metric))
    return f"{_f(e.get(metric))} [{_f(ci[0])}-{_f(ci[1])}]"


def headline_table(summary: dict[str, Any]) -> list[str]:
    lines = [
        "| ratio | measured | 95% interval | paper | within 25% of it | asked | met |",
        "|---|---:|---:|---:|---|---:|---|",
    ]
    for h in summary.get("headlines", []):
        met = {True: "yes", False: "**no**", None: "-"}[h["met"]]
        ci = h.get("ci")
        near = "-"
        if h["measured"] is not None and h["paper"]:
            near = "yes" if abs(h["measured"] / h["paper"] - 1) <= 0.25 else "**no**"
        lines.append(
            f"| {h['what']} | {_f(h['measured'], 2)} | "
            f"{f'{ci[0]:.2f}-{ci[1]:.2f}' if ci else '-'} | {_f(h['paper'], 2)} | {near} | "
            f"{_f(h['target'], 2)} | {met} |"
        )
    return lines


def orders_table(summary: dict[str, Any]) -> list[str]:
    lines = ["| figure | the paper's order | ours | held |", "|---|---|---|---|"]
    for row in summary.get("orders", []):
        held = {True: "yes", False: "**no**", None: "-"}[row["held"]]
        lines.append(
            f"| {row['what']} | {row['pair']} | {_f(row['a'])} vs {_f(row['b'])} | {held} |"
        )
    return lines


def utilisation_table(summary: dict[str, Any]) -> list[str]:
    """Per configuration and measured phase (first repeat): what kept the machine and the
    links busy, and what set the pace."""
    lines = [f"| config | phase | {utilisation.CELLS_HEADER}", "|---|---|---:|---|---|---|"]
    for e in measured_entries(summary):
        for phase in ("put", "get"):
            u = (e.get("utilisation") or {}).get(phase)
            if u:
                lines.append(f"| {e['measured_as']} | {phase} | {utilisation.cells(u)} |")
    return lines


def setup_lines(setup: dict[str, Any], runs: dict[str, int] | None = None) -> list[str]:
    """The cluster the runs had: the all-in-one, or the emulated testbed with its links.
    RUNS: each measured configuration's number of runs, where the summary has them."""
    sc = setup["scale"]
    tb = setup.get("testbed") or {"kind": "saio"}
    if tb["kind"] != "netns":
        return [
            f"- Cluster: all-in-one Swift, {sc['devices']} devices (dss-tier mounts, SSD model "
            f"intel710, HDD model st1000nm0011), {sc['replicas']} replicas, {sc['workers']} "
            "workers per server; a fresh cluster per configuration.",
            BANDWIDTH_LINE,
            repeats_line(setup.get("repeats", 1), runs),
        ]
    st = tb["settings"]
    k = tb["dilation"]
    return [
        f"- Cluster: the paper's testbed emulated: a client node and a proxy node on "
        f"{st['client_rate']} / {st['proxy_rate']} links, {sc['devices']} storage nodes on "
        f"{st['storage_rate']} each (every link shaped with tc{link_queue(st)}; "
        f"{tcp_congestion(st, setup.get('tcp', []))}), each "
        "storage node with its "
        f"own account, container and object servers over its own dss-tier (SSD model "
        f"{st['ssd_model']}, HDD model {st['hdd_model']}); {sc['replicas']} replicas, "
        f"{st['proxy_workers']} proxy workers, {st['server_workers']} per storage server; "
        f"conn_timeout {st['conn_timeout']:g} s, node_timeout {st['node_timeout']:g} s, "
        f"client_timeout {st['client_timeout']:g} s{client_limit(sc, k)}"
        f"{error_limit(st)}; a fresh testbed "
        "per configuration.",
        f"- Time dilation K = {k}: every link rate and device divided by {k}, every timeout "
        f"multiplied by {k}; every figure below is read at the emulated testbed's speed "
        f"(bandwidths and request rates x{k}, times /{k}).",
        *rate_scale_lines(st),
        *queue_lines(st),
        BANDWIDTH_LINE,
        repeats_line(setup.get("repeats", 1), runs),
    ]


def link_queue(settings: dict[str, Any]) -> str:
    """The links' queue, where the setup records one."""
    queue = settings.get("link_queue_ms")
    return f", a queue of {queue:g} ms each" if queue else ""


def error_limit(settings: dict[str, Any]) -> str:
    """The proxy's error limit, where a run set another than Swift's."""
    limit = settings.get("error_limit", SWIFT_ERROR_LIMIT)
    return "" if limit == SWIFT_ERROR_LIMIT else f", error_suppression_limit {limit}"


def tcp_congestion(settings: dict[str, Any], ran: list[str]) -> str:
    """The nodes' TCP congestion control: the setting, or the host's default and what
    the runs record it was (RAN; runs from before they recorded it: nothing)."""
    if name := settings.get("tcp_congestion"):
        return f"TCP {name}"
    return f"TCP {', '.join(ran)} (the host's default)" if ran else "TCP the host's default"


def cache_block(scale: dict[str, Any]) -> str:
    """The setup's cache block, where a run set one (older setups record none)."""
    block = scale.get("cache_block")
    return f"; cache block {block} B (the policies' 4 KiB otherwise)" if block else ""


def client_limit(scale: dict[str, Any], k: int) -> str:
    """The load generator's idle limit per request, before dilation, as the setup line's
    clause (nothing where the setup does not record it)."""
    if "timeout" not in scale:
        return ""
    return f"; the client's idle limit per request {scale['timeout'] / k:g} s (no byte moved)"


def rate_scale_lines(settings: dict[str, Any]) -> list[str]:
    s = settings.get("rate_scale", 1.0)
    if s == 1:
        return []
    return [
        f"- Byte rates x{s:g}, as the object sizes: every link rate and every device's "
        f"transfer rates (and the byte gaps it passes over) times {s:g} before dilation, "
        "so that a scaled object moves as long as the full-size one on the paper's "
        "hardware while seeks, per-operation times and CPU stay as they are; "
        f"bandwidths are read at the full object sizes (measured bytes / {s:g})."
    ]


BANDWIDTH_LINE = (
    f"{STEADY_BANDWIDTH} The whole phase's bytes over its whole "
    "duration (`*_whole_phase_mbps` in summary.json) also count the drain, in which the "
    "last few large transfers run alone: at these request counts it can be most of a GET "
    "phase, and its figure then says more about when those objects were drawn than about "
    "the configuration."
)


def repeats_line(n: int, runs: dict[str, int] | None = None) -> str:
    """How the intervals were drawn: N repeats were asked for, RUNS says how many each
    configuration has (more where a later invocation added repeats to some)."""
    runs = runs or {}
    counts = sorted(set(runs.values()), reverse=True)
    if len(counts) > 1:
        groups = "; ".join(
            f"{c} of {', '.join(k for k, v in runs.items() if v == c)}" for c in counts
        )
        return (
            f"- Repeats: {groups}. A figure's interval in brackets is its 95% Student t "
            "interval over its own runs, a ratio's is over the paired ratios of the runs both "
            "configurations have (the first of each)."
        )
    n = counts[0] if counts else n
    if n > 1:
        return (
            f"- Repeats: {n} per configuration; a figure's interval in brackets is its 95% "
            "Student t interval over them, a ratio's is over the repeats' paired ratios."
        )
    return (
        "- One run per configuration; a figure's interval in brackets, and a ratio's, is a "
        "95% percentile bootstrap over the run's own requests (2,000 resamples of the "
        "phase's requests; bandwidth as clients x bytes / summed request time): how much "
        "the figure depends on which requests were drawn, not how runs vary."
    )


def devices_table(summary: dict[str, Any]) -> list[str]:
    """Per configuration and phase: each device kind's work, and the HDD's part that the
    cache's write-back submitted (its MB, the busy time it added, that time per MB)."""
    lines = [
        "| config | phase | SSD ops | SSD MB | SSD busy s | HDD ops | HDD MB | HDD busy s | "
        "HDD write-back MB | its busy s | s per MB |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for e in measured_entries(summary):
        for phase, devs in (e.get("devices_by_phase") or {}).items():
            if phase == "create":
                continue
            ssd, hdd = devs.get("ssd", {}), devs.get("hdd", {})
            wb_mb, wb_s = hdd.get("writeback_bytes", 0) / 1e6, hdd.get("writeback_busy_s")
            lines.append(
                f"| {e['measured_as']} | {phase} | {_f(int(ssd.get('ops', 0)))} | "
                f"{_f(ssd.get('bytes', 0) / 1e6, 0)} | {_f(ssd.get('busy_s'), 1)} | "
                f"{_f(int(hdd.get('ops', 0)))} | {_f(hdd.get('bytes', 0) / 1e6, 0)} | "
                f"{_f(hdd.get('busy_s'), 1)} | {_f(wb_mb, 0) if wb_s is not None else '-'} | "
                f"{_f(wb_s, 1)} | {_f(wb_s / wb_mb, 3) if wb_s and wb_mb else '-'} |"
            )
    return lines


def cache_table(summary: dict[str, Any]) -> list[str]:
    lines = [
        "| config | bypassed MB | evicted MB | written back MB | hits | misses |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for key in config_keys(summary):
        e = summary[key]
        if e["mode"] not in ("lru", "dss"):
            continue
        classes = e.get("classes_end") or {}

        def total(field: str, classes: dict[str, Any] = classes) -> float:
            return sum(c.get(field, 0) for c in classes.values())

        lines.append(
            f"| {key} | {_f(total('bypassed_bytes') / 1e6, 0)} | "
            f"{_f(total('evicted_bytes') / 1e6, 0)} | "
            f"{_f(total('written_back_bytes') / 1e6, 0)} | {_f(int(total('hits')))} | "
            f"{_f(int(total('misses')))} |"
        )
    return lines


def content_table(summary: dict[str, Any], keys: list[str]) -> list[str]:
    slices = sorted({s for k in keys for s in (summary[k].get("content_shares") or {})})
    lines = ["| slice | " + " | ".join(keys) + " |", "|---|" + "---:|" * len(keys)]
    for s in slices:
        cells = [f"{100 * (summary[k].get('content_shares') or {}).get(s, 0):.1f}%" for k in keys]
        lines.append(f"| {s} | " + " | ".join(cells) + " |")
    totals = [_f(sum((summary[k].get("content_bytes") or {}).values()) / MIB, 0) for k in keys]
    lines.append("| cached MiB | " + " | ".join(totals) + " |")
    return lines


def cost_table(summary: dict[str, Any], pct: str) -> list[str]:
    lines = [
        "| config | $/GB | PUT $/GB/IOPS (norm.) | paper | GET $/GB/IOPS (norm.) | paper |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for key in (k for k in config_keys(summary) if k.endswith(f"@{pct}")):
        e, base = summary[key], key.split("@", 1)[0]
        ref = FIG9.get(base if base in ("hdd", "ssd") else key, {})
        lines.append(
            f"| {key} | {e['price_per_gb']:.3f} | {_f(e.get('cost_norm_put'), 2)} | "
            f"{_f(ref.get('put', (None,))[0], 1)} | {_f(e.get('cost_norm_get'), 2)} | "
            f"{_f(ref.get('get', (None,))[0], 1)} |"
        )
    return lines


def time_table(summary: dict[str, Any]) -> list[str]:
    lines = [
        "| config | bring-up s | teardown s | wall s (all phases, bring-up, teardown) |",
        "|---|---:|---:|---:|",
    ]
    for e in measured_entries(summary):
        lines.append(
            f"| {e['measured_as']} | {_f(e.get('up_s'))} | {_f(e.get('down_s'))} | "
            f"{_f(e.get('wall_s'))} |"
        )
    return lines


def mix_table(setup: dict[str, Any]) -> list[str]:
    """The run's byte mix beside Table I's, per Fig. 8 slice and, for runs that recorded
    it, per Table I type (what the seed was chosen by)."""
    ws = setup["working_set"]
    tables = [("slice", ws["mix"], ws["count_by_type"], setup["byte_mix_table_i"])]
    if "byte_mix_table_i_types" in setup:
        tables.append(
            ("type", ws["type_mix"], ws["count_by_object_type"], setup["byte_mix_table_i_types"])
        )
    lines: list[str] = []
    for kind, run, counts, table in tables:
        if lines:
            lines.append("")
        lines += [
            f"| {kind} | objects | bytes in this run | Table I (expected) |",
            "|---|---:|---:|---:|",
        ]
        for k in sorted(table, key=lambda k: -table[k]):
            lines.append(
                f"| {k} | {counts.get(k, 0)} | {100 * run.get(k, 0):.1f}% | {100 * table[k]:.1f}% |"
            )
    return lines


def write_report(out: Path, summary: dict[str, Any]) -> Path:
    setup = summary["setup"]
    measured = measured_entries(summary)
    pcts = pcts_of(summary)
    keys = config_keys(summary)
    if keys:
        plots.fig7(summary, pcts, out / "fig7.png")
        cached = [k for k in keys if summary[k]["mode"] in ("lru", "dss")]
        if cached:
            plots.fig8(summary, cached, out / "fig8.png")
        plots.fig9(summary, pcts[-1], FIG9, out / "fig9.png")
    sc, ws = setup["scale"], setup["working_set"]
    loads = {
        summary[k]["measured_as"]: (summary[k]["loadavg_before"][0], summary[k]["loadavg_after"][0])
        for k in keys
    }
    md = [
        "# Caching with semantic hints (paper section V.C, Figs. 7-9)",
        "",
        "Numbers in parentheses are the paper's, where its text states them (derived ones: "
        "`summary.json` `paper` and swift_dss/experiment/paper.py say how). Every number "
        "below is in `summary.json`; each run's own files are under `runs/<config>/`.",
        "",
        "## Setup",
        "",
        *setup_lines(
            {**setup, "tcp": sorted({e["tcp"] for e in measured if "tcp" in e})},
            {e["measured_as"]: len(e.get("repeats") or [e]) for e in measured},
        ),
        *as_sent_lines(k for e in measured for k in e.get("steady_uploads_per_run", [None])),
        f"- Workload: Table I, object sizes x{sc['size_scale']:g}, request counts "
        f"x{sc['count_scale']:g}: {ws['objects']} objects, {ws['bytes'] / MIB:,.0f} MiB PUT "
        f"({setup['bytes_per_device'] / MIB:,.0f} MiB per device with replicas), "
        f"{ws['gets']} GETs, concurrency {setup['workload']['concurrency']}.",
        "- Cache per device: "
        + ", ".join(f"{p} = {b / MIB:.0f} MiB" for p, b in setup["cache_bytes_per_device"].items())
        + cache_block(sc),
        f"- Machine: {setup['machine']['cpus']} CPUs; load average (1 min) before / after "
        "each run: " + ", ".join(f"{k} {a:.1f}/{b:.1f}" for k, (a, b) in loads.items()),
        "",
        "Byte mix of the scaled run against Table I's expectation:",
        "",
        *mix_table(setup),
        "",
        "## Fig. 7: bandwidth, latency, failures",
        "",
        "![Fig. 7](fig7.png)",
        "",
        *fig7_table(summary),
        "",
        "HDD only and SSD only have no cache: one run each, shown under every cache size.",
        "",
        "### The paper's headline ratios, measured in this run",
        "",
        *headline_table(summary),
        "",
        f"Failed requests in the DSS configurations (all phases): "
        f"{json.dumps(summary.get('dss_failures_all_phases'))}.",
        *failure_causes(summary),
        "",
        "### The paper's orders",
        "",
        *orders_table(summary),
        "",
        "### What was busy: CPU and links per phase",
        "",
        "Machine CPU is the share of all cores busy; a phase is CPU-bound (the machine, not "
        "the emulated hardware, set its pace) above 75% of the machine or with one process "
        "above 90% of a core.",
        "",
        *utilisation_table(summary),
        "",
        "### Device activity per phase (all devices together)",
        "",
        *devices_table(summary),
        "",
        "### Cache counters at the end of each run",
        "",
        *cache_table(summary),
        "",
    ]
    cached = [k for k in keys if summary[k]["mode"] in ("lru", "dss")]
    if cached:
        md += [
            "## Fig. 8: cache content by object type (before DELETE)",
            "",
            "![Fig. 8](fig8.png)",
            "",
            *content_table(summary, cached),
            "",
        ]
    md += [
        f"## Fig. 9: cost efficiency ({pcts[-1] if pcts else '-'} cache)",
        "",
        "![Fig. 9](fig9.png)",
        "",
        "$/GB/IOPS = (price per GB of stored data: HDD 0.15, SSD 3.95, cache p: 0.15 + "
        "p x 3.95) / measured requests per second of the phase, divided by HDD's.",
        "",
        *(cost_table(summary, pcts[-1]) if pcts else []),
        "",
    ]
    md += ["## Run time per configuration", "", *time_table(summary), ""]
    if summary.get("missing"):
        md += [f"Not measured (failed or not run): {', '.join(summary['missing'])}.", ""]
    warnings = {k: summary[k].get("warnings") for k in keys if summary[k].get("warnings")}
    if warnings:
        md += ["Load generator warnings: " + json.dumps(warnings), ""]
    path = out / "report.md"
    path.write_text("\n".join(md))
    return path


__all__ = ["FIG7", "FIG7_KEYS", "write_report"]
