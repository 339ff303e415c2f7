"""What the cluster commands (`dss saio`, `dss deploy local-cluster`, `dss demo`) share: the
--dir option, how an expected failure ends a command, and the `down` and `status` commands."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import click

from swift_dss.deploy.process_cluster import ProcessCluster

F = TypeVar("F", bound=Callable[..., Any])
C = TypeVar("C", bound=ProcessCluster)

DIR_HELP = "Directory holding the cluster's configs, rings, logs and devices."


def dir_option(default: Path, help: str | None = DIR_HELP) -> Callable[[F], F]:
    return click.option(
        "--dir",
        "dir_",
        type=click.Path(file_okay=False, path_type=Path),
        default=default,
        show_default=True,
        help=help,
    )


@contextlib.contextmanager
def one_line_errors(*expected: type[Exception]) -> Iterator[None]:
    """EXPECTED failures end the command with a one-line message and exit status 1.

    Works as a decorator of a command as well as around part of one.
    """
    try:
        yield
    except expected as err:
        raise click.ClickException(str(err)) from None


def add_down_and_status(
    group: click.Group,
    cluster_type: type[C],
    describe: Callable[[C], str],
    default_dir: Path,
    expected: tuple[type[Exception], ...],
    down_help: str,
    status_help: str,
) -> None:
    """Add to GROUP the `down` and `status` commands of the clusters of CLUSTER_TYPE."""

    @group.command(help=down_help)
    @dir_option(default_dir)
    @one_line_errors(*expected)
    def down(dir_: Path) -> None:
        cluster_type.load(dir_).down()
        click.echo(f"stopped the {cluster_type.kind} in {dir_.absolute()}")

    @group.command(help=status_help)
    @dir_option(default_dir)
    @click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
    @one_line_errors(*expected)
    def status(dir_: Path, as_json: bool) -> None:
        cluster = cluster_type.load(dir_)
        info = cluster.status()
        click.echo(json.dumps(info, indent=2) if as_json else describe(cluster))
        if not info["up"]:
            raise click.ClickException(
                f"the {cluster.kind} in {cluster.dir} is not (fully) running"
            )
