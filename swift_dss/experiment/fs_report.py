"""The report of `dss experiment fs`: our figures beside the DSS paper's (SOSP'11,
section 5), as report.md, fs.png and content.png, and the console's table (the tpch
section's own tables are in tpch_report.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from swift_dss.experiment import tpch_report
from swift_dss.experiment.fs import CONTENT_GROUPS
from swift_dss.experiment.fs_load import UTILITIES

#: Run times the paper's text states (minutes for the servers' transactions, seconds for
#: the utilities and TPC-H's queries); "hdd" is its run without a cache, "dss" its LRU-S.
PAPER_TIME = {
    "tpch": tpch_report.PAPER_SECONDS,
    "sfs": {"hdd": 135.0, "lru": 124.0, "dss": 69.0},
    "email": {"hdd": 341.0, "lru": 262.0, "dss": 131.0},
    "find": {"lru": 48.0, "dss": 13.0},
    "tar": {"lru": 850.0, "dss": 598.0},
    "scan": {"lru": 562.0, "dss": 94.0},  # the paper's fsck
}
PAPER_READ_HIT = {
    "sfs": {"lru": 0.10, "dss": 0.10},
    "email": {"lru": 0.11, "dss": 0.11},
    "find": {"lru": 0.80, "dss": 1.00},
    "tar": {"lru": 0.05, "dss": 0.10},
}
#: Share of the cache held by metadata and files up to 64 KiB after the file server (Fig. 2).
PAPER_SMALL_SHARE = {"lru": 0.01, "dss": 0.40}
PAPER_WRITE_BACK = {"email": {"lru": 0.54, "dss": 0.25}}
#: E-mail: 95th percentile read latency of 2 KB messages, ms (section 5.5).
PAPER_EMAIL_2K_READ_MS = {"hdd": 85.0, "lru": 21.0, "dss": 4.0}
LABELS = {"hdd": "HDD only", "lru": "LRU", "dss": "DSS", "ssd": "SSD only"}
#: The phase each workload's run time is (the one set beside the paper's).
MAIN_PHASE = {"sfs": "transactions", "email": "transactions", "tpch": "queries"}


def _runs(summary: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(r["workload"], r["config"]): r for r in summary["runs"]}


def _groups(runs: dict[tuple[str, str], dict[str, Any]]) -> list[str]:
    """The content groups any run holds, in the paper's stacking order."""
    present = {g for r in runs.values() for g in r["content"]}
    order = dict.fromkeys([*(name for name, _ids in CONTENT_GROUPS), *tpch_report.GROUPS])
    return [g for g in order if g in present]


def _key(workload: str, phase: str) -> str:
    """PAPER_TIME's key: the workload for its main phase, else the utility."""
    return workload if phase == MAIN_PHASE.get(workload) else phase


def _io(p: dict[str, Any], op: str) -> str:
    """Operations that reached the modelled HDD, and their MiB."""
    ops, size = p.get(f"hdd_{op}_ops"), p.get(f"hdd_{op}_bytes")
    return "-" if ops is None else f"{ops} ({size / 2**20:.1f})"


def _f(v: float | None, digits: int = 1) -> str:
    return "-" if v is None else f"{v:.{digits}f}"


def speedups(summary: dict[str, Any]) -> list[dict[str, Any]]:
    """DSS over LRU, and LRU over HDD, per workload and utility: ours and the paper's."""
    runs = _runs(summary)
    out = []
    names = [(w, "transactions") for w in ("sfs", "email")]
    names += [("sfs", u.name) for u in UTILITIES]
    for workload, phase in names:
        key = _key(workload, phase)

        def t(config: str, workload: str = workload, phase: str = phase) -> float | None:
            r = runs.get((workload, config))
            return None if r is None or phase not in r["phases"] else r["phases"][phase]["seconds"]

        paper = PAPER_TIME[key]
        for slow, fast in (("lru", "dss"), ("hdd", "lru"), ("hdd", "dss")):
            a, b = t(slow), t(fast)
            if a is None or b is None or b <= 0:
                continue
            ref = paper[slow] / paper[fast] if slow in paper and fast in paper else None
            out.append({"what": f"{key}: {fast} over {slow}", "measured": a / b, "paper": ref})
    return out + tpch_report.speedups(summary)


