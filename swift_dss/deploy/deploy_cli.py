"""`dss deploy generate` and `dss deploy local-cluster up|down|status`."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from swift_dss.cli_types import PORT
from swift_dss.deploy.cli_common import add_down_and_status, dir_option, one_line_errors
from swift_dss.deploy.generate import generate as generate_tree
from swift_dss.deploy.inventory import InventoryError, load_inventory
from swift_dss.deploy.local_cluster import LocalCluster, LocalClusterConfig
from swift_dss.deploy.netns import NetnsError
from swift_dss.deploy.saio import TIER_MODES, SaioError
from swift_dss.testbed import congestion
from swift_dss.testbed.settings import TestbedSettings
from swift_dss.testbed.shaping import MIN_BURSTS

DEFAULT_DIR = Path("run/local-cluster")
F = TypeVar("F", bound=Callable[..., Any])
EXPECTED = (InventoryError, SaioError, NetnsError, OSError, ValueError)


def tier_mode_option(help: str) -> Callable[[F], F]:
    """--tier-mode of the local cluster's commands."""
    return click.option(
        "--tier-mode",
        type=click.Choice(["none", *TIER_MODES]),
        default="dss",
        show_default=True,
        help=help,
    )


@click.group()
def deploy() -> None:
    """Multi-node clusters: configs from an inventory, and a local cluster in namespaces."""


@deploy.command()
@click.argument("inventory", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    required=True,
    help="Directory for rings, nodes/NODE/... trees and manifest.json.",
)
@one_line_errors(*EXPECTED)
def generate(inventory: Path, out: Path) -> None:
    """Rings, every node's configs and systemd units from INVENTORY (YAML)."""
    inv = load_inventory(inventory)
    manifest = generate_tree(inv, out)
    for name, node in manifest["nodes"].items():
        click.echo(f"{node['role']:<8} {name:<16} {node['ip']:<16} {len(node['units'])} units")
    click.echo(f"rings and configs for {len(manifest['nodes'])} nodes in {out}")
    click.echo(f"copy each tree into place: rsync -a {out}/nodes/NODE/ root@NODE:/")


def describe(cluster: LocalCluster) -> str:
    st = cluster.status()
    tb = st["testbed"]
    where = "root namespace" if tb is None else f"netns {tb['proxy_namespace']}"
    lines = [
        f"Swift proxy:   {st['proxy']} ({where})",
        f"Auth (v1.0):   {st['auth']}  user {cluster.user}  key {cluster.key}",
        f"Bridge:        {st['bridge']['name']} {st['bridge']['address']}/24",
        f"Directory:     {st['dir']}",
        "Devices:       "
        + ("plain directories" if st["tier_mode"] == "none" else f"dss-tier {st['tier_mode']}"),
    ]
    if tb is not None:
        rates = ", ".join(f"{name} {link['rate']}" for name, link in tb["links"].items())
        scaled = "" if tb["rate_scale"] == 1 else f", byte rates x{tb['rate_scale']:g}"
        lines += [
            f"Testbed:       dilation K={tb['dilation']}{scaled}; client netns "
            f"{tb['client_namespace']} ({tb['client_ip']})",
            f"Links:         {rates} (as run: {'scaled and ' if scaled else ''}dilated, each way)",
            f"Workers:       proxy {tb['workers']['proxy']}, each storage server "
            f"{tb['workers']['servers']}; tier models {' / '.join(tb['tier_models'])}",
        ]
    lines.append("Storage nodes:")
    for name, node in st["nodes"].items():
        procs = [p for p in st["processes"].values() if p["node"] == name]
        alive = sum(p["alive"] for p in procs)
        tier = node.get("tier")
        tier_text = ""
        if tier is not None:
            state = "mounted" if tier["mounted"] else "NOT mounted"
            if tier["mounted"] and not tier["alive"]:
                state = "mounted, its DAEMON IS GONE"
            tier_text = f", dss-tier pid {tier['pid']} {state}"
        lines.append(
            f"  {name:<4} {node['ip']:<14} netns {node['namespace']:<16} "
            f"{alive}/{len(procs)} processes up{tier_text}"
        )
    return "\n".join(lines)


@deploy.group("local-cluster")
def local_cluster() -> None:
    """One proxy and N storage nodes, each in its own network namespace (198.18.0.0/24)."""


