"""dssio's kernel backend: the paper's O_CLASSIFY framing, checked against a stand-in fd
layer (no stock kernel knows O_CLASSIFY)."""

from __future__ import annotations

import fcntl
from collections.abc import Sequence

import pytest

from swift_dss.dssio import DssioError, KernelBackend, OsLayer

O_CLASSIFY = 0o100000000


class FakeDssKernel(OsLayer):
    """A file per fd; on a file with O_CLASSIFY the first vector element is the class."""

    def __init__(self, honour_flag: bool = True) -> None:
        self.files: dict[int, bytearray] = {}
        self.pos: dict[int, int] = {}
        self.flags: dict[int, int] = {}
        self.honour_flag = honour_flag
        self.log: list[tuple[str, int, int, int]] = []  # op, offset, length, class
        self.calls: list[str] = []

    def open(self, fd: int, data: bytes = b"") -> int:
        self.files[fd], self.pos[fd], self.flags[fd] = bytearray(data), 0, 0o2
        return fd

    def fcntl(self, fd: int, cmd: int, arg: int = 0) -> int:
        self.calls.append("fcntl")
        if cmd == fcntl.F_GETFL:
            return self.flags[fd]
        if cmd == fcntl.F_SETFL:
            self.flags[fd] = arg if self.honour_flag else arg & ~O_CLASSIFY
            return 0
        raise AssertionError(cmd)

    def _class(self, fd: int, buffers: Sequence[object]) -> tuple[int, list[object]]:
        assert self.flags[fd] & O_CLASSIFY, "vectored I/O before O_CLASSIFY"
        tag = bytes(buffers[0])  # type: ignore[call-overload]
        assert len(tag) == 1, "the class element must be one byte"
        return tag[0], list(buffers[1:])

    def pwritev(self, fd: int, buffers: Sequence[object], offset: int) -> int:
        self.calls.append("pwritev")
        cls, data = self._class(fd, buffers)
        blob = b"".join(bytes(d) for d in data)  # type: ignore[call-overload]
        f = self.files[fd]
        f[offset : offset + len(blob)] = blob
        self.log.append(("write", offset, len(blob), cls))
        return len(blob)

    def writev(self, fd: int, buffers: Sequence[object]) -> int:
        n = self.pwritev(fd, buffers, self.pos[fd])
        self.pos[fd] += n
        return n

    def preadv(self, fd: int, buffers: Sequence[bytearray], offset: int) -> int:
        self.calls.append("preadv")
        cls, data = self._class(fd, buffers)
        (buf,) = data
        chunk = self.files[fd][offset : offset + len(buf)]  # type: ignore[arg-type]
        buf[: len(chunk)] = chunk  # type: ignore[index]
        self.log.append(("read", offset, len(chunk), cls))
        return len(chunk)

    def readv(self, fd: int, buffers: Sequence[bytearray]) -> int:
        n = self.preadv(fd, buffers, self.pos[fd])
        self.pos[fd] += n
        return n


def test_writes_and_reads_carry_a_leading_class_byte() -> None:
    k = FakeDssKernel()
    fd = k.open(3)
    b = KernelBackend(O_CLASSIFY, k)
    assert b.dwrite(fd, 23, b"Hello, world!") == 13
    assert b.pdwrite(fd, 200, memoryview(b"HELLO"), 0) == 5
    k.pos[fd] = 7
    assert b.dread(fd, 24, 100) == b"world!"
    assert b.pdread(fd, 0, 5, 0) == b"HELLO"
    # The class byte never lands in the file.
    assert bytes(k.files[fd]) == b"HELLO, world!"
    assert k.log == [
        ("write", 0, 13, 23),
        ("write", 0, 5, 200),
        ("read", 7, 6, 24),
        ("read", 0, 5, 0),
    ]
    assert k.flags[fd] & O_CLASSIFY


def test_flag_is_set_once() -> None:
    k = FakeDssKernel()
    fd = k.open(4)
    b = KernelBackend(O_CLASSIFY, k)
    b.dwrite(fd, 1, b"a")
    b.dwrite(fd, 1, b"b")
    # GETFL, SETFL, GETFL (check) on the first I/O; one GETFL after.
    assert k.calls == ["fcntl", "fcntl", "fcntl", "pwritev", "fcntl", "pwritev"]


def test_stock_kernel_is_refused_before_data_is_written() -> None:
    k = FakeDssKernel(honour_flag=False)
    fd = k.open(5)
    with pytest.raises(DssioError, match="O_CLASSIFY"):
        KernelBackend(O_CLASSIFY, k).dwrite(fd, 1, b"abc")
    assert bytes(k.files[fd]) == b""


def test_class_must_fit_one_byte() -> None:
    k = FakeDssKernel()
    fd = k.open(6)
    with pytest.raises(ValueError, match="0-255"):
        KernelBackend(O_CLASSIFY, k).dwrite(fd, 256, b"abc")
    with pytest.raises(ValueError):
        KernelBackend(0)


def test_reclassify_rewrites_the_same_bytes_with_the_new_class(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("swift_dss.dssio.backends._REWRITE_CHUNK", 4)
    k = FakeDssKernel()
    fd = k.open(7, b"0123456789")
    KernelBackend(O_CLASSIFY, k).reclassify(fd, 2, 7, 31)
    assert bytes(k.files[fd]) == b"0123456789"
    assert k.log == [
        ("read", 2, 4, 31),
        ("write", 2, 4, 31),
        ("read", 6, 3, 31),
        ("write", 6, 3, 31),
    ]
