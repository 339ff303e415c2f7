"""Which backend a filesystem needs, from /proc/self/mountinfo.

A dss-tier mount shows as fstype ``fuse.dss-tier``. Nothing marks a DSS-patched kernel, so
``kernel`` is only ever chosen by configuration.
"""

from __future__ import annotations

import os
import threading

TIER_FSTYPE = "fuse.dss-tier"
MOUNTINFO = "/proc/self/mountinfo"

_by_dev: dict[int, str] = {}
_lock = threading.Lock()


def mount_fstypes(mountinfo: str = MOUNTINFO) -> dict[int, str]:
    """Filesystem type by device number, for every mount this process can see."""
    out: dict[int, str] = {}
    with open(mountinfo, encoding="utf-8", errors="replace") as f:
        for line in f:
            head, sep, tail = line.partition(" - ")
            if not sep:
                continue
            fields, rest = head.split(), tail.split()
            if len(fields) < 3 or not rest:
                continue
            major, _, minor = fields[2].partition(":")
            try:
                dev = os.makedev(int(major), int(minor))
            except ValueError:
                continue
            out[dev] = rest[0]
    return out


def backend_name_for_dev(st_dev: int, mountinfo: str = MOUNTINFO) -> str:
    """``tier`` or ``none`` for the filesystem with device number ``st_dev`` (cached)."""
    name = _by_dev.get(st_dev)
    if name is None:
        fstype = mount_fstypes(mountinfo).get(st_dev)
        name = "tier" if fstype == TIER_FSTYPE else "none"
        with _lock:
            _by_dev[st_dev] = name
    return name


def detect_backend(path: str | os.PathLike[str]) -> str:
    """The backend name for the filesystem holding ``path``."""
    return backend_name_for_dev(os.stat(path).st_dev)


def forget_detections() -> None:
    """Drop cached answers (a device number can be reused after an unmount)."""
    with _lock:
        _by_dev.clear()
