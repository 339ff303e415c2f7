"""`dss saio up|down|status`: the all-in-one cluster from the command line."""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import wraps
from pathlib import Path
from typing import Any, TypeVar

import click
from swift_dss.deploy.saio import TIER_MODES, Saio, SaioConfig, SaioError

DEFAULT_DIR = Path("run/saio")

F = TypeVar("F", bound=Callable[..., Any])

dir_option = click.option(
    "--dir",
    "dir_",
    type=click.Path(file_okay=False, path_type=Path),
    default=DEFAULT_DIR,
    show_default=True,
    help="Directory holding the cluster's configs, rings, logs and devices.",
)


def one_line_errors(func: F) -> F:
    """Expected failures end the command with a one-line message and exit status 1."""

    @wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except (SaioError, OSError) as err:
            raise click.ClickException(str(err)) from None

    return wrapper  # type: ignore[return-value]


def describe(cluster: Saio) -> str:
    status = cluster.status()
    lines = [
        f"Swift proxy:   {cluster.proxy_url}",
        f"Auth (v1.0):   {cluster.auth_url}  user {cluster.user}  key {cluster.key}",
        f"Account URL:   {cluster.account_url}",
        f"S3 endpoint:   {cluster.proxy_url}  access key {cluster.s3_access_key}  "
        f"secret {cluster.s3_secret_key}  region us-east-1 (path-style)",
        f"dss pipeline:  {'on' if status['dss'] else 'off (stock Swift)'}; "
        f"tier mode {status['tier_mode']}",
        f"Directory:     {cluster.dir} (logs in {cluster.dir / 'log'})",
        "Processes:",
    ]
    for name, proc in status["processes"].items():
        state = "running" if proc["alive"] else "DEAD"
        lines.append(f"  {name:<17} pid {proc['pid']:<8} {state}")
    return "\n".join(lines)


@click.group()
def saio() -> None:
    """An all-in-one Swift cluster on 127.0.0.1 (memcached, account, container, object, proxy)."""


@saio.command()
@dir_option
@click.option("--port", type=int, default=8080, show_default=True, help="Proxy port; 0 = any.")
@click.option(
    "--tier-mode",
    type=click.Choice(["none", *TIER_MODES]),
    default="none",
    show_default=True,
    help="Devices: none = directories on a tmpfs; otherwise dss-tier mounts in that mode.",
)
@click.option("--no-dss", is_flag=True, help="Stock Swift pipeline and object server.")
@click.option("--devices", type=int, default=1, show_default=True)
@click.option("--replicas", type=int, default=1, show_default=True)
@click.option("--workers", type=int, default=1, show_default=True)
@one_line_errors
def up(
    dir_: Path, port: int, tier_mode: str, no_dss: bool, devices: int, replicas: int, workers: int
) -> None:
    """Start the cluster and return once it answers; the servers keep running."""
    cfg = SaioConfig(
        dir=dir_,
        port=port,
        dss=not no_dss,
        tier_mode=tier_mode,
        devices=devices,
        replicas=replicas,
        workers=workers,
    )
    cluster = Saio(cfg)
    cluster.up()
    click.echo(describe(cluster))
    click.echo(f"Stop it with:  dss saio down --dir {cluster.dir}")


@saio.command()
@dir_option
@one_line_errors
def down(dir_: Path) -> None:
    """Stop every process of the cluster and unmount its devices."""
    Saio.load(dir_).down()
    click.echo(f"stopped the cluster in {dir_.absolute()}")


@saio.command()
@dir_option
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@one_line_errors
def status(dir_: Path, as_json: bool) -> None:
    """Show the cluster's processes, ports and URLs; exit status 1 unless it is fully up."""
    cluster = Saio.load(dir_)
    info = cluster.status()
    click.echo(json.dumps(info, indent=2) if as_json else describe(cluster))
    if not info["up"]:
        raise click.ClickException(f"the cluster in {cluster.dir} is not (fully) running")
