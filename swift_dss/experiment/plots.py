"""PNG figures laid out like the paper's: bars per configuration, the paper's published
values (where its text states them) as black diamonds on top."""

from __future__ import annotations

from pathlib import Path
from typing import Any

BASES = ("hdd", "ssd", "lru", "dss")
LABELS = {"hdd": "HDD", "ssd": "SSD", "lru": "LRU", "dss": "DSS"}


def pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _bars(ax: Any, summary: dict[str, Any], pcts: list[str], metric: str, scale: float) -> bool:
    """Bars of METRIC per configuration and cache size; whether any is above zero."""
    width = 0.8 / len(BASES)
    drawn = False
    for i, base in enumerate(BASES):
        xs, vals, paper_x, paper_v = [], [], [], []
        for j, pct in enumerate(pcts):
            entry = summary.get(f"{base}@{pct}")
            if entry is None:
                continue
            x = j + (i - (len(BASES) - 1) / 2) * width
            value = entry.get(metric)
            xs.append(x)
            vals.append(0 if value is None else value * scale)
            ref = (entry.get("paper") or {}).get(metric)
            if ref is not None:
                paper_x.append(x)
                paper_v.append(ref * scale)
        ax.bar(xs, vals, width, label=LABELS[base])
        drawn = drawn or any(v > 0 for v in vals)
        if paper_x:
            ax.scatter(paper_x, paper_v, marker="D", color="black", s=18, zorder=3)
    ax.set_xticks(range(len(pcts)), [f"{p} cache" for p in pcts])
    return drawn


def fig7(summary: dict[str, Any], pcts: list[str], path: Path) -> None:
    plt = pyplot()
    panels = [
        ("put_mbps", "(a) PUT bandwidth (MB/s)", 1),
        ("put_latency_ms", "(b) PUT mean latency (ms)", 1),
        ("failure_rate", "(c) failure rate (%)", 100),
        ("get_mbps", "(d) GET bandwidth (MB/s)", 1),
        ("get_ttfb_ms", "(e) GET latency to first byte (ms)", 1),
        ("get_ops_per_s", "(f) GET requests/s", 1),
    ]
    fig, axes = plt.subplots(2, 3, figsize=(13, 7))
    for ax, (metric, title, scale) in zip(axes.flat, panels, strict=True):
        # A run of policy variants only has none of these bars; log scale needs one.
        if _bars(ax, summary, pcts, metric, scale) and metric.endswith("_mbps"):
            ax.set_yscale("log")  # the paper's values are 1-2 orders above a scaled run's
        ax.set_title(title, fontsize="medium")
    axes.flat[0].legend(fontsize="small")
    fig.suptitle("Fig. 7: caching with semantic hints (diamonds: the paper's stated values)")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def fig8(summary: dict[str, Any], keys: list[str], path: Path) -> None:
    plt = pyplot()
    slices = sorted({s for k in keys for s in (summary[k].get("content_shares") or {})})
    fig, ax = plt.subplots(figsize=(9, 4))
    left = [0.0] * len(keys)
    for name in slices:
        vals = [100 * (summary[k].get("content_shares") or {}).get(name, 0) for k in keys]
        ax.barh(keys, vals, left=left, label=name)
        left = [a + b for a, b in zip(left, vals, strict=True)]
    ax.set_xlabel("share of cached bytes before DELETE (%)")
    ax.set_xlim(0, 100)
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1, 1))
    ax.set_title("Fig. 8: cache content by object type")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def fig9(summary: dict[str, Any], pct: str, paper: dict[str, Any], path: Path) -> None:
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7, 4))
    width = 0.38
    for i, phase in enumerate(("put", "get")):
        xs, vals = [], []
        for j, base in enumerate(BASES):
            entry = summary.get(f"{base}@{pct}")
            if entry is None:
                continue
            xs.append(j + (i - 0.5) * width)
            vals.append(entry.get(f"cost_norm_{phase}") or 0)
            ref = paper.get(base if base in ("hdd", "ssd") else f"{base}@{pct}", {}).get(phase)
            if ref is not None:
                ax.scatter([xs[-1]], [ref[0]], marker="D", color="black", s=18, zorder=3)
        ax.bar(xs, vals, width, label=phase.upper())
    ax.set_xticks(range(len(BASES)), [LABELS[b] for b in BASES])
    ax.set_ylabel("$/GB/IOPS, HDD = 1 (lower is better)")
    ax.set_title(f"Fig. 9: normalised cost efficiency ({pct} cache)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def fig10(runs: list[dict[str, Any]], streams: list[str], op: str, path: Path) -> None:
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(8, 4))
    names = [r["name"] for r in runs]
    bottom = [0.0] * len(runs)
    for s in streams:
        vals = [(r["streams"].get(s) or {}).get(f"{op}_mbps") or 0 for r in runs]
        ax.bar(names, vals, bottom=bottom, label=s)
        bottom = [a + b for a, b in zip(bottom, vals, strict=True)]
    ax.set_ylabel(f"{op.upper()} MB/s (stacked by stream)")
    ax.set_title(f"Fig. 10: aggregate {op.upper()} bandwidth with traffic control")
    ax.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def fig11(runs: list[dict[str, Any]], streams: list[str], op: str, path: Path) -> None:
    plt = pyplot()
    fig, axes = plt.subplots(1, len(runs), figsize=(3.2 * len(runs), 3.4), sharey=True)
    for ax, run in zip(axes if len(runs) > 1 else [axes], runs, strict=True):
        plotted = False
        for s in streams:
            cdf = (run["streams"].get(s) or {}).get(f"{op}_cdf") or []
            if cdf:
                ax.step([p[1] for p in cdf], [p[0] / 100 for p in cdf], where="post", label=s)
                plotted = True
        ax.set_xscale("log")
        if not plotted:
            # A run without these requests: a panel of its own scale, not one 100 ms wide.
            ax.set_xlim(1, 10_000)
            ax.text(0.5, 0.5, "no requests", transform=ax.transAxes, ha="center")
        ax.axvline(100, color="grey", lw=0.6, ls=":")
        ax.set_title(run["name"], fontsize="medium")
        ax.set_xlabel(f"{op.upper()} latency (ms)")
    first = axes[0] if len(runs) > 1 else axes
    first.set_ylabel("fraction of requests")
    if first.get_legend_handles_labels()[0]:
        first.legend(fontsize="x-small")
    fig.suptitle(f"Fig. 11: {op.upper()} latency CDF per stream")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
