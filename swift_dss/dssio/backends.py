"""The ways a class can travel with an I/O to the storage below (docs/architecture.md, "dssio").

Every call carries exactly one class. Writes and reads behave like ``os.write``/``os.read``
(one system call, possibly short); callers loop as they would around the os functions.
"""

from __future__ import annotations

import fcntl
import json
import os
import threading

from swift_dss.dssio.detect import backend_name_for_dev
from swift_dss.dssio.ioctls import DROP_CACHE, RECLASSIFY, SET_CLASS
from swift_dss.dssio.oslayer import OS, BytesLike, OsLayer
from swift_dss.formats import check_class
from swift_dss.formats.limits import CLASS_SPACE

#: Classes are one byte on every path to the device, so dssio takes the whole class space
#: whatever narrower limits the proxy puts on what clients send.
MAX_CLASS = CLASS_SPACE - 1
# Names the value in check_class's error, which is a ClassError and so a ValueError.
_WHAT = "dssio class"
# Kernel reclassification rewrites stored bytes in pieces of this size.
_REWRITE_CHUNK = 1 << 20


class DssioError(RuntimeError):
    """A class could not be handed to the storage below; the I/O was not done.

    Deliberately not an OSError: Swift reacts to some OSErrors from data I/O (EIO quarantines
    the object), and a refused class says nothing about the data's health.
    """

    def __init__(self, message: str, errno: int | None = None) -> None:
        super().__init__(message)
        self.errno = errno


class Backend:
    """Plain I/O; subclasses add how the class reaches the device."""

    name = "base"
    #: Open mode :meth:`reclassify` needs on the file it is handed.
    reclassify_mode = os.O_RDONLY
    #: False when a class given with an I/O reaches nothing below; callers may then do the
    #: I/O their usual way and skip working out classes.
    carries_classes = True

    def __init__(self, osl: OsLayer | None = None) -> None:
        self.os = osl or OS

    def dwrite(self, fd: int, cls: int, data: BytesLike) -> int:
        check_class(cls, what=_WHAT)
        return self.os.write(fd, data)

    def dread(self, fd: int, cls: int, size: int) -> bytes:
        check_class(cls, what=_WHAT)
        return self.os.read(fd, size)

    def pdwrite(self, fd: int, cls: int, data: BytesLike, offset: int) -> int:
        check_class(cls, what=_WHAT)
        return self.os.pwrite(fd, data, offset)

    def pdread(self, fd: int, cls: int, size: int, offset: int) -> bytes:
        check_class(cls, what=_WHAT)
        return self.os.pread(fd, size, offset)

    def reclassify(self, fd: int, offset: int, length: int, cls: int) -> None:
        """Give stored bytes ``[offset, offset + length)`` class ``cls``; data is unchanged."""
        check_class(cls, what=_WHAT)

    def drop_cache(self, fd: int, offset: int, length: int) -> None:
        """``posix_fadvise(POSIX_FADV_DONTNEED)`` for a page cache the storage below models
        and the kernel's fadvise does not reach (``length`` 0: to the end). Nothing to do
        here: the caller's own fadvise reaches the kernel's page cache."""

    def release(self, fd: int) -> None:
        """Forget per-handle state; call before closing ``fd`` (fd numbers are reused)."""

    def __repr__(self) -> str:
        return f"<dssio {self.name}>"


class NoneBackend(Backend):
    """A plain filesystem: classes live only in Swift's metadata."""

    name = "none"
    carries_classes = False