@local_cluster.command()
@dir_option(DEFAULT_DIR)
@click.option("--nodes", type=int, default=4, show_default=True, help="Storage nodes.")
@click.option("--replicas", type=int, default=3, show_default=True)
@click.option("--port", type=PORT, default=0, show_default=True, help="Proxy port; 0 = any.")
@tier_mode_option("dss-tier mode of every node's device; none: plain directories.")
@click.option(
    "--tier-cache-size", default="64MiB", show_default=True, help="Each node's SSD cache."
)
@click.option(
    "--testbed",
    is_flag=True,
    help="The paper's testbed: proxy and client in namespaces of their own, shaped links, "
    "dilated time, device models (docs/deployment.md).",
)
@click.option(
    "--dilation", type=int, help="[testbed] K, a whole number: rates / K, timeouts x K.  [1]"
)
@click.option("--client-rate", help="[testbed] The client's link, tc units.  [10gbit]")
@click.option("--proxy-rate", help="[testbed] The proxy's link.  [10gbit]")
@click.option("--storage-rate", help="[testbed] Each storage node's link.  [1gbit]")
@click.option("--proxy-workers", type=int, help="[testbed] Proxy workers (paper: 32).  [2]")
@click.option(
    "--server-workers", type=int, help="[testbed] Workers per storage server (paper: 8).  [1]"
)
@click.option("--ssd-model", help="[testbed] dss-tier SSD model.  [intel710]")
@click.option("--hdd-model", help="[testbed] dss-tier HDD model.  [st1000nm0011]")
@click.option(
    "--rate-scale",
    type=float,
    help="[testbed] Every link rate and device transfer rate times this, in (0, 1].  [1]",
)
@click.option(
    "--link-queue-ms",
    type=float,
    help="[testbed] Each link's queue, in emulated milliseconds (times K on the veths).  "
    f"[{TestbedSettings.link_queue_ms:g}]",
)
@click.option(
    "--link-burst",
    type=click.Choice(list(MIN_BURSTS)),
    help="[testbed] Each link's smallest tbf bucket: frames or gso (128 KiB).  [frames]",
)
@click.option(
    "--tcp-congestion",
    help="[testbed] Every node's TCP congestion control; '': the host's.  [cubic]",
)
@click.option(
    "--tcp-rto-min-ms",
    type=float,
    help="[testbed] TCP's minimum RTO, emulated ms (times K); 0: the kernel's.  [200]",
)
@click.option(
    "--conn-timeout",
    type=float,
    help="[testbed] Swift's conn_timeout, emulated seconds (times K).  "
    f"[{TestbedSettings.conn_timeout:g}, the paper's]",
)
@click.option(
    "--error-limit",
    type=int,
    help="[testbed] The proxy's error_suppression_limit.  [Swift's 10]",
)
@one_line_errors(*EXPECTED)
def up(
    dir_: Path,
    nodes: int,
    replicas: int,
    port: int,
    tier_mode: str,
    tier_cache_size: str,
    testbed: bool,
    **testbed_options: Any,
) -> None:
    """Start the cluster and return once the proxy answers; the servers keep running."""
    given = {k: v for k, v in testbed_options.items() if v is not None}
    if given and not testbed:
        flag = "--" + next(iter(given)).replace("_", "-")
        raise click.UsageError(f"{flag} is a testbed setting: add --testbed")
    try:
        congestion.check(given.get("tcp_congestion", TestbedSettings.tcp_congestion))
    except congestion.CongestionError as err:
        raise click.BadParameter(str(err), param_hint="--tcp-congestion") from None
    cfg = LocalClusterConfig(
        dir=dir_,
        nodes=nodes,
        replicas=replicas,
        port=port,
        tier_mode=tier_mode,
        tier_cache_size=tier_cache_size,
        testbed=TestbedSettings(**given) if testbed else None,
    )
    cluster = LocalCluster(cfg)
    cluster.up()
    click.echo(describe(cluster))
    click.echo(f"Stop it with:  dss deploy local-cluster down --dir {cluster.dir}")


add_down_and_status(
    local_cluster,
    LocalCluster,
    describe,
    DEFAULT_DIR,
    EXPECTED,
    down_help="Stop every process, unmount the devices, delete the namespaces and the bridge.",
    status_help="Show nodes, addresses and processes; exit status 1 unless everything runs.",
)
