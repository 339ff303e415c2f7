"""`dss experiment caching|traffic`: the paper's section V on the all-in-one cluster."""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import click

from swift_dss.cli_types import POSITIVE, OutputDir
from swift_dss.experiment.scale import DEFAULT, TESTBED_DEFAULT, TESTBED_REPEATS, Scale
from swift_dss.experiment.testbed_options import testbed_options

#: The traffic study's phases on the testbed, in measured seconds.
TESTBED_TRAFFIC_DURATION = 60.0


@dataclass(frozen=True)
class ScaleArgs:
    """The scale options as given; None where the experiment's default stands."""

    factor: float
    size_scale: float | None
    count_scale: float | None
    concurrency: int | None
    devices: int | None
    replicas: int | None
    workers: int | None
    containers: int | None

    def overrides(self) -> dict[str, Any]:
        """Every option but the factor, by Scale field name (None: keep the default)."""
        return {k: getattr(self, k) for k in self.__dataclass_fields__ if k != "factor"}


def scale_options(f: Any) -> Any:
    """The scale options, handed to the command as one ``scale_args``."""

    # functools.wraps shares f's __click_params__, so options declared below this
    # decorator stay attached to the wrapper click sees.
    @functools.wraps(f)
    def with_scale_args(*args: Any, **kwargs: Any) -> Any:
        given = {name: kwargs.pop(name) for name in ScaleArgs.__dataclass_fields__}
        return f(*args, scale_args=ScaleArgs(**given), **kwargs)

    for opt in reversed(
        [
            click.option(
                "--scale",
                "factor",
                type=POSITIVE,
                default=1.0,
                show_default=True,
                help="multiply the request counts (more objects of the same sizes)",
            ),
            click.option("--size-scale", type=POSITIVE, default=None, help="object size factor"),
            click.option("--count-scale", type=POSITIVE, default=None, help="request count factor"),
            click.option("--concurrency", type=click.IntRange(1, 10_000), default=None),
            click.option("--devices", type=click.IntRange(1, 64), default=None),
            click.option("--replicas", type=click.IntRange(1, 8), default=None),
            click.option("--workers", type=click.IntRange(0, 64), default=None),
            click.option("--containers", type=click.IntRange(1, 10_000), default=None),
        ]
    ):
        with_scale_args = opt(with_scale_args)
    return with_scale_args


def make_scale(base: Scale, factor: float, **overrides: Any) -> Scale:
    scale = replace(base, **{k: v for k, v in overrides.items() if v is not None})
    return scale.times(factor)


@click.group(
    help="The paper's evaluation on the emulated testbed or the all-in-one cluster "
    "(docs/experiments.md)."
)
def experiment() -> None:
    pass


def caching_testbed_options(f: Any) -> Any:
    from swift_dss.experiment.targets import CACHING_TESTBED

    return testbed_options(f, CACHING_TESTBED)


@experiment.command(help="HDD, SSD, LRU and DSS at 5% and 10% cache: Figs. 7-9.")
@click.option("--out", type=OutputDir(), default=Path("run/experiment/caching"))
@scale_options
@caching_testbed_options
@click.option("--cache-pcts", default="5,10", show_default=True, help="cache sizes, % of WS")
@click.option("--only", default=None, help="configurations to run, e.g. dss,lru@10%")
@click.option("--force", is_flag=True, help="rerun configurations that completed before")
@click.option("--report-only", is_flag=True, help="rebuild summary and report, run nothing")
@click.option(
    "--variants",
    default="none",
    show_default=True,
    help="policy variants run beside dss at the largest cache: none (the paper's six "
    "configurations), all (every shipped swift_dss/policies/dss-*.toml) or a comma list "
    "of names, such as dss-readcut",
)
@click.option(
    "--cache-block",
    default=None,
    help="the tiers' cache block: bytes (a power of two, 512-1048576), or `scaled`: 4 KiB "
    "times the object size scale, to a power of two, so that a scaled object spans as many "
    "blocks as the full-size one  [default: the policy's, 4 KiB]",
)
def caching(
    out: Path,
    scale_args: ScaleArgs,
    cache_pcts: str,
    only: str | None,
    force: bool,
    report_only: bool,
    variants: str,
    cache_block: str | None,
    testbed: Any,
    repeats: int | None,
) -> None:
    from rich.console import Console

    from swift_dss.experiment.caching import caching as run_caching
    from swift_dss.experiment.caching_configs import (
        configurations,
        parse_pcts,
        select_configs,
        select_variants,
    )
    from swift_dss.experiment.cluster import ExperimentError
    from swift_dss.experiment.tables import print_caching

    base = DEFAULT if testbed.kind == "saio" else TESTBED_DEFAULT.dilated(testbed.dilation)
    scale = make_scale(base, scale_args.factor, **scale_args.overrides())
    if cache_block is not None:
        scale = replace(scale, cache_block=parse_cache_block(cache_block, scale.size_scale))
    if repeats is None:
        repeats = TESTBED_REPEATS
    try:
        pcts = parse_pcts(cache_pcts)
    except ValueError as err:
        raise click.BadParameter(str(err), param_hint="--cache-pcts") from err
    try:
        chosen = select_variants(variants)
    except ValueError as err:
        raise click.BadParameter(str(err), param_hint="--variants") from err
    try:
        names = None if only is None else select_configs(only, configurations(pcts, chosen))
    except ValueError as err:
        raise click.BadParameter(str(err), param_hint="--only") from err
    console = Console(stderr=True)
    try:
        summary = run_caching(
            out,
            scale,
            pcts,
            only=names,
            force=force,
            console=console,
            run_nothing=report_only,
            variants=chosen,
            testbed=testbed,
            repeats=repeats,
        )
    except ExperimentError as err:
        raise click.ClickException(str(err)) from err
    except KeyboardInterrupt:
        raise click.ClickException("interrupted; completed configurations are kept") from None
    print_caching(summary, Console())
    click.echo(f"{out / 'summary.json'}\n{out / 'report.md'}")