class TierBackend(Backend):
    """A dss-tier mount: the class is a property of the open handle, set by ioctl."""

    name = "tier"

    def __init__(self, osl: OsLayer | None = None) -> None:
        super().__init__(osl)
        # The class each open handle carries, so that a stream of same-class I/Os costs one
        # ioctl (a round trip to the daemon) instead of one per call.
        self._handle_class: dict[int, int] = {}

    def _ioctl(self, fd: int, spec_name: str, request: int, payload: bytes) -> None:
        try:
            self.os.ioctl(fd, request, payload)
        except OSError as e:
            raise DssioError(
                f"dss-tier {spec_name} ioctl on {self.os.fd_path(fd)} failed: "
                f"{os.strerror(e.errno) if e.errno else e} (is the file on a dss-tier mount?)",
                e.errno,
            ) from e

    def set_class(self, fd: int, cls: int) -> None:
        check_class(cls, what=_WHAT)
        if self._handle_class.get(fd) == cls:
            return
        # Forget first: after a failure the handle's class is unknown.
        self._handle_class.pop(fd, None)
        payload = SET_CLASS.pack({"class": cls})
        self._ioctl(fd, "SET_CLASS", SET_CLASS.request, payload)
        self._handle_class[fd] = cls

    def dwrite(self, fd: int, cls: int, data: BytesLike) -> int:
        self.set_class(fd, cls)
        return self.os.write(fd, data)

    def dread(self, fd: int, cls: int, size: int) -> bytes:
        self.set_class(fd, cls)
        return self.os.read(fd, size)

    def pdwrite(self, fd: int, cls: int, data: BytesLike, offset: int) -> int:
        self.set_class(fd, cls)
        return self.os.pwrite(fd, data, offset)

    def pdread(self, fd: int, cls: int, size: int, offset: int) -> bytes:
        self.set_class(fd, cls)
        return self.os.pread(fd, size, offset)

    def reclassify(self, fd: int, offset: int, length: int, cls: int) -> None:
        """``length`` 0 means to the end of the file, as in the ioctl contract."""
        check_class(cls, what=_WHAT)
        if offset < 0 or length < 0:
            raise ValueError(f"reclassify range {offset}+{length} is negative")
        payload = RECLASSIFY.pack({"offset": offset, "length": length, "class": cls})
        self._ioctl(fd, "RECLASSIFY", RECLASSIFY.request, payload)

    def drop_cache(self, fd: int, offset: int, length: int) -> None:
        """FUSE never passes fadvise on: the daemon's modelled page cache hears of it here."""
        if offset < 0 or length < 0:
            raise ValueError(f"drop_cache range {offset}+{length} is negative")
        payload = DROP_CACHE.pack({"offset": offset, "length": length})
        self._ioctl(fd, "DROP_CACHE", DROP_CACHE.request, payload)

    def release(self, fd: int) -> None:
        self._handle_class.pop(fd, None)


class KernelBackend(Backend):
    """A DSS-patched kernel, as in the paper: on a file carrying O_CLASSIFY, the first
    element of every readv/writev is the 1-byte class, not data.

    Assumes the kernel counts only data bytes in the result, as the element is consumed
    before the filesystem sees the I/O. The paper's kernel has no way to reclassify stored
    bytes, so :meth:`reclassify` rewrites them (same bytes) through classified I/O.
    """

    name = "kernel"
    reclassify_mode = os.O_RDWR

    def __init__(self, o_classify: int, osl: OsLayer | None = None) -> None:
        super().__init__(osl)
        if not isinstance(o_classify, int) or o_classify <= 0:
            raise ValueError(f"O_CLASSIFY must be a positive open flag, got {o_classify!r}")
        self.o_classify = o_classify

    def classify_handle(self, fd: int) -> None:
        flags = self.os.fcntl(fd, fcntl.F_GETFL)
        if flags & self.o_classify:
            return
        self.os.fcntl(fd, fcntl.F_SETFL, flags | self.o_classify)
        # A stock kernel drops flags F_SETFL does not know; writing then would store the
        # class byte as data, so refuse instead.
        if not self.os.fcntl(fd, fcntl.F_GETFL) & self.o_classify:
            raise DssioError(
                f"the kernel did not keep O_CLASSIFY ({self.o_classify:#x}) on "
                f"{self.os.fd_path(fd)}: not a DSS kernel, or a wrong dssio_kernel_o_classify"
            )

    def dwrite(self, fd: int, cls: int, data: BytesLike) -> int:
        tag = bytes([check_class(cls, what=_WHAT)])
        self.classify_handle(fd)
        return self.os.writev(fd, [tag, data])

    def dread(self, fd: int, cls: int, size: int) -> bytes:
        tag = bytearray([check_class(cls, what=_WHAT)])
        self.classify_handle(fd)
        buf = bytearray(size)
        n = self.os.readv(fd, [tag, buf])
        return bytes(buf[:n])

    def pdwrite(self, fd: int, cls: int, data: BytesLike, offset: int) -> int:
        tag = bytes([check_class(cls, what=_WHAT)])
        self.classify_handle(fd)
        return self.os.pwritev(fd, [tag, data], offset)

    def pdread(self, fd: int, cls: int, size: int, offset: int) -> bytes:
        tag = bytearray([check_class(cls, what=_WHAT)])
        self.classify_handle(fd)
        buf = bytearray(size)
        n = self.os.preadv(fd, [tag, buf], offset)
        return bytes(buf[:n])

    def reclassify(self, fd: int, offset: int, length: int, cls: int) -> None:
        check_class(cls, what=_WHAT)
        end = offset + length
        pos = offset
        while pos < end:
            data = self.pdread(fd, cls, min(_REWRITE_CHUNK, end - pos), pos)
            if not data:
                break
            view = memoryview(data)
            while view:
                n = self.pdwrite(fd, cls, view, pos)
                pos += n
                view = view[n:]


