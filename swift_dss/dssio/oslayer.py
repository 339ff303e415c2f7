"""The system calls dssio's backends make, behind one object so tests can stand in for them.

Only unit tests of pure framing logic (the kernel backend's writev/readv vectors, which no
stock kernel can check) replace it; everything else runs on real files.
"""

from __future__ import annotations

import fcntl
import os

BytesLike = bytes | bytearray | memoryview


class OsLayer:
    # The os functions themselves rather than methods calling them: every data I/O of the
    # object servers comes through here, and a Python frame per call is measurable on small
    # objects. Stand-ins override them with ordinary methods.
    write = staticmethod(os.write)
    read = staticmethod(os.read)
    pwrite = staticmethod(os.pwrite)
    pread = staticmethod(os.pread)
    writev = staticmethod(os.writev)
    readv = staticmethod(os.readv)
    pwritev = staticmethod(os.pwritev)
    preadv = staticmethod(os.preadv)
    lseek = staticmethod(os.lseek)
    fstat = staticmethod(os.fstat)

    @staticmethod
    def fcntl(fd: int, cmd: int, arg: int = 0) -> int:
        return fcntl.fcntl(fd, cmd, arg)

    @staticmethod
    def ioctl(fd: int, request: int, payload: bytes) -> bytes:
        return fcntl.ioctl(fd, request, payload)

    def fd_path(self, fd: int) -> str:
        try:
            return os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            return f"fd:{fd}"


OS = OsLayer()
