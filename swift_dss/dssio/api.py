"""dssio's module-level calls: the backend is chosen per file descriptor automatically."""

from __future__ import annotations

import os
import threading
from typing import Any

from swift_dss.dssio.backends import BACKENDS, Backend
from swift_dss.dssio.detect import backend_name_for_dev
from swift_dss.dssio.oslayer import BytesLike

_instances: dict[tuple[str, tuple[tuple[str, Any], ...]], Backend] = {}
_lock = threading.Lock()


def get_backend(name: str, **options: Any) -> Backend:
    """The backend ``name`` (none, tier, kernel, record) with ``options`` for its
    constructor; one shared instance per name and options, so per-handle state is shared."""
    try:
        cls = BACKENDS[name]
    except KeyError:
        raise ValueError(
            f"unknown dssio backend {name!r}; known: {', '.join(sorted(BACKENDS))}"
        ) from None
    key = (name, tuple(sorted(options.items())))
    with _lock:
        backend = _instances.get(key)
        if backend is None:
            backend = _instances[key] = cls(**options)
    return backend


def backend_for_fd(fd: int) -> Backend:
    return get_backend(backend_name_for_dev(os.fstat(fd).st_dev))


def dwrite(fd: int, cls: int, data: BytesLike) -> int:
    return backend_for_fd(fd).dwrite(fd, cls, data)


def dread(fd: int, cls: int, size: int) -> bytes:
    return backend_for_fd(fd).dread(fd, cls, size)


def pdwrite(fd: int, cls: int, data: BytesLike, offset: int) -> int:
    return backend_for_fd(fd).pdwrite(fd, cls, data, offset)


def pdread(fd: int, cls: int, size: int, offset: int) -> bytes:
    return backend_for_fd(fd).pdread(fd, cls, size, offset)


def reclassify(fd: int, offset: int, length: int, cls: int) -> None:
    backend_for_fd(fd).reclassify(fd, offset, length, cls)


def release(fd: int) -> None:
    """Forget what any backend knows about ``fd``; call before closing it."""
    with _lock:
        backends = list(_instances.values())
    for backend in backends:
        backend.release(fd)