def parse_cache_block(value: str, size_scale: float) -> int:
    """`--cache-block`: a power of two in the tier's range, or `scaled`."""
    from swift_dss.experiment.policy_file import DEFAULT_BLOCK, MAX_BLOCK, MIN_BLOCK, scaled_block

    if value == "scaled":
        if DEFAULT_BLOCK * size_scale < 1:
            raise click.BadParameter(
                f"`scaled` with --size-scale {size_scale:g} is a block under one byte "
                f"(a scale of at least 1/{DEFAULT_BLOCK} is needed, or a block in bytes)",
                param_hint="--cache-block",
            )
        return scaled_block(DEFAULT_BLOCK, size_scale)
    try:
        block = int(value)
    except ValueError:
        block = 0
    if block < MIN_BLOCK or block > MAX_BLOCK or block & (block - 1):
        raise click.BadParameter(
            f"{value!r}: expected `scaled` or a power of two from {MIN_BLOCK} to {MAX_BLOCK}",
            param_hint="--cache-block",
        )
    return block


def traffic_testbed_options(f: Any) -> Any:
    from swift_dss.experiment.targets import TRAFFIC_TESTBED

    return testbed_options(f, TRAFFIC_TESTBED)


@experiment.command(help="Four streams, one more sent to the SSD each run: Figs. 10-11.")
@click.option("--out", type=OutputDir(), default=Path("run/experiment/traffic"))
@scale_options
@traffic_testbed_options
@click.option(
    "--duration",
    type=POSITIVE,
    default=None,
    help="measured seconds of PUT and of GET per run  [default: 60 on netns, 30 on saio]",
)
@click.option("--clients", type=click.IntRange(1, 1000), default=None, help="per stream")
@click.option("--force", is_flag=True, help="rerun runs that completed before")
@click.option("--report-only", is_flag=True, help="rebuild summary and report, run nothing")
def traffic(
    out: Path,
    scale_args: ScaleArgs,
    duration: float | None,
    clients: int | None,
    force: bool,
    report_only: bool,
    testbed: Any,
    repeats: int | None,
) -> None:
    from rich.console import Console

    from swift_dss.experiment.cluster import ExperimentError
    from swift_dss.experiment.tables import print_traffic
    from swift_dss.experiment.traffic import TrafficOptions
    from swift_dss.experiment.traffic import traffic as run_traffic

    # count_scale and concurrency do not apply: the streams are bounded by time and clients.
    a = scale_args
    base = DEFAULT if testbed.kind == "saio" else TESTBED_DEFAULT.dilated(testbed.dilation)
    scale = make_scale(base, 1.0, size_scale=a.size_scale, devices=a.devices, replicas=a.replicas)
    scale = replace(scale, workers=a.workers or scale.workers)
    opts = TrafficOptions()
    if testbed.kind == "netns":
        # K times slower hardware completes K times fewer requests in a phase: twice the
        # time keeps a few hundred per stream at the default K.
        opts = replace(opts, duration=TESTBED_TRAFFIC_DURATION)
    opts = replace(
        opts,
        duration=(duration or opts.duration) * a.factor,
        clients=clients or opts.clients,
        containers=a.containers or opts.containers,
    )
    console = Console(stderr=True)
    try:
        if repeats not in (None, 1):
            raise click.BadParameter("the traffic study runs each configuration once")
        summary = run_traffic(
            out,
            scale,
            opts,
            force=force,
            console=console,
            run_nothing=report_only,
            testbed=testbed,
        )
    except ExperimentError as err:
        raise click.ClickException(str(err)) from err
    except KeyboardInterrupt:
        raise click.ClickException("interrupted; completed runs are kept") from None
    print_traffic(summary, Console())
    click.echo(f"{out / 'summary.json'}\n{out / 'report.md'}")


