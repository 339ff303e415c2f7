"""The click parameter types the commands share.

- ``OutputDir``, the type of every ``--out``: checked while the arguments are parsed. A
  load run or an experiment takes minutes to hours, and what it measured must not be lost
  to a directory that cannot be written when it comes to save it. It is not made here: a
  command refused for another option leaves nothing behind.
- ``PORT``, a TCP port or 0 for any, checked before a cluster starts.
- ``CONTAINER``, a Swift container name: Swift would read a ``/`` in it as the start of
  the object's name, and answer a PUT into a container that does not exist (404).
- ``OBJECT``, a Swift object name: an empty one, or one with a ``.`` or ``..`` segment
  that HTTP clients resolve away, would make the request another path's (a HEAD of the
  container answers 200, and its "classes" would be printed).
- ``OutputFile``, a file to download or write a class file into: its directory is checked
  before the download, so that a bad path fails at once and names itself, not the
  download's temporary file.
- ``POSITIVE``, for the scales, factors and timeouts: a finite number above zero. click's
  ``FloatRange`` lets ``nan`` and ``inf`` through, and those end in a traceback (a count
  of nan) or a run that never ends (a duration of inf).
"""

from __future__ import annotations

import math
import os
import tempfile
from pathlib import Path
from typing import Any

import click

from swift_dss.addresses import address_error


class OutputDir(click.Path):
    """A directory this process can write in, or one it can make: the nearest of its
    parents that exists is a directory it can write in."""

    name = "directory"

    def __init__(self) -> None:
        super().__init__(file_okay=False, path_type=Path)

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        path = Path(super().convert(value, param, ctx))
        existing = path.absolute()
        while not existing.exists():
            existing = existing.parent
        if not existing.is_dir():
            self.fail(f"cannot create {path}: {existing} is not a directory", param, ctx)
        if error := _write_error(existing):
            self.fail(error, param, ctx)
        return path


def _write_error(directory: Path) -> str | None:
    """Why nothing can be made in ``directory``, or None. A directory is made and removed,
    because access() says yes to root on /proc, where none can be made."""
    try:
        os.rmdir(tempfile.mkdtemp(prefix=".dss-out-", dir=directory))
    except OSError as err:
        return f"cannot write in {directory}: {err.strerror or err}"
    return None


class FiniteFloatRange(click.FloatRange):
    """A ``FloatRange`` that refuses ``nan`` and the infinities."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        number = super().convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        return number


POSITIVE = FiniteFloatRange(min=0, min_open=True)

#: A TCP port; 0 lets the system choose one.
PORT = click.IntRange(0, 65535)


class ContainerName(click.ParamType):
    """A container name a request can address (``swift_dss.addresses``)."""

    name = "container"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if error := address_error(value):
            self.fail(error, param, ctx)
        return value


CONTAINER = ContainerName()


class ObjectName(click.ParamType):
    """An object name a request can address (``swift_dss.addresses``)."""

    name = "object"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if error := address_error("c", value):
            self.fail(error, param, ctx)
        return value


OBJECT = ObjectName()


class OutputFile(click.Path):
    """A file this process can create, or '-' for standard output."""

    def __init__(self) -> None:
        super().__init__(dir_okay=False, allow_dash=True)

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        value = super().convert(value, param, ctx)
        if value == "-":
            return value
        parent = Path(value).absolute().parent
        if not parent.is_dir():
            self.fail(f"cannot write {value}: {parent} is not a directory", param, ctx)
        if error := _write_error(parent):
            self.fail(error, param, ctx)
        return value
