"""Which backend a filesystem needs, from /proc/self/mountinfo.

A dss-tier mount shows as fstype ``fuse.dss-tier``. Nothing marks a DSS-patched kernel, so
``kernel`` is only ever chosen by configuration.
"""

from __future__ import annotations

import os
import threading

from swift_dss.mountinfo import MOUNTINFO
from swift_dss.mountinfo import read as read_mountinfo

TIER_FSTYPE = "fuse.dss-tier"

_by_dev: dict[int, str] = {}
_lock = threading.Lock()


def mount_fstypes(mountinfo: str = MOUNTINFO) -> dict[int, str]:
    """Filesystem type by device number, for every mount this process can see."""
    return {entry.st_dev: entry.fstype for entry in read_mountinfo(mountinfo)}


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
