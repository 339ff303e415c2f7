"""`dss saio up|down|status`: the all-in-one cluster from the command line."""

from __future__ import annotations

from pathlib import Path

import click

from swift_dss.cli_types import PORT
from swift_dss.deploy.cli_common import add_down_and_status, dir_option, one_line_errors
from swift_dss.deploy.saio import (
    DEFAULT_CACHE_SIZE,
    TIER_MODES,
    Saio,
    SaioConfig,
    SaioError,
    device_serves,
)

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
    lines.append("Devices:")
    for name, dev in status["devices"].items():
        tier = dev["tier"]
        state = "mounted" if dev["mounted"] else "NOT MOUNTED"
        if dev["mounted"] and not device_serves(dev):
            state = "mounted, its DAEMON DOES NOT ANSWER (dss saio down, then up)"
        if tier is None:
            lines.append(f"  {name:<17} directory on a tmpfs  {state}")
        else:
            pid = tier["pid"] if tier["pid"] is not None else "-"
            lines.append(f"  {name:<17} dss-tier mode {tier['mode']}  pid {pid}  {state}")
    return "\n".join(lines)


@click.group()
def saio() -> None:
    """An all-in-one Swift cluster on 127.0.0.1 (memcached, account, container, object, proxy)."""


@saio.command()
@dir_option(DEFAULT_DIR)
@click.option("--port", type=PORT, default=8080, show_default=True, help="Proxy port; 0 = any.")
@click.option(
    "--tier-mode",
    type=click.Choice([*TIER_MODES, "none"]),
    default="dss",
    show_default=True,
    help="Devices: dss-tier mounts in this mode, on emulated SSD and HDD directories; "
    "none = plain directories on a tmpfs.",
)
@click.option(
    "--cache-size",
    default=None,
    help=f"SSD cache per device [default: {DEFAULT_CACHE_SIZE}; mode ssd: the devices' "
    "whole tmpfs].",
)
@click.option(
    "--policy",
    default="reference",
    show_default=True,
    help="Tier policy: a name in swift_dss/policies/ or a file.",
)
@click.option(
    "--ssd-model",
    default="none",
    show_default=True,
    help="SSD model: none, intel710, ssd (optionally :key=value,...).",
)
@click.option(
    "--hdd-model",
    default="none",
    show_default=True,
    help="HDD model: none, st1000nm0011, hdd (optionally :key=value,...).",
)
@click.option("--no-dss", is_flag=True, help="Stock Swift pipeline and object server.")
# The experiments' bounds: more would only exhaust this host's memory as the servers start.
@click.option("--devices", type=click.IntRange(1, 64), default=1, show_default=True)
@click.option("--replicas", type=click.IntRange(1, 8), default=1, show_default=True)
@click.option("--workers", type=click.IntRange(0, 64), default=1, show_default=True)
@one_line_errors(*EXPECTED)
def up(
    dir_: Path,
    port: int,
    tier_mode: str,
    cache_size: str | None,
    policy: str,
    ssd_model: str,
    hdd_model: str,
    no_dss: bool,
    devices: int,
    replicas: int,
    workers: int,
) -> None:
    """Start the cluster and return once it answers; the servers keep running."""
    cfg = SaioConfig(
        dir=dir_,
        port=port,
        dss=not no_dss,
        tier_mode=tier_mode,
        tier_cache_size=cache_size or DEFAULT_CACHE_SIZE,
        tier_policy=policy,
        tier_ssd_model=ssd_model,
        tier_hdd_model=hdd_model,
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
    down_help="Stop every process of the cluster, unmount its devices (a tier mount once it "
    "has written everything back) and remove their tmpfs.",
    status_help="Show the cluster's processes, devices (tier mode and daemon pid), ports and "
    "URLs; "
    "exit status 1 unless it is fully up.",
)
