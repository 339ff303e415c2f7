"""What the client accepts as classes, and the request forms it sends them in."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeAlias

from swift_dss.formats import (
    OBJECT_CLASS,
    RANGE_CLASS,
    ClassMap,
    classmap_from_headers,
    classmap_to_headers,
    encode_classmap,
    encode_ranges,
)

#: A class map, one class for the whole object, or no classes.
Classes: TypeAlias = ClassMap | int | None


def as_classmap(classes: Classes) -> ClassMap | None:
    """``classes`` as a validated ClassMap (None stays None)."""
    if classes is None or isinstance(classes, ClassMap):
        return classes
    if isinstance(classes, bool) or not isinstance(classes, int):
        raise TypeError(f"classes must be a ClassMap, an int or None, not {type(classes).__name__}")
    return ClassMap.build(classes)


def parse_classes(object_class: int | str | None, range_class: str | None) -> ClassMap | None:
    """The class map of an object class and a range spec in header syntax (either optional)."""
    return classmap_from_headers(None if object_class is None else str(object_class), range_class)


def class_headers(cmap: ClassMap) -> dict[str, str]:
    """X-DSS-Object-Class (always) and X-DSS-Range-Class (with ranges) for ``cmap``."""
    return classmap_to_headers(cmap)


def class_file(cmap: ClassMap, cls_bytes: int = 1) -> tuple[bytes, dict[str, str]]:
    """A class file for ``cmap`` and the headers that must go with it.

    A range-based class file has no default class, so a map with both ranges and a non-zero
    default travels as the ranges in the file plus X-DSS-Object-Class in a header.
    """
    if cmap.ranges and cmap.default != 0:
        return encode_ranges(cmap.ranges, cls_bytes), {OBJECT_CLASS: str(cmap.default)}
    return encode_classmap(cmap, cls_bytes), {}


def classes_from_headers(headers: Mapping[str, str]) -> ClassMap:
    """The classes a HEAD or GET answered with; an answer without any means unclassified."""
    lower = {k.lower(): v for k, v in headers.items()}
    cmap = classmap_from_headers(lower.get(OBJECT_CLASS.lower()), lower.get(RANGE_CLASS.lower()))
    return cmap if cmap is not None else ClassMap()
