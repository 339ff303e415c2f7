"""``dss loadgen``: run a workload, sweep parallelism x size, emulate a client cache."""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import click

from swift_dss.cli_types import CONTAINER, POSITIVE, OutputDir
from swift_dss.client.auth import SwiftAuth, auth_options
from swift_dss.loadgen.protocols import DEFAULT_KEY, DEFAULT_USER, Credentials

if TYPE_CHECKING:
    from swift_dss.loadgen.sweep import SweepConfig

DEFAULT_ENDPOINT = "http://127.0.0.1:8080"
#: Swift, the cluster's own API: it needs no s3api in the proxy pipeline and takes every
#: login the swift CLI does (tempauth, Keystone, a token), as the dss client commands do.
DEFAULT_PROTOCOL = "swift"


@dataclass(frozen=True)
class Target:
    """Where a command sends its requests, from the shared endpoint options."""

    endpoint: str
    protocol: str
    creds: Credentials


def _endpoint(text: str | None, protocol: str) -> str:
    """The endpoint given, else (S3) AWS_ENDPOINT_URL, else the all-in-one's proxy."""
    if text is None and protocol == "s3":
        text = os.environ.get("AWS_ENDPOINT_URL") or None
    url = DEFAULT_ENDPOINT if text is None else text
    try:
        parts = urlsplit(url)
        # urlsplit takes any port; reading it checks it is a number in range.
        _ = parts.port
    except ValueError as err:
        raise click.BadParameter(
            f"{url!r} is not an http(s)://HOST[:PORT] URL ({err})", param_hint="'--endpoint'"
        ) from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise click.BadParameter(
            f"{url!r} is not an http(s)://HOST[:PORT] URL", param_hint="'--endpoint'"
        )
    return url


def target(
    endpoint: str | None,
    protocol: str,
    auth: SwiftAuth,
    access_key: str,
    secret_key: str,
    region: str,
) -> Target:
    """The target of a command; the Swift options are checked here, before any request."""
    from swift_dss.client.auth import AuthOptionError, process

    url = _endpoint(endpoint, protocol)
    if protocol == "s3":
        return Target(url, protocol, Credentials(access_key, secret_key, region))
    try:
        process(auth, url.rstrip("/") + "/auth/v1.0")
    except AuthOptionError as err:
        raise click.UsageError(str(err)) from None
    return Target(url, protocol, Credentials(swift=auth))


max_failures_option = click.option(
    "--max-failures",
    type=click.IntRange(0),
    default=0,
    show_default=True,
    help="failed requests tolerated before the exit status says the run failed",
)


def fail_over(failed: int, total: int, max_failures: int, what: str = "requests") -> None:
    """Exit non-zero (after the results are written) when more requests failed than allowed."""
    if failed > max_failures:
        raise click.ClickException(
            f"{failed} of {total} {what} failed (--max-failures {max_failures})"
        )


def endpoint_options(f: Callable) -> Callable:
    """The endpoint and credential options, handed to the command as one ``target``.

    Swift takes the options of the swift CLI (-A/-U/-K/-V, --os-*, ST_*/OS_* variables);
    S3 its access key, secret key and region (AWS_* variables).
    """

    # functools.wraps shares f's __click_params__, so options declared below this
    # decorator stay attached to the wrapper click sees.
    @functools.wraps(f)
    def with_target(
        *args: object,
        endpoint: str | None,
        protocol: str,
        auth: SwiftAuth,
        access_key: str,
        secret_key: str,
        region: str,
        **kwargs: object,
    ) -> object:
        t = target(endpoint, protocol, auth, access_key, secret_key, region)
        return f(*args, target=t, **kwargs)

    wrapped = auth_options(with_target)
    for opt in reversed(
        [
            click.option(
                "--endpoint",
                default=None,
                help=f"proxy URL (S3: default AWS_ENDPOINT_URL; else {DEFAULT_ENDPOINT})",
            ),
            click.option(
                "--protocol",
                type=click.Choice(["swift", "s3"]),
                default=DEFAULT_PROTOCOL,
                envvar="DSS_PROTOCOL",
                show_default=True,
                show_envvar=True,
            ),
            click.option(
                "--access-key",
                envvar="AWS_ACCESS_KEY_ID",
                default=DEFAULT_USER,
                show_default=True,
                show_envvar=True,
                help="S3 access key",
            ),
            click.option(
                "--secret-key",
                envvar="AWS_SECRET_ACCESS_KEY",
                default=DEFAULT_KEY,
                show_envvar=True,
                help="S3 secret key [default: the all-in-one's]",
            ),
            click.option(
                "--region",
                envvar=["AWS_REGION", "AWS_DEFAULT_REGION"],
                default="us-east-1",
                show_default=True,
                show_envvar=True,
                help="S3 signing region",
            ),
        ]
    ):
        wrapped = opt(wrapped)
    return wrapped


