"""The mount table of a process (``/proc/self/mountinfo``, ``/proc/PID/mountinfo``) as
entries: mount id, device number, mount point, filesystem type and source.

The kernel writes a space, tab, newline or backslash in a path as an octal escape
(``\\040``, ``\\011``, ``\\012``, ``\\134``); the entries hold the paths unescaped. Only the
standard library is used, since the object server's dssio reads the table too.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

MOUNTINFO = "/proc/self/mountinfo"

_ESCAPE = re.compile(r"\\([0-7]{3})")


@dataclass(frozen=True)
class MountEntry:
    """One line of mountinfo."""

    mount_id: int
    parent_id: int
    major: int
    minor: int
    #: The directory of the filesystem that is mounted (``/`` unless a bind mount).
    root: str
    mount_point: str
    fstype: str
    #: What was mounted: a device, ``tmpfs``, ``dss-tier:HDD``; "" if the line has none.
    source: str

    @property
    def st_dev(self) -> int:
        """The device number `os.stat` gives for files on this mount."""
        return os.makedev(self.major, self.minor)


def unescape(field: str) -> str:
    """A mountinfo field with its octal escapes undone."""
    return _ESCAPE.sub(lambda m: chr(int(m.group(1), 8)), field)


def parse_line(line: str) -> MountEntry | None:
    """The entry of one mountinfo line, or None if the line is not one."""
    # Optional fields (shared:N, master:N) sit between the mount point and a lone "-".
    # Fields are split on single spaces only: a path keeps other whitespace unescaped.
    head, sep, tail = line.partition(" - ")
    fields, rest = head.split(" "), tail.split(" ")
    if not sep or len(fields) < 5 or not rest[0]:
        return None
    major, colon, minor = fields[2].partition(":")
    try:
        ids = int(fields[0]), int(fields[1]), int(major), int(minor)
    except ValueError:
        return None
    if not colon:
        return None
    return MountEntry(
        mount_id=ids[0],
        parent_id=ids[1],
        major=ids[2],
        minor=ids[3],
        root=unescape(fields[3]),
        mount_point=unescape(fields[4]),
        fstype=rest[0],
        source=unescape(rest[1]) if len(rest) > 1 else "",
    )


def parse(text: str) -> list[MountEntry]:
    """The entries of mountinfo TEXT in its order (oldest mount first); lines that are not
    entries are left out."""
    # Not splitlines(): a path may hold a raw carriage return or form feed.
    return [e for line in text.split("\n") if (e := parse_line(line)) is not None]


def read(path: str | os.PathLike[str] = MOUNTINFO) -> list[MountEntry]:
    """The entries of the mountinfo file PATH."""
    with open(path, encoding="utf-8", errors="replace") as f:
        return parse(f.read())


def mount_type(path: str | os.PathLike[str], mountinfo: str = MOUNTINFO) -> str | None:
    """The filesystem type mounted on PATH (the topmost mount there), or None.

    Read from mountinfo rather than by stat, which fails on a FUSE mount whose daemon died
    and would let such a mount go unnoticed. PATH is made absolute, not resolved.
    """
    target = os.path.abspath(path)
    found = None
    for entry in read(mountinfo):
        if entry.mount_point == target:
            found = entry.fstype
    return found


def mounts_under(path: str | os.PathLike[str], mountinfo: str = MOUNTINFO) -> list[str]:
    """Mount points strictly below the directory PATH."""
    prefix = str(Path(path)) + "/"
    return [e.mount_point for e in read(mountinfo) if e.mount_point.startswith(prefix)]