@experiment.command(help="Caching runs side by side with the paper's figures (probes).")
@click.argument("runs", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option(
    "--label", "labels", multiple=True, help="a name per run, in order  [default: its directory's]"
)
@click.option("--out", type=OutputDir(), default=Path("run/experiment/compare"))
def compare(runs: tuple[Path, ...], labels: tuple[str, ...], out: Path) -> None:
    """RUNS are directories of `dss experiment caching` runs (each with its summary.json)."""
    from swift_dss.experiment import compare as cmp

    try:
        loaded = cmp.load(list(runs), list(labels) or None)
    except cmp.CompareError as err:
        raise click.BadParameter(str(err), param_hint="RUNS") from err
    click.echo("\n".join(cmp.markdown(loaded)))
    click.echo("\n".join(str(p) for p in cmp.write(loaded, out)))


@experiment.command(
    help="The Hou et al. parallelism x size sweep through an emulated client link, per "
    "client case (link rate and RTT): the study's Baseline and long-distance clients.",
    context_settings={"ignore_unknown_options": True},
)
@click.option("--out", type=OutputDir(), default=Path("run/experiment/sweep"))
@click.option(
    "--case",
    "cases",
    multiple=True,
    help="NAME:RATE:RTT_MS, repeatable  [default: baseline:1gbit:0.28 and long-distance:1gbit:176]",
)
@click.argument("sweep_args", nargs=-1, type=click.UNPROCESSED)
def sweep(out: Path, cases: tuple[str, ...], sweep_args: tuple[str, ...]) -> None:
    """SWEEP_ARGS go to `dss loadgen sweep` (e.g. --parallelism 1,8,64 --sizes 4KiB,4MiB)."""
    from rich.console import Console

    from swift_dss.experiment.cluster import ExperimentError
    from swift_dss.experiment.distance import CASES, check_sweep_args, parse_case, sweep_distance

    try:
        chosen = tuple(parse_case(c) for c in cases) or CASES
        names = [c.name for c in chosen]
        if len(set(names)) != len(names):
            raise ExperimentError(f"case names must differ: {', '.join(names)}")
        check_sweep_args(out, chosen, list(sweep_args))
        summary = sweep_distance(out, chosen, list(sweep_args), Console(stderr=True))
    except ExperimentError as err:
        raise click.ClickException(str(err)) from err
    except KeyboardInterrupt:
        raise click.ClickException("interrupted") from None
    for name, best in summary["best"].items():
        for op, b in best.items():
            best_cell = f"{b['size_label']} x {b['parallelism']}"
            click.echo(f"{name} {op}: best {best_cell}: {b['mbps']:.2f} MB/s")
    click.echo(f"{out / 'summary.json'}\n{out / 'report.md'}")


@experiment.command(
    help="The DSS paper's own evaluation on dss-tier: file server (+ find, tar, scan), "
    "e-mail server and a TPC-H-like database on SQLite (queries 2, 17, 18, 19), in HDD "
    "only, LRU, DSS and SSD only, device models on."
)
@click.option("--out", type=OutputDir(), default=Path("run/experiment/fs"))
@click.option(
    "--workloads",
    default="sfs,email,tpch",
    show_default=True,
    help="Comma-separated: sfs, email, tpch.",
)
@click.option("--configs", default="hdd,lru,dss,ssd", show_default=True, help="Comma-separated.")
@click.option(
    "--scale",
    type=POSITIVE,
    default=1.0,
    show_default=True,
    help="Multiplies each workload's default size: 1/500 of the paper's file server, "
    "1/1000 of its e-mail server (pools and transactions), TPC-H scale factor 0.2 (the "
    "paper's: 8).",
)
@click.option(
    "--cache-pct",
    type=click.FloatRange(0, 100, min_open=True),
    default=None,
    help="Cache size, percent of the data (a pool, the database's files) [default: the "
    "paper's: 10 for sfs and email, 27.6 (8 GB of 29 GB) for tpch].",
)
@click.option("--threads", type=click.IntRange(1, 256), default=8, show_default=True)
def fs(
    out: Path, workloads: str, configs: str, scale: float, cache_pct: float | None, threads: int
) -> None:
    from rich.console import Console

    from swift_dss.experiment.cluster import ExperimentError
    from swift_dss.experiment.fs import FsOptions, run_fs
    from swift_dss.experiment.fs_report import print_fs

    def names(text: str) -> tuple[str, ...]:
        return tuple(n.strip() for n in text.split(",") if n.strip())

    opts = FsOptions(
        workloads=names(workloads),
        configs=names(configs),
        scale=scale,
        cache_pct=cache_pct,
        threads=threads,
    )
    try:
        summary = run_fs(out, opts, Console(stderr=True))
    except ExperimentError as err:
        raise click.ClickException(str(err)) from err
    except KeyboardInterrupt:
        raise click.ClickException("interrupted") from None
    print_fs(summary, Console())
    click.echo(f"{out / 'summary.json'}\n{out / 'report.md'}")