def email_2k_read_ms(summary: dict[str, Any]) -> dict[str, float]:
    out = {}
    for (w, config), r in _runs(summary).items():
        if w == "email":
            got = r["phases"]["transactions"]["latency_p95_ms"].get("read", {}).get("2048")
            if got is not None:
                out[config] = got
    return out


def print_fs(summary: dict[str, Any], console: Console) -> None:
    runs = _runs(summary)
    table = Table(title="dss experiment fs: measured (paper)")
    for col in ("workload", "config", "phase", "seconds", "read hit", "write-back", "HDD busy s"):
        table.add_column(col, justify="left" if col in ("workload", "config", "phase") else "right")
    for (w, config), r in runs.items():
        for name, p in r["phases"].items():
            if name in ("setup", "load"):
                continue
            key = _key(w, name)
            ref = PAPER_TIME.get(key, {}).get(config)
            unit = " min" if name == "transactions" else " s"
            hit = PAPER_READ_HIT.get(key, {}).get(config)
            table.add_row(
                w,
                config,
                name,
                _f(p["seconds"]) + ("" if ref is None else f" ({ref:g}{unit})"),
                _f(None if p["read_hit_ratio"] is None else 100 * p["read_hit_ratio"], 0)
                + "%"
                + ("" if hit is None else f" ({100 * hit:.0f}%)"),
                _f(100 * (p["write_back_share"] or 0), 0) + "%",
                _f(p["hdd_busy_s"]),
            )
    console.print(table)
    for s in speedups(summary):
        paper = "" if s["paper"] is None else f" (paper {s['paper']:.2f})"
        console.print(f"{s['what']}: {s['measured']:.2f}x{paper}")


