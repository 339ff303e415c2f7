"""`dss experiment compare`: several caching runs side by side, with the paper's figures.

A probe changes one setting (the clients, the TCP, a model) and is judged against other
runs: this puts their Fig. 7 figures in one table per figure, a configuration a row and a
run a column, with how many of the paper's orders each run holds and how many of its
headline ratios fall within 25% of the paper's. It writes compare.md, compare.json and
compare.png (grouped bars, the paper's values as diamonds) and reads nothing but each
run's summary.json.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from swift_dss.experiment.caching_report import config_keys as entry_keys
from swift_dss.experiment.caching_report import measured_entries
from swift_dss.experiment.plots import pyplot

#: Figure -> (title, factor from the summary's unit, decimals shown).
FIGURES: dict[str, tuple[str, float, int]] = {
    "put_mbps": ("PUT MB/s", 1, 1),
    "get_mbps": ("GET MB/s", 1, 1),
    "get_ttfb_ms": ("GET time to first byte, ms", 1, 1),
    "failure_rate": ("failed requests, %", 100, 2),
}
#: A headline ratio is near the paper's within this share of it.
BAND = 0.25


class CompareError(ValueError):
    """A directory that holds no caching run's summary."""


@dataclass(frozen=True)
class Run:
    label: str
    summary: dict[str, Any]

    @cached_property
    def entries(self) -> dict[str, dict[str, Any]]:
        return {e["key"]: e for e in measured_entries(self.summary)}

    def value(self, key: str, metric: str) -> Any:
        """METRIC of configuration KEY in this run; None where it was not measured."""
        return (self.entries.get(key) or {}).get(metric)

    def clients(self) -> int | None:
        return ((self.summary.get("setup") or {}).get("scale") or {}).get("concurrency")

    def repeats(self) -> int:
        return max((len(e.get("repeats") or [None]) for e in self.entries.values()), default=0)

    def orders_held(self) -> tuple[int, int]:
        measured = [o for o in self.summary.get("orders", []) if o.get("held") is not None]
        return sum(1 for o in measured if o["held"]), len(measured)

    def ratios_near(self) -> tuple[int, int]:
        judged = [
            abs(h["measured"] / h["paper"] - 1) <= BAND
            for h in self.summary.get("headlines", [])
            if h.get("paper") and h.get("measured") is not None
        ]
        return sum(judged), len(judged)


def load(dirs: list[Path], labels: list[str] | None = None) -> list[Run]:
    """Each directory's caching summary, labelled by LABELS or the directory's name."""
    if labels and len(labels) != len(dirs):
        raise CompareError(f"{len(labels)} labels for {len(dirs)} runs")
    names = labels or [d.name for d in dirs]
    if len(set(names)) != len(names):
        raise CompareError(f"runs need different labels (--label): {', '.join(names)}")
    runs = []
    for d, name in zip(dirs, names, strict=True):
        path = d / "summary.json"
        try:
            summary = json.loads(path.read_text())
        except FileNotFoundError:
            raise CompareError(f"{d}: no summary.json (not a finished caching run)") from None
        except OSError as err:
            raise CompareError(f"{path}: {err.strerror}") from None
        except UnicodeDecodeError as err:
            raise CompareError(f"{path}: not UTF-8 text (byte {err.start})") from None
        except json.JSONDecodeError as err:
            raise CompareError(f"{path}: not JSON ({err.msg})") from None
        if not isinstance(summary, dict) or summary.get("experiment") != "caching":
            raise CompareError(f"{path}: not a caching experiment's summary")
        if why := shape_error(summary):
            raise CompareError(f"{path}: {why}")
        runs.append(Run(name, summary))
    return runs


def _number(value: Any) -> bool:
    return value is None or (isinstance(value, int | float) and not isinstance(value, bool))


def _mappings(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, dict) for v in value)