@click.group(help="Load generation with data classes (docs/loadgen.md).")
def loadgen() -> None:
    pass


@loadgen.command(help="Run WORKLOAD (a YAML file or a shipped name: paper, specsfs, email).")
@click.argument("workload")
@endpoint_options
@click.option("--scale", type=POSITIVE, default=None, help="multiply every object size")
@click.option("--count-scale", type=POSITIVE, default=None, help="multiply every phase's count")
@click.option("--duration-scale", type=POSITIVE, default=None, help="multiply every duration")
@click.option("--seed", type=int, default=None)
@click.option("--concurrency", type=click.IntRange(1, 100_000), default=None)
@click.option("--processes", type=click.IntRange(1, 1024), default=None)
@click.option("--containers", type=click.IntRange(1, 100_000), default=None)
@click.option("--timeout", type=POSITIVE, default=None,
              help="seconds a request may move no byte before it fails")  # fmt: skip
@click.option("--verify", is_flag=True, help="check every GET body against what was PUT")
@click.option("--no-plots", is_flag=True)
@click.option("--quiet", is_flag=True, help="no progress display")
@max_failures_option
@click.option("--out", type=OutputDir(), required=True)
def run(
    workload: str,
    target: Target,
    scale: float | None,
    count_scale: float | None,
    duration_scale: float | None,
    seed: int | None,
    concurrency: int | None,
    processes: int | None,
    containers: int | None,
    timeout: float | None,
    verify: bool,
    no_plots: bool,
    quiet: bool,
    max_failures: int,
    out: Path,
) -> None:
    from rich.console import Console

    from swift_dss.loadgen import report, runner
    from swift_dss.loadgen.progress import RunProgress
    from swift_dss.loadgen.workload import WorkloadError, load

    try:
        w = load(workload).with_options(
            scale=scale,
            count_scale=count_scale,
            seed=seed,
            concurrency=concurrency,
            processes=processes,
            containers=containers,
            timeout=timeout,
            duration_scale=duration_scale,
        )
    except WorkloadError as err:
        raise click.ClickException(str(err)) from err
    console = Console(stderr=True)
    started = time.time()
    try:
        if quiet:
            result = runner.run(w, target.endpoint, target.protocol, target.creds, verify)
        else:
            with RunProgress(w, console) as progress:
                result = runner.run(
                    w, target.endpoint, target.protocol, target.creds, verify, progress
                )
    except (OSError, RuntimeError) as err:
        raise click.ClickException(str(err)) from err
    doc = runner.document(w, target.endpoint, target.protocol, result, started)
    path = report.write_run(out, doc, result.recorder, plots=not no_plots)
    print_rows(console, doc["rows"])
    for warning in result.warnings:
        console.print(f"[yellow]warning:[/] {warning}")
    click.echo(f"results in {path}")
    fail_over(*runner.failures(doc["rows"]), max_failures)


