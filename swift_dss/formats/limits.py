"""Operator-configurable bounds on class information."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

SECTOR = 512
#: Offsets and lengths travel as 4-byte unsigned sector counts in class files.
MAX_SECTORS = 2**32 - 1
#: Classes are one byte on the wire to the tier (docs/protocol.md).
CLASS_SPACE = 256


@dataclass(frozen=True)
class Limits:
    #: Highest class value accepted (classes are 0..max_class).
    max_class: int = CLASS_SPACE - 1
    #: Most ranges one object's class map may hold after canonicalisation.
    max_ranges: int = 1024
    #: Largest class section (bytes after the 16-byte metadata) of a class file.
    max_class_section: int = 64 * 1024
    #: Longest X-DSS-Range-Class header value, in characters.
    max_header_length: int = 8000

    def __post_init__(self) -> None:
        if not 0 <= self.max_class < CLASS_SPACE:
            raise ValueError(f"max_class must be 0-{CLASS_SPACE - 1}, got {self.max_class}")
        for name in ("max_ranges", "max_class_section", "max_header_length"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}")

    @classmethod
    def from_conf(cls, conf: Mapping[str, str]) -> Limits:
        """Read the limits from a Swift-style config section (missing keys keep defaults)."""
        kwargs = {}
        for name in ("max_class", "max_ranges", "max_class_section", "max_header_length"):
            if name in conf:
                try:
                    kwargs[name] = int(conf[name])
                except ValueError:
                    raise ValueError(f"{name} must be a whole number, not {conf[name]!r}") from None
        return cls(**kwargs)


DEFAULT_LIMITS = Limits()
