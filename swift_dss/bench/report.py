"""What every benchmark writes: DIR/bench.json and a bar chart of the ratios beside it."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path


@dataclass(frozen=True)
class Figure:
    """One measurement of ours against the baseline, taken side by side in one run."""

    name: str
    ours: float
    baseline: float
    unit: str
    #: The ratio aimed for; None for a figure kept for reference only.
    goal: float | None = None

    @property
    def ratio(self) -> float:
        return self.ours / self.baseline if self.baseline else float("nan")

    @property
    def met(self) -> bool | None:
        return None if self.goal is None else self.ratio >= self.goal

    def to_json(self) -> dict[str, object]:
        return {**asdict(self), "ratio": round(self.ratio, 4)}


def write_report(out: Path, title: str, figures: list[Figure]) -> Path:
    """Writes bench.json and bench.png; returns the JSON path."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out.mkdir(parents=True, exist_ok=True)
    path = out / "bench.json"
    path.write_text(json.dumps([f.to_json() for f in figures], indent=2) + "\n")
    fig, ax = plt.subplots(figsize=(max(6, 1.2 * len(figures)), 4))
    names = [f.name for f in figures]
    colors = ["tab:gray" if f.met is None else "tab:blue" if f.met else "tab:red" for f in figures]
    ax.bar(names, [f.ratio for f in figures], color=colors)
    for i, f in enumerate(figures):
        if f.goal is not None:
            ax.hlines(f.goal, i - 0.4, i + 0.4, color="black", linestyle="--")
    ax.set_ylabel("ours / baseline")
    ax.set_title(title)
    ax.tick_params(axis="x", rotation=30)
    fig.tight_layout()
    fig.savefig(out / "bench.png", dpi=100)
    plt.close(fig)
    return path


def print_table(figures: list[Figure]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table("benchmark", "ours", "baseline", "unit", "ratio", "goal")
    for f in figures:
        goal = "-" if f.goal is None else f"{f.goal:g} {'met' if f.met else 'MISSED'}"
        table.add_row(f.name, f"{f.ours:.2f}", f"{f.baseline:.2f}", f.unit, f"{f.ratio:.3f}", goal)
    Console().print(table)
