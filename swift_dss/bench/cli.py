"""``dss bench NAME --out DIR``: one benchmark, written to DIR/bench.json (and bench.png)."""

from __future__ import annotations

from pathlib import Path

import click

from swift_dss.bench.report import print_table, write_report

#: name -> (title, minimum acceptable ratio)
BENCHES = {"overhead": ("dss overhead: with dss / without (higher is better)", 0.97)}


def _run(name: str, out: Path, rounds: int) -> None:
    from rich.console import Console

    console = Console(stderr=True)
    title, target = BENCHES[name]
    if name == "overhead":
        from swift_dss.bench import overhead

        figures = overhead.run(out, rounds, progress=lambda m: console.log(m))
    path = write_report(out, title, figures, target)
    print_table(figures)
    worst = min(f.ratio for f in figures)
    click.echo(f"{name}: worst ratio {worst:.3f} (target {target}); results in {path}")


@click.command(help="Run a benchmark (or `all`) and write DIR/bench.json.")
@click.argument("name", type=click.Choice([*BENCHES, "all"]))
@click.option(
    "--out", type=click.Path(path_type=Path), default=Path("run/bench"), show_default=True
)
@click.option("--rounds", type=click.IntRange(1, 500), default=25, show_default=True)
def bench(name: str, out: Path, rounds: int) -> None:
    names = list(BENCHES) if name == "all" else [name]
    for n in names:
        _run(n, out / n if name == "all" else out, rounds)