#: What the record backend may hand its I/O to: ``auto`` picks per file, like the
#: module-level calls (``tier`` on a dss-tier mount, else ``none``).
RECORD_INNER = ("auto", "none", "tier")


class RecordBackend(Backend):
    """One JSON line per I/O in a log, around the I/O an inner backend does.

    Each line is ``{"path", "op", "offset", "length", "class", "backend"}`` (``backend``
    names the inner backend that did the I/O), appended with a single write on an O_APPEND
    file so lines from concurrent processes never interleave. The line is written once the
    inner backend has done the I/O, with the length it actually moved; an I/O the inner
    backend refused (a class the tier would not take) is not logged. With ``inner`` tier
    (or auto on a dss-tier mount) the classes still reach the tier, so tests can check
    per byte what the tier was told on the very cluster they run.
    """

    name = "record"

    def __init__(self, log: str, inner: str = "auto", osl: OsLayer | None = None) -> None:
        super().__init__(osl)
        if not log:
            raise ValueError("the record backend needs a log path")
        if inner not in RECORD_INNER:
            raise ValueError(
                f"record backend: inner backend {inner!r} is not one of {', '.join(RECORD_INNER)}"
            )
        self.log = str(log)
        self.inner = inner
        self._inner: dict[str, Backend] = {
            "none": NoneBackend(self.os),
            "tier": TierBackend(self.os),
        }
        self._log_fd: int | None = None
        self._log_pid = 0
        self._lock = threading.Lock()

    def inner_for(self, fd: int) -> Backend:
        """The backend that does ``fd``'s I/O."""
        name = self.inner
        if name == "auto":
            name = backend_name_for_dev(self.os.fstat(fd).st_dev)
        return self._inner[name]

    def _log_handle(self) -> int:
        # Reopen in a forked child so that each process owns its descriptor.
        with self._lock:
            if self._log_fd is None or self._log_pid != os.getpid():
                self._log_fd = os.open(
                    self.log, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644
                )
                self._log_pid = os.getpid()
            return self._log_fd

    def _record(self, fd: int, op: str, offset: int, length: int, cls: int, inner: Backend) -> None:
        entry = {
            "path": self.os.fd_path(fd),
            "op": op,
            "offset": offset,
            "length": length,
            "class": cls,
            "backend": inner.name,
        }
        os.write(self._log_handle(), (json.dumps(entry) + "\n").encode())

    def _position(self, fd: int) -> int:
        return self.os.lseek(fd, 0, os.SEEK_CUR)

    def dwrite(self, fd: int, cls: int, data: BytesLike) -> int:
        check_class(cls, what=_WHAT)
        inner = self.inner_for(fd)
        offset = self._position(fd)
        n = inner.dwrite(fd, cls, data)
        self._record(fd, "write", offset, n, cls, inner)
        return n

    def dread(self, fd: int, cls: int, size: int) -> bytes:
        check_class(cls, what=_WHAT)
        inner = self.inner_for(fd)
        offset = self._position(fd)
        data = inner.dread(fd, cls, size)
        self._record(fd, "read", offset, len(data), cls, inner)
        return data

    def pdwrite(self, fd: int, cls: int, data: BytesLike, offset: int) -> int:
        check_class(cls, what=_WHAT)
        inner = self.inner_for(fd)
        n = inner.pdwrite(fd, cls, data, offset)
        self._record(fd, "write", offset, n, cls, inner)
        return n

    def pdread(self, fd: int, cls: int, size: int, offset: int) -> bytes:
        check_class(cls, what=_WHAT)
        inner = self.inner_for(fd)
        data = inner.pdread(fd, cls, size, offset)
        self._record(fd, "read", offset, len(data), cls, inner)
        return data

    def reclassify(self, fd: int, offset: int, length: int, cls: int) -> None:
        check_class(cls, what=_WHAT)
        inner = self.inner_for(fd)
        inner.reclassify(fd, offset, length, cls)
        self._record(fd, "reclassify", offset, length, cls, inner)

    def drop_cache(self, fd: int, offset: int, length: int) -> None:
        inner = self.inner_for(fd)
        inner.drop_cache(fd, offset, length)
        # A drop carries no class: the entry says 0.
        self._record(fd, "drop_cache", offset, length, 0, inner)

    def release(self, fd: int) -> None:
        for inner in self._inner.values():
            inner.release(fd)

    def close(self) -> None:
        with self._lock:
            if self._log_fd is not None and self._log_pid == os.getpid():
                os.close(self._log_fd)
            self._log_fd = None


BACKENDS: dict[str, type[Backend]] = {
    cls.name: cls for cls in (NoneBackend, TierBackend, KernelBackend, RecordBackend)
}