def print_rows(console: object, rows: list[dict]) -> None:
    from rich.table import Table

    table = Table("phase", "op", "type", "class", "ops", "fail", "ops/s", "MB/s", "mean ms",
                  "p50", "p99")  # fmt: skip
    for r in rows:
        table.add_row(
            r["phase"], r["op"], str(r["type"] or "*"), str("*" if r["class"] is None and
            r["type"] is None else r["class"]), str(r["ops"]), str(r["failures"]),
            f"{r['ops_per_s']:.1f}", f"{r['mbps']:.2f}", _ms(r["lat_mean_ms"]),
            _ms(r["lat_p50_ms"]), _ms(r["lat_p99_ms"]),
        )  # fmt: skip
    console.print(table)  # type: ignore[attr-defined]


def _ms(v: float | None) -> str:
    return "-" if v is None else f"{v:.1f}"


@loadgen.command(name="workloads", help="List the shipped workloads.")
def workloads() -> None:
    from swift_dss.loadgen.workload import load, shipped

    for name, path in sorted(shipped().items()):
        w = load(path)
        click.echo(f"{name:10} {len(w.types)} types, phases: {', '.join(p.name for p in w.phases)}")


@loadgen.command(name="sweep", help="Parallelism x object size x PUT/GET (Hou et al.).")
@endpoint_options
@click.option("--parallelism", default="1,2,4,8,16,32,64", show_default=True)
@click.option("--sizes", default="1KiB,4KiB,16KiB,64KiB,256KiB,1MiB,4MiB,16MiB", show_default=True)
@click.option("--ops", default="put,get", show_default=True)
@click.option("--repetitions", type=click.IntRange(1, 100), default=3, show_default=True)
@click.option("--warmup", type=click.IntRange(0, 1000), default=1, show_default=True,
              help="unrecorded requests per connection first")  # fmt: skip
@click.option("--budget", default="64MiB", show_default=True, help="bytes per measured run")
@click.option("--max-requests", type=click.IntRange(1), default=2000, show_default=True)
@click.option("--time-cap", type=POSITIVE, default=10.0, show_default=True,
              help="seconds per measured run")  # fmt: skip
@click.option("--timeout", type=POSITIVE, default=120.0, show_default=True,
              help="seconds a request may move no byte before it fails")  # fmt: skip
@click.option("--class", "cls", type=click.IntRange(0, 255), default=None,
              help="class sent with every PUT")  # fmt: skip
@click.option("--container", type=CONTAINER, default="dss-sweep", show_default=True)
@click.option("--keep", is_flag=True, help="leave the objects in place")
@max_failures_option
@click.option("--out", type=OutputDir(), required=True)
def sweep_cmd(target: Target, max_failures: int, out: Path, **options: Any) -> None:
    from rich.console import Console

    from swift_dss.loadgen.sweep import sweep, table

    console = Console(stderr=True)
    cfg = sweep_config(**options)
    try:
        doc = sweep(target.endpoint, target.protocol, target.creds, cfg, out,
                    progress=lambda m: console.log(m))  # fmt: skip
    except (OSError, RuntimeError) as err:
        raise click.ClickException(str(err)) from err
    for op in cfg.ops:
        click.echo(table(doc["rows"], op))
        b = doc["best"][op]
        click.echo(f"best {op}: {b['size_label']} x {b['parallelism']}: {b['mbps']:.2f} MB/s\n")
    click.echo(f"results in {out / 'results.json'}")
    failed = sum(r["failures"] for r in doc["rows"])
    total = sum(r["requests"] for r in doc["rows"])
    fail_over(failed, total, max_failures, "measured requests")


def sweep_config(
    parallelism: str,
    sizes: str,
    ops: str,
    repetitions: int,
    warmup: int,
    budget: str,
    max_requests: int,
    time_cap: float,
    timeout: float,
    cls: int | None,
    container: str,
    keep: bool,
    **_others: object,
) -> SweepConfig:
    """The sweep the options describe (the others, where to send it, are not its own)."""
    from swift_dss.loadgen.sweep import SweepConfig, parse_list, whole_number
    from swift_dss.sizes import parse_size

    try:
        return SweepConfig(
            parallelism=parse_list(parallelism, whole_number),
            sizes=parse_list(sizes, parse_size),
            ops=parse_list(ops, str.lower),
            repetitions=repetitions,
            warmup=warmup,
            budget=parse_size(budget),
            max_requests=max_requests,
            time_cap=time_cap,
            timeout=timeout,
            container=container,
            cls=cls,
            cleanup=not keep,
        )
    except ValueError as err:
        raise click.ClickException(str(err)) from err


