"""The type of every command's ``--out``: a directory the command can write its results in.

It is made and checked while the arguments are parsed. A load run or an experiment takes
minutes to hours, and what it measured must not be lost to a directory that cannot be
written when it comes to save it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import click


class OutputDir(click.Path):
    """A directory, made with its parents if missing, that this process can write in."""

    name = "directory"

    def __init__(self) -> None:
        super().__init__(file_okay=False, path_type=Path)

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        path = Path(super().convert(value, param, ctx))
        try:
            path.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            self.fail(f"cannot create {path}: {err.strerror or err}", param, ctx)
        if not os.access(path, os.W_OK | os.X_OK):
            self.fail(f"cannot write in {path}", param, ctx)
        return path