def write_report(out: Path, summary: dict[str, Any]) -> Path:
    runs = _runs(summary)
    pct = summary.get("cache_pct") or {w: summary["options"]["cache_pct"] for w, _c in runs}
    lines = [
        "# dss experiment fs",
        "",
        "The DSS paper's own evaluation (SOSP'11, section 5) on dss-tier: each workload on a",
        "fresh mount per configuration, device models on "
        f"(SSD `{summary['options']['ssd_model']}`, HDD `{summary['options']['hdd_model']}`), "
        "cache "
        + ", ".join(f"{w} {p:.3g}%" for w, p in pct.items())
        + " of the data (SSD only: room for everything), "
        f"{summary['options']['threads']} threads. Pools scaled by "
        + (", ".join(f"{w} {s:.4g}" for w, s in summary["count_scale"].items()) or "-")
        + " of the paper's. The paper's figures are in parentheses (its run times are",
        "minutes on a RAID of 5 disks at full scale; compare the ratios).",
        "",
        "## Run times",
        "",
        "| workload | config | files | pool MiB | cache MiB | phase | seconds | read hit | "
        "write-back share | HDD busy s | SSD busy s | HDD reads (MiB) | HDD writes (MiB) |",
        "| --- | --- | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for (w, config), r in runs.items():
        for name, p in r["phases"].items():
            hit = p["read_hit_ratio"]
            lines.append(
                f"| {w} | {config} | {r['files']} | {r['pool_bytes'] / 2**20:.0f} | "
                f"{r['cache_bytes'] / 2**20:.0f} | {name} | {p['seconds']:.2f} | "
                f"{'-' if hit is None else f'{100 * hit:.0f}%'} | "
                f"{100 * (p['write_back_share'] or 0):.0f}% | {p['hdd_busy_s']:.1f} | "
                f"{p['ssd_busy_s']:.1f} | {_io(p, 'read')} | {_io(p, 'write')} |"
            )
    lines += ["", "## Speed-ups, ours and the paper's", ""]
    lines += ["| what | ours | paper |", "| --- | ---: | ---: |"]
    for s in speedups(summary):
        ref = "-" if s["paper"] is None else f"{s['paper']:.2f}"
        lines.append(f"| {s['what']} | {s['measured']:.2f} | {ref} |")
    servers = {k: r for k, r in runs.items() if k[0] != "tpch"}
    lines += ["", "## Cache content after the transactions (Fig. 2)", ""]
    groups = _groups(servers)
    lines.append("| workload | config | " + " | ".join(groups) + " |")
    lines.append("| --- | --- |" + " ---: |" * len(groups))
    for (w, config), r in servers.items():
        if config in ("lru", "dss"):
            lines.append(
                f"| {w} | {config} | "
                + " | ".join(f"{100 * r['content'].get(g, 0):.1f}%" for g in groups)
                + " |"
            )
    lines += [
        "",
        "The paper: under LRU, metadata and files up to 64 KiB hold under 1% of the file",
        "server's cache; under LRU-S over 40%.",
        "",
    ]
    email = email_2k_read_ms(summary)
    if email:
        lines += [
            "## E-mail: 95th percentile read latency of 2 KiB messages",
            "",
            "| config | ms | paper ms |",
            "| --- | ---: | ---: |",
        ]
        for config, ms in email.items():
            ref = PAPER_EMAIL_2K_READ_MS.get(config)
            lines.append(f"| {config} | {ms:.1f} | {'-' if ref is None else f'{ref:g}'} |")
        lines.append("")
    lines += tpch_report.section(summary)
    if any(w == "sfs" for w, _c in runs):
        lines += ["Utilities: " + "; ".join(f"`{u.name}`: {u.what}" for u in UTILITIES) + ".", ""]
    lines += ["![run times](fs.png)", "", "![cache content](content.png)", ""]
    path = out / "report.md"
    path.write_text("\n".join(lines))
    plot(out, summary)
    return path


def plot(out: Path, summary: dict[str, Any]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = _runs(summary)
    panels = [(w, "transactions") for w in ("sfs", "email")] + [("sfs", u.name) for u in UTILITIES]
    panels += [("tpch", "queries")]
    panels = [p for p in panels if any((p[0], c) in runs for c in LABELS)]
    # Room for the title above a single panel.
    width = max(6.4, 3.2 * len(panels))
    fig, axes = plt.subplots(1, max(1, len(panels)), figsize=(width, 3.4))
    axes = list(axes) if len(panels) > 1 else [axes]
    for ax, (w, phase) in zip(axes, panels, strict=False):
        key = _key(w, phase)
        configs = [c for c in LABELS if (w, c) in runs and phase in runs[(w, c)]["phases"]]
        ours = [runs[(w, c)]["phases"][phase]["seconds"] for c in configs]
        base = ours[configs.index("lru")] if "lru" in configs else max(ours)
        ax.bar(range(len(configs)), [v / base for v in ours])
        paper = PAPER_TIME.get(key, {})
        if "lru" in paper:
            xs = [i for i, c in enumerate(configs) if c in paper]
            ax.scatter(xs, [paper[configs[i]] / paper["lru"] for i in xs], marker="D",
                       color="black", s=18, zorder=3)  # fmt: skip
        ax.set_xticks(range(len(configs)), [LABELS[c] for c in configs], rotation=30)
        ax.set_title(f"{key}" + (f" {phase}" if key == w else ""))
        ax.set_ylabel("run time / LRU's")
    fig.suptitle("dss experiment fs: run time relative to LRU (diamonds: the paper)")
    fig.tight_layout()
    fig.savefig(out / "fs.png", dpi=110)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(6, 3.4))
    bars = [(w, c) for (w, c) in runs if c in ("lru", "dss")]
    groups = _groups(runs)
    bottom = [0.0] * len(bars)
    for g in groups:
        vals = [100 * runs[b]["content"].get(g, 0) for b in bars]
        ax.bar(range(len(bars)), vals, bottom=bottom, label=g)
        bottom = [a + v for a, v in zip(bottom, vals, strict=True)]
    ax.set_xticks(range(len(bars)), [f"{w} {LABELS[c]}" for w, c in bars])
    ax.set_ylabel("% of cached bytes")
    ax.set_title("cache content after the transactions or queries (paper Fig. 2)")
    ax.legend(fontsize=7, loc="upper right")
    fig.tight_layout()
    fig.savefig(out / "content.png", dpi=110)
    plt.close(fig)