def shape_error(summary: dict[str, Any]) -> str | None:
    """What of the parts this reads of a caching SUMMARY is not as the experiment writes
    it, or that it measured nothing: a table of dashes would pass for a comparison."""
    setup = summary.get("setup") or {}
    scale = (setup.get("scale") or {}) if isinstance(setup, dict) else None
    if not isinstance(scale, dict) or not _number(scale.get("concurrency")):
        return "setup is not a mapping whose scale holds the clients (concurrency) as a number"
    if not _mappings(orders := summary.get("orders", [])) or not all(
        o.get("held") in (None, True, False) for o in orders
    ):
        return "orders is not a list of mappings, each held true, false or null"
    if not _mappings(heads := summary.get("headlines", [])) or not all(
        _number(h.get("paper")) and _number(h.get("measured")) for h in heads
    ):
        return "headlines is not a list of mappings with numbers for paper and measured"
    keys = entry_keys(summary)
    for key in keys:
        e = summary[key]
        paper = e.get("paper") or {}
        if (
            not isinstance(e.get("key"), str)
            or not isinstance(e.get("measured_as"), str)
            or not isinstance(e.get("repeats") or [], list)
            or not isinstance(paper, dict)
            or not all(_number(e.get(m)) and _number(paper.get(m)) for m in FIGURES)
        ):
            return f"{key} is not a measured configuration (key, measured_as, numbers)"
    if not keys:
        return "it measured no configuration"
    return None


def config_keys(runs: list[Run]) -> list[str]:
    keys: list[str] = []
    for run in runs:
        keys.extend(k for k in run.entries if k not in keys)
    return keys


def paper_value(runs: list[Run], key: str, metric: str) -> float | None:
    """The paper's METRIC for KEY, from the first run that measured KEY."""
    entry = next((r.entries[key] for r in runs if key in r.entries), {})
    return (entry.get("paper") or {}).get(metric)


def _of(part: int, whole: int) -> str:
    """N of M, or "-" where a run measured none (a probe of a few configurations)."""
    return f"{part} of {whole}" if whole else "-"


def _cell(value: Any, factor: float, digits: int) -> str:
    return "-" if value is None else f"{value * factor:,.{digits}f}"


def markdown(runs: list[Run]) -> list[str]:
    labels = [r.label for r in runs]
    head = "| " + " | ".join(labels) + " |"
    rule = "|---|" + "---:|" * len(runs)
    lines = [
        "| run | clients | repeats | orders held | ratios within 25% of the paper's |",
        "|---|---:|---:|---:|---:|",
    ]
    for run in runs:
        held, orders = run.orders_held()
        near, ratios = run.ratios_near()
        lines.append(
            f"| {run.label} | {run.clients() or '-'} | {run.repeats()} | {_of(held, orders)} "
            f"| {_of(near, ratios)} |"
        )
    keys = config_keys(runs)
    for metric, (title, factor, digits) in FIGURES.items():
        lines += ["", f"**{title}**", "", f"| config {head} paper |", rule + "---:|"]
        for key in keys:
            paper = paper_value(runs, key, metric)
            values = [_cell(r.value(key, metric), factor, digits) for r in runs]
            lines.append(
                f"| {key} | " + " | ".join(values) + f" | {_cell(paper, factor, digits)} |"
            )
    return lines


def figure(runs: list[Run], path: Path) -> None:
    plt = pyplot()
    keys = config_keys(runs)
    fig, axes = plt.subplots(2, 2, figsize=(12, 7))
    width = 0.8 / len(runs)
    for ax, (metric, (title, factor, _)) in zip(axes.flat, FIGURES.items(), strict=True):
        for i, run in enumerate(runs):
            xs = [j + (i - (len(runs) - 1) / 2) * width for j in range(len(keys))]
            vals = [(run.value(k, metric) or 0) * factor for k in keys]
            ax.bar(xs, vals, width, label=run.label)
        paper = [(j, paper_value(runs, k, metric)) for j, k in enumerate(keys)]
        shown = [(j, v * factor) for j, v in paper if v is not None]
        if shown:
            ax.scatter(*zip(*shown, strict=True), marker="D", color="black", s=18, zorder=3)
        ax.set_xticks(range(len(keys)), keys, rotation=30)
        ax.set_title(title)
    axes.flat[0].legend(fontsize=8)
    fig.suptitle("Caching runs side by side (diamonds: the paper's values)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write(runs: list[Run], out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    md, js, png = out / "compare.md", out / "compare.json", out / "compare.png"
    md.write_text("# Caching runs side by side\n\n" + "\n".join(markdown(runs)) + "\n")
    doc = {
        r.label: {
            "clients": r.clients(),
            "repeats": r.repeats(),
            "orders_held": r.orders_held(),
            "ratios_near": r.ratios_near(),
            "figures": {k: {m: e.get(m) for m in FIGURES} for k, e in r.entries.items()},
        }
        for r in runs
    }
    js.write_text(json.dumps(doc, indent=1) + "\n")
    figure(runs, png)
    return [md, js, png]
