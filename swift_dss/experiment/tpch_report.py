"""The tpch section of `dss experiment fs`'s report: our database run beside the DSS
paper's TPC-H on PostgreSQL (SOSP'11, section 5.7)."""

from __future__ import annotations

from typing import Any

#: The paper's run times of queries 2, 17, 18 and 19 back to back (seconds), scale factor
#: 8 (29 GB), 8 GB cache: no cache, LRU, and LRU-S ("dss").
PAPER_SECONDS = {"hdd": 680.0, "lru": 463.0, "dss": 386.0}
PAPER_CONTENT = (
    "The paper: under LRU most of the cache held index files, under LRU-S user tables; "
    "LRU-S also had the better read hit rate and slightly less cleaning (write-back) "
    "overhead."
)
QUERY_NAMES = ("Q2", "Q17", "Q18", "Q19")
GROUPS = ("metadata", "tables", "indexes", "other")


def _runs(summary: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {r["config"]: r for r in summary["runs"] if r["workload"] == "tpch"}


def _pct(v: float | None) -> str:
    return "-" if v is None else f"{100 * v:.0f}%"


def speedups(summary: dict[str, Any]) -> list[dict[str, Any]]:
    """LRU over no cache, DSS over LRU and over no cache: ours and the paper's."""
    runs = _runs(summary)
    out = []
    for slow, fast in (("hdd", "lru"), ("lru", "dss"), ("hdd", "dss")):
        if slow in runs and fast in runs:
            a = runs[slow]["phases"]["queries"]["seconds"]
            b = runs[fast]["phases"]["queries"]["seconds"]
            paper = PAPER_SECONDS[slow] / PAPER_SECONDS[fast]
            out.append({"what": f"tpch: {fast} over {slow}", "measured": a / b, "paper": paper})
    return out


def same_answers(summary: dict[str, Any]) -> dict[str, bool]:
    """Per query: did every configuration get the same result rows (by digest)?"""
    runs = _runs(summary).values()
    return {
        q: len({r["answers"][q] for r in runs if q in r.get("answers", {})}) <= 1
        for q in QUERY_NAMES
    }


def section(summary: dict[str, Any]) -> list[str]:
    """Lines of report.md for the tpch runs (none without them)."""
    runs = _runs(summary)
    if not runs:
        return []
    db = summary.get("tpch", {})
    pct = summary.get("cache_pct", {}).get("tpch")
    any_run = next(iter(runs.values()))
    lines = [
        "## TPC-H on SQLite (the paper's section 5.7)",
        "",
        f"Scale factor {db.get('scale_factor', '?')} (the paper's: 8), "
        f"{any_run['pool_bytes'] / 2**20:.0f} MiB in {any_run['files']} files (one per table, "
        "`.tbl`, and per index, `.idx`); tables and journals in class 24 (priority 2), "
        "indexes in class 31 (priority 9, bypassed under pressure); cache "
        + ("-" if pct is None else f"{pct:.1f}%")
        + " of the files (the paper's 8 GB of 29 GB); SQLite's page cache "
        f"{db.get('sqlite_cache_pages_per_file', '?')} pages per file stands for the host's "
        "memory. Queries 2, 17, 18 and 19 back to back after `cold`; the paper's seconds in "
        "parentheses.",
        "",
        "| config | cache MiB | queries s | "
        + " | ".join(f"{q} s" for q in QUERY_NAMES)
        + " | read hit | write-back share | HDD busy s | SSD busy s |",
        "| --- | ---: | ---: |" + " ---: |" * len(QUERY_NAMES) + " ---: | ---: | ---: | ---: |",
    ]
    for config, r in runs.items():
        p = r["phases"]["queries"]
        ref = PAPER_SECONDS.get(config)
        per = [r.get("queries", {}).get(q, {}).get("seconds") for q in QUERY_NAMES]
        lines.append(
            f"| {config} | {r['cache_bytes'] / 2**20:.0f} | {p['seconds']:.1f}"
            + ("" if ref is None else f" ({ref:g})")
            + " | "
            + " | ".join("-" if s is None else f"{s:.1f}" for s in per)
            + f" | {_pct(p['read_hit_ratio'])} | {_pct(p['write_back_share'] or 0)} | "
            f"{p['hdd_busy_s']:.1f} | {p['ssd_busy_s']:.1f} |"
        )
    lines += ["", "| speed-up | ours | paper |", "| --- | ---: | ---: |"]
    for s in speedups(summary):
        lines.append(f"| {s['what']} | {s['measured']:.2f} | {s['paper']:.2f} |")
    lines += ["", "Cache content after the queries:", ""]
    lines += ["| config | " + " | ".join(GROUPS) + " |", "| --- |" + " ---: |" * len(GROUPS)]
    for config, r in runs.items():
        if config in ("lru", "dss"):
            cells = " | ".join(f"{100 * r['content'].get(g, 0):.1f}%" for g in GROUPS)
            lines.append(f"| {config} | {cells} |")
    lines += ["", PAPER_CONTENT, ""]
    same = same_answers(summary)
    differ = [q for q, ok in same.items() if not ok]
    lines.append(
        "Every configuration's queries returned the same rows."
        if not differ
        else f"Result rows differ between configurations in {', '.join(differ)}."
    )
    lines.append("")
    return lines
