"""The system calls dssio's backends make, behind one object so tests can stand in for them.

Only unit tests of pure framing logic (the kernel backend's writev/readv vectors, which no
stock kernel can check) replace it; everything else runs on real files.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Sequence

BytesLike = bytes | bytearray | memoryview


class OsLayer:
    def write(self, fd: int, data: BytesLike) -> int:
        return os.write(fd, data)

    def read(self, fd: int, size: int) -> bytes:
        return os.read(fd, size)

    def pwrite(self, fd: int, data: BytesLike, offset: int) -> int:
        return os.pwrite(fd, data, offset)

    def pread(self, fd: int, size: int, offset: int) -> bytes:
        return os.pread(fd, size, offset)

    def writev(self, fd: int, buffers: Sequence[BytesLike]) -> int:
        return os.writev(fd, buffers)

    def readv(self, fd: int, buffers: Sequence[bytearray]) -> int:
        return os.readv(fd, buffers)

    def pwritev(self, fd: int, buffers: Sequence[BytesLike], offset: int) -> int:
        return os.pwritev(fd, buffers, offset)

    def preadv(self, fd: int, buffers: Sequence[bytearray], offset: int) -> int:
        return os.preadv(fd, buffers, offset)

    def lseek(self, fd: int, offset: int, whence: int) -> int:
        return os.lseek(fd, offset, whence)

    def fstat(self, fd: int) -> os.stat_result:
        return os.fstat(fd)

    def fcntl(self, fd: int, cmd: int, arg: int = 0) -> int:
        return fcntl.fcntl(fd, cmd, arg)

    def ioctl(self, fd: int, request: int, payload: bytes) -> bytes:
        return fcntl.ioctl(fd, request, payload)

    def fd_path(self, fd: int) -> str:
        try:
            return os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            return f"fd:{fd}"


OS = OsLayer()
