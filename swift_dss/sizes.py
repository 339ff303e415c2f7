"""Byte counts written for people: ``"10MiB"`` in, ``"10 MiB"`` out.

Units are binary. ``KB``/``MB``/... mean the same as ``KiB``/``MiB``, as in the papers the
classification schemes come from, so a bucket written "256KB" is 262,144 bytes.
"""

from __future__ import annotations

import re
from fractions import Fraction

_UNITS = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40, "P": 2**50}
_SIZE = re.compile(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([KMGTP]?)(?:I?B)?\s*", re.IGNORECASE)
#: The largest byte count: what a file's size or offset holds (a signed 64-bit off_t).
MAX_SIZE = 2**63 - 1
#: Beyond this many digits a fraction changes no count it is a fraction of.
_FRACTION_DIGITS = 40


def shown(value: object, limit: int = 20) -> str:
    """VALUE quoted for a message, cut to LIMIT characters: a value refused for being
    thousands of digits long would otherwise fill the screen."""
    text = str(value)
    return repr(value) if len(text) <= limit else repr(text[:limit] + "\u2026")


def exact(number: str, max_whole_digits: int) -> Fraction | None:
    """NUMBER (digits, maybe with a point and more digits) as an exact fraction; None where
    its whole part has more than MAX_WHOLE_DIGITS digits. A float would turn a long one
    into infinity, and Python refuses to read an integer of thousands of digits."""
    whole, _, fraction = number.partition(".")
    whole = whole.lstrip("0") or "0"
    if len(whole) > max_whole_digits:
        return None
    return Fraction(f"{whole}.{fraction[:_FRACTION_DIGITS] or 0}")


def parse_size(value: int | str) -> int:
    """Bytes in ``value``: an int, or a number with an optional unit (B, K, KB, KiB, ...)."""
    if isinstance(value, bool):
        raise ValueError(f"size {value!r} is not a byte count")
    if isinstance(value, int):
        if value < 0:
            raise ValueError(f"size {value} is negative")
        if value > MAX_SIZE:
            raise ValueError(_too_large(value))
        return value
    m = _SIZE.fullmatch(value)
    if not m:
        raise ValueError(f"size {shown(value)} is not a number with an optional unit (e.g. 10MiB)")
    number, unit = m.groups()
    amount = exact(number, len(str(MAX_SIZE)))
    nbytes = None if amount is None else int(amount * _UNITS[unit.upper()])
    if nbytes is None or nbytes > MAX_SIZE:
        raise ValueError(_too_large(value))
    return nbytes


def _too_large(value: int | str) -> str:
    return f"size {shown(value)} is too large (sizes are below 8 EiB)"


def format_size(n: int) -> str:
    """``n`` bytes in the largest binary unit that keeps the number at least 1."""
    for unit in ("PiB", "TiB", "GiB", "MiB", "KiB"):
        scale = _UNITS[unit[0]]
        if n >= scale:
            value = n / scale
            text = f"{value:.0f}" if value == int(value) else f"{value:.1f}"
            return f"{text} {unit}"
    return f"{n} B"
