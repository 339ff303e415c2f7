"""The dss-tier ioctls, read from ioctl.toml (the one definition the tier reads too)."""

from __future__ import annotations

import struct
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

# Linux asm-generic/ioctl.h: direction in bits 30-31, size in 16-29, type in 8-15, nr in 0-7.
_IOC_WRITE = 1
_IOC_SIZEBITS = 14
_FIELD_FORMATS = {"u8": "B", "u16": "H", "u32": "I", "u64": "Q"}
# Reserved fields the caller may leave out; they are sent as 0.
_RESERVED = frozenset({"flags"})


@dataclass(frozen=True)
class IoctlSpec:
    """One ``_IOW(type, nr, size)`` request and the layout of its payload."""

    name: str
    type: int
    nr: int
    size: int
    fields: tuple[str, ...]
    layout: struct.Struct

    @property
    def request(self) -> int:
        return (_IOC_WRITE << 30) | (self.size << 16) | (self.type << 8) | self.nr

    def pack(self, values: Mapping[str, int]) -> bytes:
        unknown = set(values) - set(self.fields)
        if unknown:
            raise ValueError(f"{self.name}: unknown fields {sorted(unknown)}")
        missing = [f for f in self.fields if f not in values and f not in _RESERVED]
        if missing:
            raise ValueError(f"{self.name}: missing fields {missing}")
        return self.layout.pack(*(values.get(f, 0) for f in self.fields))


def _spec(name: str, ioc_type: int, table: Mapping[str, object]) -> IoctlSpec:
    nr, size, fields = table["nr"], table["size"], table["fields"]
    if not (isinstance(nr, int) and 0 <= nr < 256):
        raise ValueError(f"ioctl {name}: nr {nr!r} is not 0-255")
    if not (isinstance(size, int) and 0 < size < 1 << _IOC_SIZEBITS):
        raise ValueError(f"ioctl {name}: size {size!r} out of range")
    names = tuple(f[0] for f in fields)
    try:
        layout = struct.Struct("<" + "".join(_FIELD_FORMATS[f[1]] for f in fields))
    except KeyError as e:
        raise ValueError(f"ioctl {name}: field type {e.args[0]!r} unknown") from None
    if layout.size != size:
        raise ValueError(f"ioctl {name}: fields take {layout.size} bytes, size says {size}")
    return IoctlSpec(name, ioc_type, nr, size, names, layout)


def load_ioctls(path: str | Path | None = None) -> dict[str, IoctlSpec]:
    """Every ioctl the contract defines, by section name (``set_class``, ``reclassify``,
    ``drop_cache``)."""
    if path is None:
        text = resources.files("swift_dss.formats").joinpath("ioctl.toml").read_text("utf-8")
    else:
        text = Path(path).read_text("utf-8")
    doc = tomllib.loads(text)
    ioc_type = doc["type"]
    if not (isinstance(ioc_type, int) and 0 <= ioc_type < 256):
        raise ValueError(f"ioctl type {ioc_type!r} is not 0-255")
    return {
        name: _spec(name, ioc_type, table) for name, table in doc.items() if isinstance(table, dict)
    }


IOCTLS = load_ioctls()
SET_CLASS = IOCTLS["set_class"]
RECLASSIFY = IOCTLS["reclassify"]
DROP_CACHE = IOCTLS["drop_cache"]
