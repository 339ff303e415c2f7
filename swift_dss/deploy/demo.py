"""`dss demo`: classes from client to object, shown with stock tools (swift CLI and curl)."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import click

from swift_dss.cli_types import PORT
from swift_dss.deploy.cli_common import dir_option, one_line_errors
from swift_dss.deploy.saio import Saio, SaioConfig, SaioError
from swift_dss.deploy.saio_cli import DEFAULT_DIR, describe

CONTAINER = "dss-demo"
OBJECT_CLASS = "25"
# Offsets and lengths in 512-byte sectors: the ranges must lie inside the object.
RANGE_CLASS = "0-64-25,1024-32-26"
RANGED_SIZE = 1100 * 512


def tool(name: str) -> str:
    """NAME from the venv (the stock swift CLI lives there), else from PATH."""
    local = Path(sys.executable).parent / name
    found = str(local) if local.exists() else shutil.which(name)
    if found is None:
        raise click.ClickException(f"{name} is not installed")
    return found


def run(cmd: list[str], *, shown: list[str] | None = None) -> str:
    """Print CMD (or SHOWN, a shorter spelling of it), run it, print and return its output."""
    click.secho(f"$ {shlex.join(shown or cmd)}", bold=True)
    # Everything is on loopback: a proxy from the environment would only get in the way.
    env = {**os.environ, "no_proxy": "127.0.0.1,localhost", "NO_PROXY": "127.0.0.1,localhost"}
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    output = (proc.stdout + proc.stderr).rstrip()
    if output:
        click.echo(output)
    if proc.returncode != 0:
        raise click.ClickException(f"{Path(cmd[0]).name} failed with exit status {proc.returncode}")
    return output


def ensure_cluster(dir_: Path, port: int) -> Saio:
    # A state file that cannot be read may still record running processes: refuse it
    # rather than start a second cluster over them.
    if (dir_ / Saio.state_file).exists():
        cluster = Saio.load(dir_)
        if cluster.is_up():
            click.echo(f"Using the cluster already running in {cluster.dir}.")
            return cluster
    click.echo(f"Starting an all-in-one cluster in {dir_.absolute()} ...")
    cluster = Saio(SaioConfig(dir=dir_, port=port))
    cluster.up()
    return cluster


def make_files(where: Path) -> tuple[Path, Path]:
    where.mkdir(parents=True, exist_ok=True)
    small, ranged = where / "small.txt", where / "ranged.bin"
    small.write_text("A small object with one class for all of its bytes.\n")
    ranged.write_bytes(os.urandom(RANGED_SIZE))
    return small, ranged


def show_dss_headers(output: str) -> None:
    lines = [
        line.strip() for line in output.splitlines() if line.strip().lower().startswith("x-dss-")
    ]
    click.secho("  classes read back: " + ("; ".join(lines) or "none"), fg="green")


@click.command()
@dir_option(DEFAULT_DIR, help=None)
@click.option("--port", type=PORT, default=8080, show_default=True, help="Proxy port if starting.")
def demo(dir_: Path, port: int) -> None:
    """Start the all-in-one cluster if needed, store two classified objects, read classes back."""
    with one_line_errors(SaioError):
        cluster = ensure_cluster(dir_, port)
        storage_url, token = cluster.get_token()
    click.echo(describe(cluster) + "\n")
    if not cluster.cfg.dss:
        click.secho("This cluster runs without dss: no classes will be kept.", fg="yellow")

    small, ranged = make_files(cluster.dir / "demo")
    swift = [tool("swift"), "-A", cluster.auth_url, "-U", cluster.user, "-K", cluster.key]
    swift_shown = ["swift", *swift[1:]]
    curl, auth = tool("curl"), ["-H", f"X-Auth-Token: {token}"]
    ranged_url = f"{storage_url}/{CONTAINER}/{ranged.name}"

    click.echo("\n1. Upload with the swift CLI, one class for the whole object:")
    upload = [
        "upload",
        "--object-name",
        small.name,
        "-H",
        f"X-DSS-Object-Class: {OBJECT_CLASS}",
        CONTAINER,
        str(small),
    ]
    run([*swift, *upload], shown=[*swift_shown, *upload])

    click.echo("\n2. Upload with curl, classes per range of 512-byte sectors:")
    put = [
        "-sS",
        "-f",
        "-o",
        "/dev/null",
        "-w",
        "%{http_code}\\n",
        "-X",
        "PUT",
        *auth,
        "-H",
        f"X-DSS-Range-Class: {RANGE_CLASS}",
        "-T",
        str(ranged),
        ranged_url,
    ]
    run([curl, *put], shown=["curl", *put])

    click.echo("\n3. Read the classes back:")
    stat = ["stat", CONTAINER, small.name]
    show_dss_headers(run([*swift, *stat], shown=[*swift_shown, *stat]))
    head = ["-sS", "-f", "-I", *auth, ranged_url]
    show_dss_headers(run([curl, *head], shown=["curl", *head]))

    click.echo(f"\nThe cluster is still running. Stop it with: dss saio down --dir {cluster.dir}")
