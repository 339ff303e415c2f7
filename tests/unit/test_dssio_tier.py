"""dssio's tier backend: request numbers and payloads from ioctl.toml, and errors on files
that are not on a dss-tier mount (a regular file answers the ioctl with ENOTTY)."""

from __future__ import annotations

import errno
import os
import struct
from collections.abc import Iterator
from pathlib import Path

import pytest

from swift_dss.dssio import (
    DROP_CACHE,
    RECLASSIFY,
    SET_CLASS,
    DssioError,
    OsLayer,
    TierBackend,
    load_ioctls,
)


@pytest.fixture
def fd(tmp_path: Path) -> Iterator[int]:
    fd = os.open(tmp_path / "obj", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        yield fd
    finally:
        os.close(fd)


def test_request_numbers_follow_the_contract() -> None:
    assert SET_CLASS.request == 0x40084401
    assert RECLASSIFY.request == 0x40184402
    assert DROP_CACHE.request == 0x40104403
    assert (SET_CLASS.size, RECLASSIFY.size, DROP_CACHE.size) == (8, 24, 16)


def test_payloads_are_little_endian_in_field_order() -> None:
    assert SET_CLASS.pack({"class": 23}) == struct.pack("<II", 23, 0)
    assert RECLASSIFY.pack({"offset": 1 << 33, "length": 4096, "class": 255}) == struct.pack(
        "<QQII", 1 << 33, 4096, 255, 0
    )
    with pytest.raises(ValueError, match="missing"):
        SET_CLASS.pack({})
    with pytest.raises(ValueError, match="unknown"):
        SET_CLASS.pack({"class": 1, "colour": 2})


def test_contract_is_checked_when_loaded(tmp_path: Path) -> None:
    bad = tmp_path / "ioctl.toml"
    bad.write_text('type = 0x44\n[x]\nnr = 1\nsize = 8\nfields = [["class", "u32"]]\n')
    with pytest.raises(ValueError, match="take 4 bytes"):
        load_ioctls(bad)
    bad.write_text('type = 0x44\n[x]\nnr = 1\nsize = 4\nfields = [["class", "i32"]]\n')
    with pytest.raises(ValueError, match="unknown"):
        load_ioctls(bad)


def test_failing_set_class_raises_instead_of_dropping_the_class(fd: int) -> None:
    b = TierBackend()
    with pytest.raises(DssioError, match="SET_CLASS") as info:
        b.dwrite(fd, 12, b"data")
    assert info.value.errno == errno.ENOTTY
    assert "dss-tier" in str(info.value)
    # Nothing was written without its class.
    assert os.fstat(fd).st_size == 0
    with pytest.raises(DssioError, match="SET_CLASS"):
        b.dread(fd, 12, 4)
    with pytest.raises(DssioError, match="RECLASSIFY"):
        b.reclassify(fd, 0, 0, 3)
    with pytest.raises(DssioError, match="DROP_CACHE"):
        b.drop_cache(fd, 0, 0)


class _IoctlRecorder(OsLayer):
    """Real file I/O; ioctls are recorded and succeed, to check when they are made."""

    def __init__(self) -> None:
        self.ioctls: list[tuple[int, int, bytes]] = []

    def ioctl(self, fd: int, request: int, payload: bytes) -> bytes:
        self.ioctls.append((fd, request, payload))
        return payload


def test_class_is_set_once_per_handle_until_it_changes(fd: int) -> None:
    osl = _IoctlRecorder()
    b = TierBackend(osl)
    b.dwrite(fd, 5, b"aaaa")
    b.dwrite(fd, 5, b"bbbb")
    b.pdread(fd, 5, 4, 0)
    b.dwrite(fd, 6, b"cccc")
    assert [(r, p) for _, r, p in osl.ioctls] == [
        (SET_CLASS.request, SET_CLASS.pack({"class": 5})),
        (SET_CLASS.request, SET_CLASS.pack({"class": 6})),
    ]
    assert os.pread(fd, 100, 0) == b"aaaabbbbcccc"
    # A released descriptor number may name another open file next: set the class again.
    b.release(fd)
    b.dwrite(fd, 6, b"dddd")
    assert len(osl.ioctls) == 3
    b.reclassify(fd, 4, 8, 9)
    assert osl.ioctls[-1][1:] == (
        RECLASSIFY.request,
        RECLASSIFY.pack({"offset": 4, "length": 8, "class": 9}),
    )
    with pytest.raises(ValueError):
        b.reclassify(fd, -1, 8, 9)
    b.drop_cache(fd, 4096, 0)
    assert osl.ioctls[-1][1:] == (
        DROP_CACHE.request,
        DROP_CACHE.pack({"offset": 4096, "length": 0}),
    )
    with pytest.raises(ValueError):
        b.drop_cache(fd, 0, -1)
