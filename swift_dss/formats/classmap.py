"""The one internal representation of an object's classes.

A :class:`ClassMap` is a default class plus a sorted tuple of non-overlapping sector ranges,
each with its own class. Every input form (headers, the three class-file formats, sysmeta)
is turned into a ClassMap, and every output form is made from one.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import NamedTuple

from swift_dss.formats.errors import ClassError, ClassLimitError
from swift_dss.formats.limits import CLASS_SPACE, DEFAULT_LIMITS, MAX_SECTORS, SECTOR, Limits


class ClassRange(NamedTuple):
    """``length`` sectors from sector ``offset`` carry class ``cls``."""

    offset: int
    length: int
    cls: int

    @property
    def end(self) -> int:
        return self.offset + self.length


def check_class(value: object, limits: Limits = DEFAULT_LIMITS, what: str = "class") -> int:
    """``value`` if it is a class within ``limits``, else :class:`ClassError`.

    The default limits span the whole one-byte class space. ``what`` names the value in the
    error, so that the message says where the class came from.
    """
    # bool is an int to Python, but True is no class.
    if not isinstance(value, int) or isinstance(value, bool):
        raise ClassError(f"{what} must be an integer 0-{limits.max_class}, got {value!r}")
    if not 0 <= value <= limits.max_class:
        raise ClassError(f"{what} {value} outside 0-{limits.max_class}")
    return value


def _canonical(ranges: Iterable[ClassRange]) -> tuple[ClassRange, ...]:
    """Sort, reject overlaps, merge adjacent ranges of equal class."""
    out: list[ClassRange] = []
    for r in sorted(ranges):
        if out and r.offset < out[-1].end:
            prev = out[-1]
            raise ClassError(
                f"range {r.offset}-{r.length}-{r.cls} overlaps"
                f" {prev.offset}-{prev.length}-{prev.cls}"
            )
        if out and r.offset == out[-1].end and r.cls == out[-1].cls:
            prev = out.pop()
            r = ClassRange(prev.offset, prev.length + r.length, r.cls)
        out.append(r)
    return tuple(out)


@dataclass(frozen=True)
class ClassMap:
    default: int = 0
    ranges: tuple[ClassRange, ...] = ()
    _starts: tuple[int, ...] = field(default=(), init=False, repr=False, compare=False)
    #: The class of every byte when the map has only one (else None): readers and writers
    #: then need no splitting at all, which is what nearly every object is.
    uniform_class: int | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_starts", tuple(r.offset for r in self.ranges))
        if all(r.cls == self.default for r in self.ranges):
            object.__setattr__(self, "uniform_class", self.default)

    @classmethod
    def build(
        cls,
        default: int = 0,
        ranges: Iterable[tuple[int, int, int] | ClassRange] = (),
        limits: Limits = DEFAULT_LIMITS,
        size: int | None = None,
    ) -> ClassMap:
        """Validate and canonicalise; ``size`` (bytes), when known, bounds the ranges."""
        check_class(default, limits)
        if cls is ClassMap and isinstance(ranges, (tuple, list)) and not ranges:
            # Every request of an object-classified client comes here: no need to build
            # (and later compare) a new map each time.
            return _SINGLE[default]
        items: list[ClassRange] = []
        for item in ranges:
            r = ClassRange(*item)
            if r.offset < 0 or r.length < 1:
                raise ClassError(f"range {r.offset}-{r.length}-{r.cls}: empty or negative")
            if r.end > MAX_SECTORS + 1:
                raise ClassError(f"range {r.offset}-{r.length}-{r.cls} beyond 2^32 sectors")
            check_class(r.cls, limits)
            items.append(r)
            if len(items) > 4 * limits.max_ranges:
                # Bound the work before merging: nothing this large can merge down far enough
                # to matter for a well-behaved client.
                raise ClassLimitError(f"more than {limits.max_ranges} class ranges")
        canon = _canonical(items)
        if len(canon) > limits.max_ranges:
            raise ClassLimitError(f"{len(canon)} class ranges, limit is {limits.max_ranges}")
        cmap = cls(default, canon)
        if size is not None:
            cmap.check_size(size)
        return cmap

    @property
    def is_unclassified(self) -> bool:
        return self.default == 0 and all(r.cls == 0 for r in self.ranges)

    def classes(self) -> set[int]:
        """Every class a byte of the object may carry."""
        return {self.default, *(r.cls for r in self.ranges)}

    def check_size(self, size: int) -> None:
        """Ranges must lie inside an object of ``size`` bytes (a partial last sector counts)."""
        if self.ranges:
            sectors = -(-size // SECTOR)
            last = self.ranges[-1]
            if last.end > sectors:
                raise ClassError(
                    f"range {last.offset}-{last.length}-{last.cls} ends at sector {last.end},"
                    f" object has {sectors}"
                )

    def class_at(self, offset: int) -> int:
        """Class of the byte at ``offset``."""
        sector = offset // SECTOR
        i = bisect.bisect_right(self._starts, sector) - 1
        if i >= 0 and sector < self.ranges[i].end:
            return self.ranges[i].cls
        return self.default

    def segments(self, offset: int, length: int) -> Iterator[tuple[int, int, int]]:
        """Split bytes ``[offset, offset+length)`` into ``(offset, length, class)`` pieces.

        Pieces are maximal: consecutive pieces differ in class, so every I/O made from one
        carries exactly one class.
        """
        end = offset + length
        pos = offset
        i = bisect.bisect_right(self._starts, pos // SECTOR) - 1
        if i < 0:
            i = 0
        cur_cls: int | None = None
        cur_start = pos
        while pos < end:
            while i < len(self.ranges) and self.ranges[i].end * SECTOR <= pos:
                i += 1
            if i < len(self.ranges) and self.ranges[i].offset * SECTOR <= pos:
                cls, stop = self.ranges[i].cls, self.ranges[i].end * SECTOR
            elif i < len(self.ranges):
                cls, stop = self.default, self.ranges[i].offset * SECTOR
            else:
                cls, stop = self.default, end
            stop = min(stop, end)
            if cur_cls is not None and cls != cur_cls:
                yield (cur_start, pos - cur_start, cur_cls)
                cur_start = pos
            cur_cls = cls
            pos = stop
        if cur_cls is not None and pos > cur_start:
            yield (cur_start, pos - cur_start, cur_cls)

    def classifies_like(self, other: ClassMap) -> bool:
        """Whether both maps give one object class and every byte one class: a range of the
        object class itself changes no byte, so it may be there in one and not the other."""
        if self.default != other.default:
            return False
        mine = [r for r in self.ranges if r.cls != self.default]
        theirs = [r for r in other.ranges if r.cls != other.default]
        return mine == theirs

    def with_default(self, default: int) -> ClassMap:
        return ClassMap(default, self.ranges)

    def clipped(self, size: int) -> ClassMap:
        """This map without what lies beyond an object of ``size`` bytes."""
        sectors = -(-size // SECTOR)
        ranges = tuple(
            ClassRange(r.offset, min(r.end, sectors) - r.offset, r.cls)
            for r in self.ranges
            if r.offset < sectors
        )
        return ClassMap(self.default, ranges)

    def fitted(self, size: int, block_sectors: int = 0) -> ClassMap:
        """This map checked against an object of ``size`` bytes, as it is stored.

        The map of a block-based class file (``block_sectors`` > 0) may end in a block that
        runs past the object's end, as a disk's last allocation unit may: that block covers
        what is there. A block that starts past the end classifies nothing and is refused.
        Any other range must lie inside the object.
        """
        if block_sectors and self.ranges:
            sectors = -(-size // SECTOR)
            end = self.ranges[-1].end
            if end - block_sectors >= sectors:
                raise ClassError(
                    f"{end // block_sectors} blocks of {block_sectors} sectors, the object's"
                    f" {sectors} sectors need at most {-(-sectors // block_sectors)}"
                )
            return self.clipped(size)
        self.check_size(size)
        return self


# One shared map per class for the maps without ranges (ClassMap is immutable).
_SINGLE = tuple(ClassMap(c) for c in range(CLASS_SPACE))
