"""Decisions per second of the dss-tier cache engine, against a plain LRU block cache.

Both run inside one process (the engine's release example), on the same skewed stream of
reads and writes over four times the cache's blocks, one after the other in each round.
The baseline is the least any block cache does per access: a hash map from block to slot
and one LRU list with a dirty flag. The engine adds what the DSS paper asks for on top of
that (a dirty list per priority, watermarks, selective allocation and eviction, two-phase
fills and write-backs, per-class counters), so the ratio is the price of being class-aware.
"""

from __future__ import annotations

import re
import statistics
import subprocess
from collections.abc import Callable
from pathlib import Path

from swift_dss.bench.report import Figure

TIER = Path(__file__).resolve().parents[2] / "tier"
EXAMPLE = TIER / "target" / "release" / "examples" / "engine_bench"
OPS = 5_000_000
LINE = re.compile(r"^(engine|baseline) ([0-9.]+) M decisions/s", re.M)


def build() -> Path:
    """The example binary, built (once; cargo decides what is stale)."""
    subprocess.run(
        ["cargo", "build", "--quiet", "--release", "-p", "dss-engine", "--example", "engine_bench"],
        cwd=TIER,
        check=True,
    )
    return EXAMPLE


def parse(output: str) -> dict[str, float]:
    """``{"engine": M/s, "baseline": M/s}`` from the example's output."""
    found = {name: float(value) for name, value in LINE.findall(output)}
    if set(found) != {"engine", "baseline"}:
        raise RuntimeError(f"engine_bench printed no figures: {output!r}")
    return found


def run(out: Path, rounds: int = 5, progress: Callable[[str], None] = print) -> list[Figure]:
    exe = build()
    out.mkdir(parents=True, exist_ok=True)
    results: dict[str, list[float]] = {"engine": [], "baseline": []}
    for r in range(rounds):
        text = subprocess.run(
            [str(exe), str(OPS)], capture_output=True, text=True, check=True
        ).stdout
        for name, value in parse(text).items():
            results[name].append(value)
        progress(f"engine round {r + 1}/{rounds}: {text.splitlines()[0]}")
    return [
        Figure(
            "cache decisions",
            statistics.median(results["engine"]),
            statistics.median(results["baseline"]),
            "M decisions/s",
        )
    ]
