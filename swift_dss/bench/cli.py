"""``dss bench NAME --out DIR``: one benchmark, written to DIR/bench.json (and bench.png).

Each benchmark is a function ``run(out, rounds, progress) -> list[Figure]`` in the module
that owns what it measures; it is imported only when asked for.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path

import click

from swift_dss.bench.report import print_table, write_report
from swift_dss.cli_types import OutputDir


@dataclass(frozen=True)
class Bench:
    target: str  # "module:function"; the figures it returns carry their own goals
    title: str
    rounds: int  # default rounds


BENCHES = {
    "overhead": Bench(
        "swift_dss.bench.overhead:run",
        "dss overhead: with dss / without (higher is better)",
        25,
    ),
    "overhead-control": Bench(
        "swift_dss.bench.overhead:run_control",
        "overhead bench control: stock / identical stock (1.0 on an idle machine)",
        25,
    ),
    "engine": Bench(
        "swift_dss.bench.engine:run", "tier engine decisions per second: ours / plain LRU", 3
    ),
    "tier": Bench(
        "swift_dss.bench.tier:run", "dss-tier mount / the same directory used directly", 3
    ),
    "tier-passthrough": Bench(
        "swift_dss.bench.tier:run_passthrough",
        "dss-tier mount in mode hdd (passthrough, and through the daemon) / the directory",
        3,
    ),
    "saio-tier": Bench(
        "swift_dss.bench.saio_tier:run",
        "all-in-one Swift on dss-tier (mode ssd) / on a plain tmpfs directory",
        15,
    ),
    "saio-tier-hdd": Bench(
        "swift_dss.bench.saio_tier:run_hdd",
        "all-in-one Swift on dss-tier (mode hdd, passthrough) / on a plain tmpfs directory",
        15,
    ),
    "loadgen": Bench(
        "swift_dss.bench.loadgen:run", "requests per client CPU-second: ours / other", 3
    ),
    "links": Bench(
        "swift_dss.bench.links:run", "testbed links (tc-shaped veths): measured / set rate", 1
    ),
}


def _run(name: str, out: Path, rounds: int | None) -> None:
    from rich.console import Console

    console = Console(stderr=True)
    bench = BENCHES[name]
    module, func = bench.target.split(":")
    run = getattr(importlib.import_module(module), func)
    figures = run(out, rounds or bench.rounds, progress=lambda m: console.log(m))
    path = write_report(out, bench.title, figures)
    print_table(figures)
    missed = [f.name for f in figures if f.met is False]
    verdict = f"goal missed by {', '.join(missed)}" if missed else "every goal met"
    click.echo(f"{name}: {verdict}; results in {path}")


@click.command(help="Run a benchmark (or `all`) and write DIR/bench.json.")
@click.argument("name", type=click.Choice([*BENCHES, "all"]))
@click.option("--out", type=OutputDir(), default=Path("run/bench"), show_default=True)
@click.option("--rounds", type=click.IntRange(1, 500), default=None, help="Default: per bench.")
def bench(name: str, out: Path, rounds: int | None) -> None:
    names = list(BENCHES) if name == "all" else [name]
    for n in names:
        _run(n, out / n if name == "all" else out, rounds)
