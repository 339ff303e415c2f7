"""The binary class file of the paper's Appendix A.1 (docs/protocol.md, "Class file").

Layout: a 16-byte metadata section (magic ``DS``, VER_ID, CLS_BYTES, 12 format-specific
bytes), then the class section; with ``X-DSS-Object-File`` the object data follows. All
integers are little-endian and unsigned. Parsing reads exactly the metadata and class
sections from a stream, so whatever follows (the data) is never touched here.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import IntEnum

from swift_dss.formats.classmap import ClassMap, ClassRange, check_class
from swift_dss.formats.errors import ClassError, ClassLimitError
from swift_dss.formats.limits import DEFAULT_LIMITS, MAX_SECTORS, Limits

MAGIC = b"DS"
HEADER_SIZE = 16
_U32 = struct.Struct("<I")


class Version(IntEnum):
    OBJECT = 0
    RANGE = 1
    BLOCK = 2


@dataclass(frozen=True)
class ClassFile:
    version: Version
    cls_bytes: int
    classmap: ClassMap
    #: Bytes the metadata and class sections took on the wire.
    size: int
    #: BLK_SECTORS of a block-based file, else 0.
    block_sectors: int = 0

    def fitted(self, size: int) -> ClassMap:
        """The classes for an object of ``size`` bytes (see :meth:`ClassMap.fitted`)."""
        return self.classmap.fitted(size, self.block_sectors)


def _section_size(version: Version, cls_bytes: int, count: int) -> int:
    if version is Version.OBJECT:
        return cls_bytes
    if version is Version.RANGE:
        return count * (8 + cls_bytes)
    return count * cls_bytes


def _read_exactly(read: Callable[[int], bytes], n: int, what: str) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = read(n - len(buf))
        if not chunk:
            raise ClassError(f"class file truncated in {what} ({len(buf)} of {n} bytes)")
        buf += chunk
    return bytes(buf)


def _class_value(raw: bytes, limits: Limits) -> int:
    return check_class(int.from_bytes(raw, "little"), limits, "class file class")


def read_classfile(
    read: Callable[[int], bytes],
    limits: Limits = DEFAULT_LIMITS,
    size: int | None = None,
) -> ClassFile:
    """Read one class file's metadata and class sections from ``read`` (a stream's read).

    ``size`` (bytes of object data), when known, bounds the ranges.
    """
    head = _read_exactly(read, HEADER_SIZE, "metadata section")
    if head[:2] != MAGIC:
        raise ClassError(f"class file magic is {head[:2].hex()}, expected 4453 ('DS')")
    try:
        version = Version(head[2])
    except ValueError:
        raise ClassError(f"class file VER_ID {head[2]} is not 0, 1 or 2") from None
    cls_bytes = head[3]
    if not 1 <= cls_bytes <= 4:
        raise ClassError(f"class file CLS_BYTES {cls_bytes} is not 1-4")
    if version is Version.OBJECT:
        count, reserved = 1, head[4:16]
    elif version is Version.RANGE:
        count, reserved = _U32.unpack_from(head, 4)[0], head[8:16]
    else:
        count, reserved = _U32.unpack_from(head, 4)[0], head[12:16]
        blk_sectors = _U32.unpack_from(head, 8)[0]
        if blk_sectors < 1:
            raise ClassError("class file BLK_SECTORS is 0")
    if any(reserved):
        raise ClassError("class file reserved bytes are not zero")
    section = _section_size(version, cls_bytes, count)
    if section > limits.max_class_section:
        raise ClassLimitError(
            f"class section of {section} bytes, limit is {limits.max_class_section}"
        )
    body = _read_exactly(read, section, "class section")

    if version is Version.OBJECT:
        cmap = ClassMap.build(_class_value(body, limits), (), limits, size)
    elif version is Version.RANGE:
        step = 8 + cls_bytes
        ranges = []
        for pos in range(0, section, step):
            offset, length = struct.unpack_from("<II", body, pos)
            cls = _class_value(body[pos + 8 : pos + step], limits)
            ranges.append(ClassRange(offset, length, cls))
        cmap = ClassMap.build(0, ranges, limits, size)
    else:
        if count * blk_sectors > MAX_SECTORS + 1:
            raise ClassError(f"{count} blocks of {blk_sectors} sectors exceed 2^32 sectors")
        ranges = [
            ClassRange(i * blk_sectors, blk_sectors, _class_value(body[p : p + cls_bytes], limits))
            for i, p in enumerate(range(0, section, cls_bytes))
        ]
        cmap = ClassMap.build(0, _merge_blocks(ranges, limits), limits)
        if size is not None:
            cmap = cmap.fitted(size, blk_sectors)
    block_sectors = blk_sectors if version is Version.BLOCK else 0
    return ClassFile(version, cls_bytes, cmap, HEADER_SIZE + section, block_sectors)


def _merge_blocks(blocks: list[ClassRange], limits: Limits) -> list[ClassRange]:
    # Blocks are already sorted and contiguous; merging here keeps ClassMap.build's
    # pre-merge bound from refusing a long table that collapses to few ranges.
    out: list[ClassRange] = []
    for b in blocks:
        if out and out[-1].cls == b.cls:
            out[-1] = ClassRange(out[-1].offset, out[-1].length + b.length, b.cls)
        else:
            out.append(b)
            if len(out) > limits.max_ranges:
                raise ClassLimitError(f"more than {limits.max_ranges} class ranges")
    return out


def parse_classfile(
    data: bytes, limits: Limits = DEFAULT_LIMITS, size: int | None = None
) -> tuple[ClassFile, bytes]:
    """Parse a class file held in memory; returns it and the bytes that follow it."""
    pos = 0

    def read(n: int) -> bytes:
        nonlocal pos
        chunk = data[pos : pos + n]
        pos += len(chunk)
        return chunk

    cf = read_classfile(read, limits, size)
    return cf, data[pos:]


def _class_bytes(value: int, cls_bytes: int) -> bytes:
    if not 1 <= cls_bytes <= 4:
        raise ValueError(f"cls_bytes must be 1-4, got {cls_bytes}")
    return value.to_bytes(cls_bytes, "little")


def encode_object(cls: int, cls_bytes: int = 1) -> bytes:
    return MAGIC + bytes([Version.OBJECT, cls_bytes]) + bytes(12) + _class_bytes(cls, cls_bytes)


def encode_ranges(ranges: Sequence[tuple[int, int, int] | ClassRange], cls_bytes: int = 1) -> bytes:
    out = bytearray(MAGIC + bytes([Version.RANGE, cls_bytes]))
    out += _U32.pack(len(ranges)) + bytes(8)
    for offset, length, cls in ranges:
        out += struct.pack("<II", offset, length) + _class_bytes(cls, cls_bytes)
    return bytes(out)


def encode_blocks(classes: Sequence[int], blk_sectors: int, cls_bytes: int = 1) -> bytes:
    out = bytearray(MAGIC + bytes([Version.BLOCK, cls_bytes]))
    out += _U32.pack(len(classes)) + _U32.pack(blk_sectors) + bytes(4)
    for cls in classes:
        out += _class_bytes(cls, cls_bytes)
    return bytes(out)


def encode_classmap(cmap: ClassMap, cls_bytes: int = 1) -> bytes:
    """The smallest class file for ``cmap``: object-based without ranges, else range-based."""
    if not cmap.ranges:
        return encode_object(cmap.default, cls_bytes)
    if cmap.default != 0:
        raise ValueError(
            "a range-based class file has no default class: send X-DSS-Object-Class with it"
        )
    return encode_ranges(cmap.ranges, cls_bytes)
