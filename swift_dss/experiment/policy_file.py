"""Policies an experiment writes for its runs, from the shipped ones: tiered-mode policies for
the traffic study (swift_dss/policies/reference.toml with only the `tier` of the stream
classes changed, so that everything else, metadata on the SSD and the classification rules,
is the reference policy's), and a shipped policy with another cache block."""

from __future__ import annotations

import json
import math
import tomllib
from importlib.resources import files
from pathlib import Path
from typing import Any

#: The tier's cache block when a policy gives none, and the smallest and largest it takes.
DEFAULT_BLOCK = 4096
MIN_BLOCK = 512
MAX_BLOCK = 1 << 20


def shipped(name: str) -> dict[str, Any]:
    return tomllib.loads(files("swift_dss.policies").joinpath(f"{name}.toml").read_text())


def reference() -> dict[str, Any]:
    return shipped("reference")


def scaled_block(block: int, size_scale: float) -> int:
    """The cache block for objects SIZE_SCALE times the paper's: BLOCK times the scale, to
    the nearest power of two the tier takes (at least 512 bytes, at most BLOCK). A scaled
    object then spans about as many blocks as the full-size one, so it takes about as many
    cache entries, and write-back pieces, as on the paper's testbed."""
    # Clamped before the log: a tiny scale would be a negative shift.
    want = min(max(block * size_scale, MIN_BLOCK), block)
    return 1 << round(math.log2(want))


def with_block(name: str, block: int, path: Path) -> Path:
    """Write to PATH the shipped policy NAME with its cache block set to BLOCK; returns PATH."""
    path.write_text(dumps({**shipped(name), "block_size": block}))
    return path


def tiered(name: str, placement: dict[int, str]) -> dict[str, Any]:
    """The reference policy in tiered mode, with PLACEMENT (class -> "ssd"|"hdd") applied to
    the [[classes]] entries of single classes."""
    data = reference()
    data["name"] = name
    data["mode"] = "tiered"
    for entry in data["classes"]:
        ids = entry["ids"]
        if isinstance(ids, int) and ids in placement:
            entry["tier"] = placement[ids]
    missing = set(placement) - {e["ids"] for e in data["classes"] if isinstance(e["ids"], int)}
    if missing:
        raise ValueError(f"classes {sorted(missing)} have no entry of their own in the policy")
    return data


def _value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int | float):
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, list):
        return "[" + ", ".join(_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{k} = {_value(x)}" for k, x in v.items()) + " }"
    raise TypeError(f"no TOML form for {v!r}")


def dumps(data: dict[str, Any]) -> str:
    """TOML for the policy format's shapes: scalars, one array of tables, plain tables."""
    lines = [f"{k} = {_value(v)}" for k, v in data.items() if not isinstance(v, dict | list)]
    lines += [f"{k} = {_value(v)}" for k, v in data.items() if isinstance(v, list) and not v]
    for key, value in data.items():
        if isinstance(value, list) and value and all(isinstance(x, dict) for x in value):
            for table in value:
                lines += ["", f"[[{key}]]", *(f"{k} = {_value(v)}" for k, v in table.items())]
        elif isinstance(value, list) and value:
            lines.append(f"{key} = {_value(value)}")
    for key, value in data.items():
        if isinstance(value, dict):
            lines += ["", f"[{key}]", *(f"{k} = {_value(v)}" for k, v in value.items())]
    return "\n".join(lines) + "\n"
