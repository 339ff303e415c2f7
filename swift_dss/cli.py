"""The ``dss`` command: one entry point, each command group in the module that owns it.

Groups load on first use, so ``dss classfile`` does not import Swift and a broken optional
part cannot stop the rest of the CLI from starting. The base install (what a Swift node
needs) carries only Swift and click; a command whose dependency lives in an extra says
which extra to install, in one line, and exits 1.
"""

from __future__ import annotations

import errno
import importlib
from typing import Any, NoReturn

import click

from swift_dss.children import sigterm_as_interrupt

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

#: The extras nest (lab holds loadgen, loadgen holds client): a later one installs more.
EXTRAS = ("client", "loadgen", "lab")

#: command -> the extra with everything it needs (none: the base install suffices).
COMMAND_EXTRA = {
    "demo": "client",
    "upload": "client",
    "download": "client",
    "classify": "client",
    "reclassify": "client",
    "classes": "client",
    "classfile": "client",
    "deploy": "client",
    "loadgen": "loadgen",
    "bench": "lab",
    "reliability": "lab",
    "experiment": "lab",
}

#: top-level module of each optional dependency -> the smallest extra that installs it
#: (pyproject.toml's [project.optional-dependencies]).
EXTRA_OF = {
    "swiftclient": "client",
    "boto3": "client",
    "botocore": "client",
    "yaml": "client",
    "pycurl": "loadgen",
    "hdrh": "loadgen",
    "locust": "loadgen",
    "gevent": "loadgen",
    "rich": "loadgen",
    "psutil": "loadgen",
    "matplotlib": "lab",
    "numpy": "lab",
}


def missing_extra(command: str, error: ModuleNotFoundError) -> str | None:
    """The extra that gives COMMAND the module ERROR names and all else it needs, None when
    no extra provides that module (a broken install, not a missing extra)."""
    extra = EXTRA_OF.get((error.name or "").partition(".")[0])
    if extra is None:
        return None
    return max(extra, COMMAND_EXTRA.get(command, extra), key=EXTRAS.index)


def extra_message(command: str, module: str, extra: str) -> str:
    return (
        f"dss {command} needs the '{extra}' extra ({module} is not installed): "
        f"pip install 'swift_dss[{extra}]'"
    )


def _unavailable(name: str, module: str, extra: str) -> click.Command:
    """A stand-in for a command whose module cannot be imported: listed by ``dss --help``,
    and whatever its arguments, it fails with the message naming the extra."""

    def fail(**_: Any) -> NoReturn:
        raise click.ClickException(extra_message(name, module, extra))

    return click.Command(
        name,
        callback=fail,
        short_help=f"(needs the '{extra}' extra)",
        add_help_option=False,
        context_settings={"ignore_unknown_options": True, "allow_extra_args": True},
    )


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = COMMANDS.get(cmd_name)
        if target is None:
            return None
        module, attr = target.split(":")
        try:
            return getattr(importlib.import_module(module), attr)
        except ModuleNotFoundError as e:
            extra = missing_extra(cmd_name, e)
            if extra is None:
                raise
            return _unavailable(cmd_name, str(e.name), extra)

    def invoke(self, ctx: click.Context) -> Any:
        # Commands import some dependencies only when they run (plots, the libcurl driver).
        try:
            with sigterm_as_interrupt():
                return super().invoke(ctx)
        except ModuleNotFoundError as e:
            command = ctx.invoked_subcommand or ""
            extra = missing_extra(command, e)
            if extra is None:
                raise
            raise click.ClickException(extra_message(command, str(e.name), extra)) from None
        except OSError as e:
            # A full disk under the output is the user's to mend, not a fault to trace.
            # (A reader that has gone, EPIPE, click ends quietly with status 1.)
            if e.errno not in (errno.ENOSPC, errno.EDQUOT):
                raise
            raise click.ClickException(f"{e.filename or 'output'}: {e.strerror}") from None


@click.group(cls=LazyGroup)
@click.version_option(package_name="swift_dss")
def main() -> None:
    """Client-aware object storage on OpenStack Swift."""
