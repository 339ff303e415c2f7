"""A run's completion record (`entry.json`): written whole or not at all.

A run is kept, and skipped when the experiment is resumed, once its record exists. An
interrupt (the documented way to stop a run) or a full disk in the middle of writing it
would leave part of a record, which a resumed run could neither parse nor measure again.
So a record is written beside itself and renamed over its place, and one that does not
parse (an older copy) counts as not done.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any


def write_record(path: Path, doc: dict[str, Any]) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(doc, indent=1) + "\n")
    os.replace(tmp, path)


def read_record(path: Path) -> dict[str, Any] | None:
    """The record at ``path``, or None when there is none or it does not parse."""
    try:
        doc = json.loads(path.read_text())
    except (FileNotFoundError, json.JSONDecodeError, UnicodeDecodeError):
        return None
    return doc if isinstance(doc, dict) else None
