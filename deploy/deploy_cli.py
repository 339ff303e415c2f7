"""`dss deploy generate` and `dss deploy local-cluster up|down|status`."""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import wraps
from pathlib import Path
from typing import Any, TypeVar

import click
from swift_dss.deploy.generate import generate as generate_tree
from swift_dss.deploy.inventory import InventoryError, load_inventory
from swift_dss.deploy.local_cluster import LocalCluster, LocalClusterConfig
from swift_dss.deploy.netns import NetnsError
from swift_dss.deploy.saio import SaioError

DEFAULT_DIR = Path("run/local-cluster")

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
    @wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except (InventoryError, SaioError, NetnsError, OSError, ValueError) as err:
            raise click.ClickException(str(err)) from None

    return wrapper  # type: ignore[return-value]


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
@one_line_errors
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
    lines = [
        f"Swift proxy:   {st['proxy']} (root namespace)",
        f"Auth (v1.0):   {st['auth']}  user {cluster.user}  key {cluster.key}",
        f"Bridge:        {st['bridge']['name']} {st['bridge']['address']}/24",
        f"Directory:     {st['dir']}",
        "Storage nodes:",
    ]
    for name, node in st["nodes"].items():
        procs = [p for p in st["processes"].values() if p["node"] == name]
        alive = sum(p["alive"] for p in procs)
        lines.append(
            f"  {name:<4} {node['ip']:<14} netns {node['namespace']:<16} "
            f"{alive}/{len(procs)} processes up"
        )
    return "\n".join(lines)


@deploy.group("local-cluster")
def local_cluster() -> None:
    """One proxy and N storage nodes, each in its own network namespace (198.18.0.0/24)."""


@local_cluster.command()
@dir_option
@click.option("--nodes", type=int, default=4, show_default=True, help="Storage nodes.")
@click.option("--replicas", type=int, default=3, show_default=True)
@click.option("--port", type=int, default=0, show_default=True, help="Proxy port; 0 = any.")
@one_line_errors
def up(dir_: Path, nodes: int, replicas: int, port: int) -> None:
    """Start the cluster and return once the proxy answers; the servers keep running."""
    cluster = LocalCluster(LocalClusterConfig(dir=dir_, nodes=nodes, replicas=replicas, port=port))
    cluster.up()
    click.echo(describe(cluster))
    click.echo(f"Stop it with:  dss deploy local-cluster down --dir {cluster.dir}")


@local_cluster.command()
@dir_option
@one_line_errors
def down(dir_: Path) -> None:
    """Stop every process, unmount the devices, delete the namespaces and the bridge."""
    LocalCluster.load(dir_).down()
    click.echo(f"stopped the local cluster in {dir_.absolute()}")


@local_cluster.command()
@dir_option
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@one_line_errors
def status(dir_: Path, as_json: bool) -> None:
    """Show nodes, addresses and processes; exit status 1 unless everything runs."""
    cluster = LocalCluster.load(dir_)
    info = cluster.status()
    click.echo(json.dumps(info, indent=2) if as_json else describe(cluster))
    if not info["up"]:
        raise click.ClickException(f"the local cluster in {cluster.dir} is not (fully) running")
