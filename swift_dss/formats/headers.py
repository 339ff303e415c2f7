"""The X-DSS-Object-Class and X-DSS-Range-Class header values."""

from __future__ import annotations

import re

from swift_dss.formats.classmap import ClassMap, ClassRange, check_class
from swift_dss.formats.errors import ClassError, ClassLimitError
from swift_dss.formats.limits import DEFAULT_LIMITS, Limits
from swift_dss.formats.sysmeta import environ_key

OBJECT_CLASS = "X-DSS-Object-Class"
RANGE_CLASS = "X-DSS-Range-Class"
# As WSGI environ keys: the middlewares read and drop them there, sparing swob's header
# proxy its conversions on each lookup.
ENV_OBJECT_CLASS = environ_key(OBJECT_CLASS)
ENV_RANGE_CLASS = environ_key(RANGE_CLASS)
#: The two class headers in the user-metadata form, for S3 clients that can only set metadata.
META_OBJECT_CLASS = "X-Object-Meta-Dss-Object-Class"
META_RANGE_CLASS = "X-Object-Meta-Dss-Range-Class"
ENV_META_OBJECT_CLASS = environ_key(META_OBJECT_CLASS)
ENV_META_RANGE_CLASS = environ_key(META_RANGE_CLASS)
OBJECT_FILE = "X-DSS-Object-File"
CLASS_FILE = "X-DSS-Class-File"

# Digits only: no signs, no spaces inside a number, no hex; 10 digits cover 2^32.
_NUMBER = re.compile(r"[0-9]{1,10}")
_RANGE = re.compile(r"\s*([0-9]{1,10})-([0-9]{1,10})-([0-9]{1,10})\s*")


#: The words Swift's config_true_value takes as true, and their opposites.
_TRUE = frozenset(("true", "1", "yes", "on", "t", "y"))
_FALSE = frozenset(("false", "0", "no", "off", "f", "n"))


def parse_flag(value: str | None, header: str) -> bool:
    """A true-or-false header (absent: false). Anything else is refused, not taken as
    false: a class file taken for data would be stored as the object's first bytes."""
    if value is None:
        return False
    word = value.strip().lower()
    if word in _TRUE or word in _FALSE:
        return word in _TRUE
    raise ClassError(f"{header} is {value[:40]!r}: give true or false")


def file_flags(
    class_file: str | None, object_file: str | None, method: str, copy: bool = False
) -> tuple[bool, bool]:
    """(class file, object file): what a request's body holds by its two flags. Only a
    PUT's body is read, and a copy's (``copy``) is its source's data, so a true flag on
    any other request would be ignored, and the class file lost with it."""
    flags = parse_flag(class_file, CLASS_FILE), parse_flag(object_file, OBJECT_FILE)
    named = CLASS_FILE if flags[0] else OBJECT_FILE
    if all(flags):
        raise ClassError(f"{CLASS_FILE} and {OBJECT_FILE} exclude each other: give one")
    if any(flags) and method != "PUT":
        raise ClassError(f"{named} goes with a PUT: a {method}'s body is not read")
    if any(flags) and copy:
        raise ClassError(f"{named} cannot go with a copy, whose body is its source's data")
    return flags


def parse_number(text: str, what: str) -> int:
    text = text.strip()
    if not _NUMBER.fullmatch(text):
        raise ClassError(f"{what} {text[:40]!r} is not a decimal number")
    return int(text)


def parse_object_class(value: str, limits: Limits = DEFAULT_LIMITS) -> int:
    return check_class(parse_number(value, OBJECT_CLASS), limits)


def parse_range_class(value: str, limits: Limits = DEFAULT_LIMITS) -> list[ClassRange]:
    """Parse ``<offset>-<length>-<class>[,...]`` (sectors); order and overlaps are checked later."""
    if len(value) > limits.max_header_length:
        raise ClassLimitError(
            f"{RANGE_CLASS} is {len(value)} characters, limit is {limits.max_header_length}"
        )
    parts = value.split(",")
    if len(parts) > limits.max_ranges:
        raise ClassLimitError(f"{len(parts)} class ranges, limit is {limits.max_ranges}")
    ranges = []
    for part in parts:
        m = _RANGE.fullmatch(part)
        if not m:
            entry = part.strip()[:40]
            raise ClassError(
                f"{RANGE_CLASS} entry {entry!r} is not offset-length-class "
                "(whole numbers of up to 10 digits)"
            )
        offset, length, cls = (int(g) for g in m.groups())
        ranges.append(ClassRange(offset, length, cls))
    return ranges


def classmap_from_headers(
    object_class: str | None,
    range_class: str | None,
    limits: Limits = DEFAULT_LIMITS,
    size: int | None = None,
) -> ClassMap | None:
    """The class map the two headers describe, or None when neither is present."""
    if object_class is None and range_class is None:
        return None
    default = parse_object_class(object_class, limits) if object_class is not None else 0
    ranges = parse_range_class(range_class, limits) if range_class is not None else []
    return ClassMap.build(default, ranges, limits, size)


def format_range_class(cmap: ClassMap) -> str:
    return ",".join(f"{r.offset}-{r.length}-{r.cls}" for r in cmap.ranges)


def classmap_to_headers(cmap: ClassMap) -> dict[str, str]:
    """Canonical response headers: always the object class, ranges when there are any."""
    headers = {OBJECT_CLASS: str(cmap.default)}
    if cmap.ranges:
        headers[RANGE_CLASS] = format_range_class(cmap)
    return headers
