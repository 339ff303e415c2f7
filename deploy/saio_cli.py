"""`dss saio up|down|status`: the all-in-one cluster from the command line."""

from __future__ import annotations

from pathlib import Path

import click
from swift_dss.deploy.cli_common import add_down_and_status, dir_option, one_line_errors
from swift_dss.deploy.saio import TIER_MODES, Saio, SaioConfig, SaioError

DEFAULT_DIR = Path("run/saio")
EXPECTED = (SaioError, OSError)


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
@dir_option(DEFAULT_DIR)
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
@one_line_errors(*EXPECTED)
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


add_down_and_status(
    saio,
    Saio,
    describe,
    DEFAULT_DIR,
    EXPECTED,
    down_help="Stop every process of the cluster and unmount its devices.",
    status_help="Show the cluster's processes, ports and URLs; "
    "exit status 1 unless it is fully up.",
)
