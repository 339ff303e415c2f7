"""Byte counts written for people: ``"10MiB"`` in, ``"10 MiB"`` out.

Units are binary. ``KB``/``MB``/... mean the same as ``KiB``/``MiB``, as in the papers the
classification schemes come from, so a bucket written "256KB" is 262,144 bytes.
"""

from __future__ import annotations

import re

_UNITS = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40, "P": 2**50}
_SIZE = re.compile(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([KMGTP]?)(?:I?B)?\s*", re.IGNORECASE)


def parse_size(value: int | str) -> int:
    """Bytes in ``value``: an int, or a number with an optional unit (B, K, KB, KiB, ...)."""
    if isinstance(value, bool):
        raise ValueError(f"size {value!r} is not a byte count")
    if isinstance(value, int):
        if value < 0:
            raise ValueError(f"size {value} is negative")
        return value
    m = _SIZE.fullmatch(value)
    if not m:
        raise ValueError(f"size {value!r} is not a number with an optional unit (e.g. 10MiB)")
    number, unit = m.groups()
    return int(float(number) * _UNITS[unit.upper()])


def format_size(n: int) -> str:
    """``n`` bytes in the largest binary unit that keeps the number at least 1."""
    for unit in ("PiB", "TiB", "GiB", "MiB", "KiB"):
        scale = _UNITS[unit[0]]
        if n >= scale:
            value = n / scale
            text = f"{value:.0f}" if value == int(value) else f"{value:.1f}"
            return f"{text} {unit}"
    return f"{n} B"
