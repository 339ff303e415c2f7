"""The ``dss`` command: one entry point, each command group in the module that owns it.

Groups load on first use, so ``dss classfile`` does not import Swift and a broken optional
part cannot stop the rest of the CLI from starting.
"""

from __future__ import annotations

import importlib

import click

#: command name -> "module:attribute" of a click command or group.
COMMANDS = {
    "saio": "swift_dss.deploy.saio_cli:saio",
    "demo": "swift_dss.deploy.demo:demo",
    "upload": "swift_dss.client.cli:upload",
    "download": "swift_dss.client.cli:download",
    "classify": "swift_dss.client.cli:classify",
    "reclassify": "swift_dss.client.cli:reclassify",
    "classes": "swift_dss.client.cli:classes",
    "classfile": "swift_dss.client.cli:classfile",
    "bench": "swift_dss.bench.cli:bench",
    "loadgen": "swift_dss.loadgen.cli:loadgen",
    "deploy": "swift_dss.deploy.deploy_cli:deploy",
    "reliability": "swift_dss.reliability.cli:reliability",
    "experiment": "swift_dss.experiment.cli:experiment",
}


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = COMMANDS.get(cmd_name)
        if target is None:
            return None
        module, attr = target.split(":")
        return getattr(importlib.import_module(module), attr)


@click.group(cls=LazyGroup)
@click.version_option(package_name="swift_dss")
def main() -> None:
    """Client-aware object storage on OpenStack Swift."""