def check_sweep_args(args: list[str], fixed: list[str]) -> None:
    """Parse `dss loadgen sweep FIXED ARGS` and build its sweep without running it, so that
    a caller that runs it later (and more than once) refuses bad ARGS before anything
    starts. FIXED: the options the caller sets on each run (--out DIR, ...), which ARGS
    may not set. Raises click.ClickException."""
    flags = [f for f in fixed if f.startswith("--")]
    if clash := [a for a in args if a.partition("=")[0] in flags]:
        raise click.UsageError(f"{', '.join(clash)}: each run sets its own")
    with sweep_cmd.make_context("dss loadgen sweep", [*fixed, *args]) as ctx:
        sweep_config(**ctx.params)


@loadgen.command(name="locustfile", help="Print the path of the workload-driven locustfile.")
def locustfile() -> None:
    click.echo(Path(__file__).with_name("locustfile.py"))


@loadgen.command(name="cache-study", help="Client chunk cache with prefetching over a trace.")
@endpoint_options
@click.option("--chunk-sizes", default="64KiB,1MiB,4MiB", show_default=True)
@click.option("--cache", "cache_size", default="8MiB", show_default=True)
@click.option("--max-window", type=click.IntRange(1, 1024), default=8, show_default=True)
@click.option("--parallelism", type=click.IntRange(1, 1024), default=16, show_default=True)
@click.option("--trace", type=click.Path(exists=True, path_type=Path), default=None,
              help="CSV op,file,offset,length (default: a synthetic trace)")  # fmt: skip
@click.option("--files", type=click.IntRange(1), default=12, show_default=True)
@click.option("--accesses", type=click.IntRange(1), default=400, show_default=True)
@click.option("--max-file-size", default="8MiB", show_default=True)
@click.option("--seed", type=int, default=1, show_default=True)
@click.option("--out", type=OutputDir(), required=True)
def cache_study_cmd(
    target: Target,
    chunk_sizes: str,
    cache_size: str,
    max_window: int,
    parallelism: int,
    trace: Path | None,
    files: int,
    accesses: int,
    max_file_size: str,
    seed: int,
    out: Path,
) -> None:
    from rich.console import Console

    from swift_dss.loadgen.cache_study import StudyConfig, read_trace, study, synthetic_trace
    from swift_dss.loadgen.protocols import connect
    from swift_dss.loadgen.sweep import parse_list
    from swift_dss.sizes import parse_size

    console = Console(stderr=True)
    try:
        cfg = StudyConfig(chunk_sizes=parse_list(chunk_sizes, parse_size),
                          cache_bytes=parse_size(cache_size), max_window=max_window,
                          parallelism=parallelism, seed=seed)  # fmt: skip
        if trace is not None:
            sizes, accesses_list = read_trace(trace)
        else:
            sizes, accesses_list = synthetic_trace(
                files, accesses, max_size=parse_size(max_file_size), seed=seed
            )
        proto = connect(target.endpoint, target.protocol, target.creds)
        doc = study(proto, cfg, sizes, accesses_list, out, progress=lambda m: console.log(m))
    except (OSError, RuntimeError, ValueError) as err:
        raise click.ClickException(str(err)) from err
    for r in doc["rows"]:
        click.echo(
            f"{r['chunk_label']:>8} prefetch={r['prefetch']!s:5} read {r['read_lat_mean_ms']} ms "
            f"(hit {r['read_hit_ratio']}), write {r['write_lat_mean_ms']} ms "
            f"(hit {r['write_hit_ratio']}), fetched {r['mb_fetched']} MB"
        )
    click.echo(f"results in {out / 'results.json'}")
