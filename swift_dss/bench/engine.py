"""Decisions per second of the dss-tier cache engine, against a plain LRU block cache.

Both run inside one process (the engine's release example), on the same skewed stream of
reads and writes over four times the cache's blocks, one after the other in each round.
The baseline is the least any block cache does per access: a hash map from block to slot
and one LRU list with a dirty flag. The engine adds what the DSS paper asks for on top of
that (a dirty list per priority, watermarks, selective allocation and eviction, two-phase
fills and write-backs, per-class counters), so the ratio is the price of being class-aware.
The engine runs once per shipped tier policy (dss, lru, and the policies beyond the paper:
dss-slru, dss-readcut, dss-slru-readcut, slru, dss-secondmiss, dss-clockpro, dss-cluster,
lru-cluster), each against the same baseline figure.
The figures are decisions per CPU-second of the measuring thread: on a machine shared with
other work, wall time mostly measures the scheduler.

Beside them, each policy's memory per cache entry: the bytes the engine's structures hold
(entries, block map buckets at their allocated size, CLOCK-Pro's nodes and non-resident
keys, the second-miss filter), divided by the entries, against the same figure for the
plain LRU. These are reference figures (no goal): fewer bytes are better, so their ratio
is not one the report's "higher is better" goals could judge.
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
ENGINE = re.compile(r"^engine (\S+) [0-9.]+ M decisions/s, cpu ([0-9.]+) M decisions/s", re.M)
BASELINE = re.compile(r"^baseline [0-9.]+ M decisions/s, cpu ([0-9.]+) M decisions/s", re.M)
MEMORY = re.compile(r"^memory (\S+) ([0-9.]+) bytes/entry", re.M)
BASELINE_MEMORY = re.compile(r"^baseline memory ([0-9.]+) bytes/entry", re.M)


def build() -> Path:
    """The example binary, built (once; cargo decides what is stale)."""
    subprocess.run(
        ["cargo", "build", "--quiet", "--release", "-p", "dss-engine", "--example", "engine_bench"],
        cwd=TIER,
        check=True,
    )
    return EXAMPLE


def parse(output: str) -> tuple[dict[str, float], float]:
    """``({policy: M/s}, baseline M/s)`` per CPU-second, from the example's output."""
    engine = {name: float(value) for name, value in ENGINE.findall(output)}
    baseline = BASELINE.findall(output)
    if not engine or len(baseline) != 1:
        raise RuntimeError(f"engine_bench printed no figures: {output!r}")
    return engine, float(baseline[0])


def parse_memory(output: str) -> tuple[dict[str, float], float | None]:
    """``({policy: bytes per entry}, baseline bytes per entry)`` from the example's output;
    empty (and None) for an example that prints no memory lines."""
    memory = {name: float(value) for name, value in MEMORY.findall(output)}
    baseline = BASELINE_MEMORY.findall(output)
    return memory, float(baseline[0]) if len(baseline) == 1 else None


def run(out: Path, rounds: int = 5, progress: Callable[[str], None] = print) -> list[Figure]:
    exe = build()
    out.mkdir(parents=True, exist_ok=True)
    engine: dict[str, list[float]] = {}
    baseline: list[float] = []
    memory: dict[str, float] = {}
    memory_baseline: float | None = None
    for r in range(rounds):
        text = subprocess.run(
            [str(exe), str(OPS)], capture_output=True, text=True, check=True
        ).stdout
        rates, base = parse(text)
        for name, value in rates.items():
            engine.setdefault(name, []).append(value)
        baseline.append(base)
        # The same in every round (allocated sizes, not timings): the last round's stand.
        memory, memory_baseline = parse_memory(text)
        progress(f"engine round {r + 1}/{rounds}:\n{text.rstrip()}")
    base = statistics.median(baseline)
    figures = [
        Figure(f"decisions {name}", statistics.median(values), base, "M decisions/CPU-s")
        for name, values in engine.items()
    ]
    if memory_baseline is not None:
        figures += [
            Figure(
                f"bytes per entry {name}", value, memory_baseline, "bytes/entry (lower is better)"
            )
            for name, value in memory.items()
        ]
    return figures
