"""A class map as Swift object transient sysmeta.

Transient sysmeta is the one kind of object system metadata that a POST replaces, which is
what out-of-band reclassification needs; the proxy middleware re-sends it on every other
POST so that user-metadata updates keep the classes.

Headers (values are ASCII):

- ``X-Object-Transient-Sysmeta-Dss-Class``: the default class, decimal.
- ``X-Object-Transient-Sysmeta-Dss-Ranges``: the number of ranges, decimal (absent: none).
- ``X-Object-Transient-Sysmeta-Dss-Ranges-<i>``: the ranges, as unpadded base64url of
  LEB128 varints (gap since the previous range's end, length, class) per range, cut into
  pieces of at most :data:`PIECE` characters so no header line nears Swift's limit.

1,024 ranges of typical video-frame shape take about 5 KB.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from typing import Protocol

from swift_dss.formats.classmap import ClassMap, ClassRange
from swift_dss.formats.errors import ClassError
from swift_dss.formats.limits import DEFAULT_LIMITS, Limits

PREFIX = "X-Object-Transient-Sysmeta-Dss-"
CLASS_KEY = PREFIX + "Class"
RANGES_KEY = PREFIX + "Ranges"
PIECE = 2048


def _varint(n: int, out: bytearray) -> None:
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return


def _read_varint(buf: bytes, pos: int) -> tuple[int, int]:
    n = shift = 0
    while True:
        if pos >= len(buf) or shift > 35:
            raise ClassError("sysmeta class ranges are corrupt")
        byte = buf[pos]
        pos += 1
        n |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return n, pos


def to_sysmeta(cmap: ClassMap) -> dict[str, str]:
    headers = {CLASS_KEY: str(cmap.default)}
    if cmap.ranges:
        raw = bytearray()
        end = 0
        for r in cmap.ranges:
            _varint(r.offset - end, raw)
            _varint(r.length, raw)
            _varint(r.cls, raw)
            end = r.end
        text = base64.urlsafe_b64encode(bytes(raw)).rstrip(b"=").decode("ascii")
        headers[RANGES_KEY] = str(len(cmap.ranges))
        for i in range(0, len(text), PIECE):
            headers[f"{RANGES_KEY}-{i // PIECE}"] = text[i : i + PIECE]
    return headers


def sysmeta_keys(headers: Mapping[str, str]) -> list[str]:
    """The dss sysmeta keys present in ``headers`` (case as found)."""
    prefix = PREFIX.lower()
    return [k for k in headers if k.lower().startswith(prefix)]


class HeaderSource(Protocol):
    def get(self, key: str, /) -> str | None: ...


def environ_key(header: str) -> str:
    """The WSGI environ key of a request header with an ASCII name, as swob makes it."""
    return "HTTP_" + header.upper().replace("-", "_")


#: The environ keys of every dss sysmeta header of a request start with this.
ENVIRON_PREFIX = environ_key(PREFIX)


class EnvironHeaders:
    """A request's dss sysmeta read straight from its WSGI environ: the same answers as
    swob's header proxy for these ASCII names, without its per-lookup conversions."""

    __slots__ = ("environ",)

    def __init__(self, environ: Mapping[str, str]) -> None:
        self.environ = environ

    def get(self, key: str, /) -> str | None:
        return self.environ.get(environ_key(key))


def from_sysmeta(headers: HeaderSource, limits: Limits = DEFAULT_LIMITS) -> ClassMap | None:
    """The stored class map, or None for an object never classified.

    ``headers`` must look keys up case-insensitively (swob's HeaderKeyDict, or Swift's
    metadata dict, whose keys are title-cased, or :class:`EnvironHeaders`).
    """
    default_text = headers.get(CLASS_KEY)
    if default_text is None:
        return None
    try:
        default = int(default_text)
        count = int(headers.get(RANGES_KEY) or 0)
    except ValueError:
        raise ClassError("sysmeta class is corrupt") from None
    if not count:
        return ClassMap.build(default, (), limits)
    pieces = []
    i = 0
    while (piece := headers.get(f"{RANGES_KEY}-{i}")) is not None:
        pieces.append(piece)
        i += 1
    text = "".join(pieces)
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError):
        raise ClassError("sysmeta class ranges are corrupt") from None
    ranges = []
    pos = end = 0
    while pos < len(raw):
        gap, pos = _read_varint(raw, pos)
        length, pos = _read_varint(raw, pos)
        cls, pos = _read_varint(raw, pos)
        ranges.append(ClassRange(end + gap, length, cls))
        end += gap + length
    if len(ranges) != count:
        raise ClassError("sysmeta class ranges are corrupt")
    return ClassMap.build(default, ranges, limits)
