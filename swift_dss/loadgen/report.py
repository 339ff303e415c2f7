"""Writing a run: results.json (docs/loadgen.md, "Output"), CSV beside it, PNG plots.

Files in DIR:
    results.json     run description, ``rows`` (phase x op x type x class, then phase x op),
                     ``size_rows`` (the same split by size bucket), ``timeseries``, ``client``
    results.csv      the rows; sizes.csv the size rows; timeseries.csv per second
    recorder.json    the raw histograms (HdrHistogram, base64), mergeable with other runs
    bandwidth.png    MB/s per second, per phase and op
    latency_cdf.png  latency CDF per phase x op x type
    failures.png     failure rate per phase x op, by outcome
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

from swift_dss.loadgen.stats import Cell, Recorder

ROW_FIELDS = [
    "phase", "op", "type", "class", "ops", "failures", "mbps", "ops_per_s", "lat_mean_ms",
    "lat_p50_ms", "lat_p90_ms", "lat_p99_ms", "lat_p999_ms", "lat_max_ms", "ttfb_mean_ms",
    "ttfb_p99_ms", "bytes", "duration_s", "codes",
]  # fmt: skip


def write_csv(path: Path, rows: list[dict[str, Any]], fields: list[str] | None = None) -> None:
    fields = fields or (list(rows[0]) if rows else [])
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow(
                {k: json.dumps(v) if isinstance(v, dict | list) else v for k, v in r.items()}
            )


def write_run(out: Path, doc: dict[str, Any], recorder: Recorder, plots: bool = True) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    path = out / "results.json"
    path.write_text(json.dumps(doc, indent=1) + "\n")
    (out / "recorder.json").write_text(json.dumps(recorder.to_json()))
    write_csv(out / "results.csv", doc["rows"], ROW_FIELDS)
    write_csv(out / "sizes.csv", doc["size_rows"], ["size_bucket", *ROW_FIELDS])
    write_csv(out / "timeseries.csv", doc["timeseries"])
    if plots:
        plot_run(out, doc, recorder)
    return path


def _plt() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def cdf_points(cell: Cell) -> tuple[list[float], list[float]]:
    """(latency ms, cumulative fraction) at every recorded histogram bucket."""
    h = cell.lat
    total = h.get_total_count()
    xs, ys, seen = [], [], 0
    for item in h.get_recorded_iterator():
        seen += item.count_added_in_this_iter_step
        xs.append(item.value_iterated_to / 1000)
        ys.append(seen / total)
    return xs, ys


def plot_run(out: Path, doc: dict[str, Any], recorder: Recorder) -> None:
    plt = _plt()
    series = doc["timeseries"]
    fig, ax = plt.subplots(figsize=(8, 4))
    for key in sorted({(r["phase"], r["op"]) for r in series}):
        pts = [r for r in series if (r["phase"], r["op"]) == key]
        ax.plot([r["second"] for r in pts], [r["mbps"] for r in pts], label=f"{key[0]} {key[1]}")
    ax.set_xlabel("seconds since start")
    ax.set_ylabel("MB/s")
    ax.set_title(f"{doc['workload']}: bandwidth")
    if series:
        ax.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(out / "bandwidth.png", dpi=100)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(8, 5))
    for (phase, op, otype), cell in sorted(
        recorder.grouped(3).items(), key=lambda kv: tuple(str(v) for v in kv[0])
    ):
        if op in ("create_container", "delete_container") or not cell.lat.get_total_count():
            continue
        xs, ys = cdf_points(cell)
        ax.step(xs, ys, where="post", label=f"{phase} {op} {otype}")
    ax.set_xscale("log")
    ax.set_xlabel("latency (ms)")
    ax.set_ylabel("fraction of requests")
    ax.set_title(f"{doc['workload']}: latency CDF")
    ax.legend(fontsize="x-small")
    fig.tight_layout()
    fig.savefig(out / "latency_cdf.png", dpi=100)
    plt.close(fig)

    summary = [r for r in doc["rows"] if r["type"] is None]
    fig, ax = plt.subplots(figsize=(max(6, 0.9 * len(summary)), 4))
    labels = [f"{r['phase']}\n{r['op']}" for r in summary]
    outcomes = sorted({c for r in summary for c in r["codes"] if not c.startswith("2")})
    bottom = [0.0] * len(summary)
    for outcome in outcomes:
        vals = [100 * r["codes"].get(outcome, 0) / max(1, r["ops"]) for r in summary]
        ax.bar(labels, vals, bottom=bottom, label=outcome)
        bottom = [b + v for b, v in zip(bottom, vals, strict=True)]
    if not outcomes:
        ax.bar(labels, bottom)
        ax.text(0.5, 0.5, "no failures", transform=ax.transAxes, ha="center")
    else:
        ax.legend(title="outcome", fontsize="small")
    ax.set_ylabel("failed requests (%)")
    ax.set_title(f"{doc['workload']}: failures")
    fig.tight_layout()
    fig.savefig(out / "failures.png", dpi=100)
    plt.close(fig)
