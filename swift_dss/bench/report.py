"""What every benchmark writes: DIR/bench.json and a bar chart of the ratios beside it."""

from __future__ import annotations

import json
import random
import statistics
import sys
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

#: Resamples behind every confidence interval; seeded, so a report is reproducible.
BOOTSTRAP_RESAMPLES = 2000


@dataclass(frozen=True)
class Figure:
    """One measurement of ours against the baseline, taken side by side in one run."""

    name: str
    ours: float
    baseline: float
    unit: str
    #: The ratio aimed for; None for a figure kept for reference only.
    goal: float | None = None
    #: 95% confidence interval of the ratio, where the rounds allow one.
    ci: tuple[float, float] | None = None

    @property
    def ratio(self) -> float:
        return self.ours / self.baseline if self.baseline else float("nan")

    @property
    def met(self) -> bool | None:
        return None if self.goal is None else self.ratio >= self.goal

    def to_json(self) -> dict[str, object]:
        return {**asdict(self), "ratio": round(self.ratio, 4)}


def ratio_ci(
    num: Sequence[float],
    den: Sequence[float],
    stat: Callable[[Sequence[float]], float] = statistics.median,
    level: float = 0.95,
) -> tuple[float, float]:
    """Bootstrap interval of stat(num) / stat(den) over paired rounds.

    Round i of each side ran side by side, so rounds are resampled in pairs: load that hit
    both sides of a round moves both, and the interval shows what is left, how far one run's
    ratio can be trusted on a shared machine.
    """
    if len(num) != len(den) or not num:
        raise ValueError("paired rounds needed: one value of each side per round")
    rng = random.Random(0)
    n = len(num)
    ratios = []
    for _ in range(BOOTSTRAP_RESAMPLES):
        idx = [rng.randrange(n) for _ in range(n)]
        d = stat([den[i] for i in idx])
        if d:
            ratios.append(stat([num[i] for i in idx]) / d)
    if not ratios:
        return float("nan"), float("nan")
    ratios.sort()
    tail = (1 - level) / 2
    return ratios[int(tail * (len(ratios) - 1))], ratios[int((1 - tail) * (len(ratios) - 1))]


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

    def spread(f: Figure, side: int) -> float:
        if not f.ci or f.ci[side] != f.ci[side]:  # no interval, or NaN
            return 0.0
        # A point estimate may sit just outside its percentile interval (rounding, or a
        # skewed resampling distribution): no bar then, rather than a negative one.
        return max(0.0, f.ratio - f.ci[0] if side == 0 else f.ci[1] - f.ratio)

    errors = [[spread(f, 0) for f in figures], [spread(f, 1) for f in figures]]
    ax.bar(names, [f.ratio for f in figures], color=colors, yerr=errors, capsize=3)
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

    table = Table("benchmark", "ours", "baseline", "unit", "ratio", "95% CI", "goal")
    for f in figures:
        goal = "-" if f.goal is None else f"{f.goal:g} {'met' if f.met else 'MISSED'}"
        ci = f"{f.ci[0]:.2f}-{f.ci[1]:.2f}" if f.ci else "-"
        table.add_row(
            f.name, f"{f.ours:.2f}", f"{f.baseline:.2f}", f.unit, f"{f.ratio:.3f}", ci, goal
        )
    # Logs and CI capture the table too: rich would fold it to 80 columns there.
    Console(width=None if sys.stdout.isatty() else 132).print(table)
