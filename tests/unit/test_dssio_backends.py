"""dssio's none and record backends and the module-level calls, on real files; the record
backend's inner backends (the tier's ioctls through a stand-in for the system calls)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from swift_dss import dssio
from swift_dss.dssio import RECLASSIFY, SET_CLASS, DssioError, NoneBackend, OsLayer, RecordBackend
from swift_dss.dssio import backends as backends_module


@pytest.fixture
def fd(tmp_path: Path) -> Iterator[int]:
    fd = os.open(tmp_path / "obj", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        yield fd
    finally:
        dssio.release(fd)
        os.close(fd)


def _records(log: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in log.read_text().splitlines()]


def test_none_backend_is_plain_io(fd: int) -> None:
    b = NoneBackend()
    assert b.dwrite(fd, 5, b"hello ") == 6
    assert b.pdwrite(fd, 6, b"world", 6) == 5
    os.lseek(fd, 0, os.SEEK_SET)
    assert b.dread(fd, 5, 6) == b"hello "
    assert b.pdread(fd, 6, 5, 6) == b"world"
    b.reclassify(fd, 0, 11, 9)
    assert os.pread(fd, 100, 0) == b"hello world"


@pytest.mark.parametrize("bad", [-1, 256, 1.5, True, "3"])
def test_every_io_needs_one_valid_class(fd: int, bad: object) -> None:
    with pytest.raises(ValueError, match="0-255"):
        NoneBackend().dwrite(fd, bad, b"x")  # type: ignore[arg-type]
    assert os.fstat(fd).st_size == 0


def test_record_backend_logs_every_io(fd: int, tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    b = RecordBackend(str(log))
    b.dwrite(fd, 7, b"abcdef")
    b.dwrite(fd, 8, memoryview(b"ghij"))
    b.pdwrite(fd, 9, b"XY", 2)
    os.lseek(fd, 3, os.SEEK_SET)
    assert b.dread(fd, 7, 4) == b"Yefg"
    assert b.pdread(fd, 9, 2, 2) == b"XY"
    b.reclassify(fd, 0, 10, 30)
    path = str(tmp_path / "obj")
    assert _records(log) == [
        {"path": path, "op": "write", "offset": 0, "length": 6, "class": 7, "backend": "none"},
        {"path": path, "op": "write", "offset": 6, "length": 4, "class": 8, "backend": "none"},
        {"path": path, "op": "write", "offset": 2, "length": 2, "class": 9, "backend": "none"},
        {"path": path, "op": "read", "offset": 3, "length": 4, "class": 7, "backend": "none"},
        {"path": path, "op": "read", "offset": 2, "length": 2, "class": 9, "backend": "none"},
        {
            "path": path,
            "op": "reclassify",
            "offset": 0,
            "length": 10,
            "class": 30,
            "backend": "none",
        },
    ]
    assert os.pread(fd, 100, 0) == b"abXYefghij"
    b.close()


_WRITER = """
import os, sys
from swift_dss.dssio import RecordBackend
log, path, cls = sys.argv[1], sys.argv[2], int(sys.argv[3])
b = RecordBackend(log)
fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
for i in range(200):
    b.pdwrite(fd, cls, b"z" * 10, i * 10)
"""


def test_record_log_lines_never_interleave_across_processes(tmp_path: Path) -> None:
    log = str(tmp_path / "log.jsonl")
    procs = [
        subprocess.Popen([sys.executable, "-c", _WRITER, log, str(tmp_path / f"f{i}"), str(i)])
        for i in range(4)
    ]
    assert [p.wait(60) for p in procs] == [0] * 4
    entries = _records(Path(log))
    assert len(entries) == 800
    for i in range(4):
        mine = [e for e in entries if e["path"] == str(tmp_path / f"f{i}")]
        assert len(mine) == 200 and {e["class"] for e in mine} == {i}


def test_get_backend_shares_instances_and_rejects_unknown(tmp_path: Path) -> None:
    assert dssio.get_backend("none") is dssio.get_backend("none")
    log = str(tmp_path / "l")
    assert dssio.get_backend("record", log=log) is dssio.get_backend("record", log=log)
    assert dssio.get_backend("kernel", o_classify=0o40000000).o_classify == 0o40000000
    with pytest.raises(ValueError, match="unknown dssio backend"):
        dssio.get_backend("fast")
    with pytest.raises(ValueError, match="log"):
        RecordBackend("")


def test_module_level_calls_pick_none_off_a_tier_mount(fd: int) -> None:
    assert isinstance(dssio.backend_for_fd(fd), NoneBackend)
    assert dssio.dwrite(fd, 3, b"0123456789") == 10
    assert dssio.pdwrite(fd, 4, b"ab", 2) == 2
    os.lseek(fd, 0, os.SEEK_SET)
    assert dssio.dread(fd, 3, 4) == b"01ab"
    assert dssio.pdread(fd, 4, 3, 7) == b"789"
    dssio.reclassify(fd, 0, 10, 5)


class TierOs(OsLayer):
    """The system calls of a file on a dss-tier mount: ioctls are kept instead of sent."""

    def __init__(self, dev: int) -> None:
        self.dev = dev
        self.ioctls: list[tuple[int, bytes]] = []

    def ioctl(self, fd: int, request: int, payload: bytes) -> bytes:
        self.ioctls.append((request, payload))
        return payload

    def fstat(self, fd: int) -> os.stat_result:
        st = os.fstat(fd)
        return os.stat_result((*st[:2], self.dev, *st[3:10]))


@pytest.mark.parametrize("inner", ["tier", "auto"])
def test_record_hands_io_and_classes_to_the_tier(
    fd: int, tmp_path: Path, inner: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    osl = TierOs(dev=4242)
    # What auto would find in mountinfo for a dss-tier mount.
    detected = {4242: "tier"}
    monkeypatch.setattr(backends_module, "backend_name_for_dev", lambda dev: detected[dev])
    log = tmp_path / "log.jsonl"
    b = RecordBackend(str(log), inner=inner, osl=osl)
    assert b.dwrite(fd, 25, b"abcd") == 4
    assert b.pdwrite(fd, 25, b"ef", 4) == 2
    assert b.pdread(fd, 31, 6, 0) == b"abcdef"
    b.reclassify(fd, 0, 6, 26)
    # One SET_CLASS per change of class on the handle, then the reclassification.
    assert osl.ioctls == [
        (SET_CLASS.request, SET_CLASS.pack({"class": 25})),
        (SET_CLASS.request, SET_CLASS.pack({"class": 31})),
        (RECLASSIFY.request, RECLASSIFY.pack({"offset": 0, "length": 6, "class": 26})),
    ]
    assert [(e["op"], e["class"], e["backend"]) for e in _records(log)] == [
        ("write", 25, "tier"),
        ("write", 25, "tier"),
        ("read", 31, "tier"),
        ("reclassify", 26, "tier"),
    ]
    # After release a reused descriptor number starts without a class.
    b.release(fd)
    b.pdwrite(fd, 31, b"g", 6)
    assert osl.ioctls[-1] == (SET_CLASS.request, SET_CLASS.pack({"class": 31}))
    assert os.pread(fd, 100, 0) == b"abcdefg"


def test_record_with_tier_inner_off_a_tier_mount_neither_writes_nor_logs(
    fd: int, tmp_path: Path
) -> None:
    log = tmp_path / "log.jsonl"
    b = RecordBackend(str(log), inner="tier")
    with pytest.raises(DssioError, match="SET_CLASS"):
        b.dwrite(fd, 12, b"data")
    with pytest.raises(DssioError, match="RECLASSIFY"):
        b.reclassify(fd, 0, 4, 12)
    assert os.fstat(fd).st_size == 0
    assert not log.exists() or log.read_text() == ""


def test_record_auto_off_a_tier_mount_is_plain_io(fd: int, tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    b = RecordBackend(str(log))
    assert b.inner == "auto"
    assert b.dwrite(fd, 12, b"data") == 4
    b.reclassify(fd, 0, 4, 13)
    assert [e["backend"] for e in _records(log)] == ["none", "none"]
    with pytest.raises(ValueError, match="inner backend 'kernel'"):
        RecordBackend(str(log), inner="kernel")


def test_object_server_config_chooses_the_record_inner_backend(tmp_path: Path) -> None:
    from swift_dss.objserver import DeviceBackends

    log = str(tmp_path / "log.jsonl")
    conf = {"dssio_backend": "record", "dssio_record_log": log}
    backend = DeviceBackends(conf).for_device(str(tmp_path))
    assert isinstance(backend, RecordBackend) and backend.inner == "auto"
    backend = DeviceBackends({**conf, "dssio_record_inner": "Tier"}).for_device(str(tmp_path))
    assert isinstance(backend, RecordBackend) and backend.inner == "tier"
    with pytest.raises(ValueError, match="dssio_record_inner"):
        DeviceBackends({**conf, "dssio_record_inner": "kernel"})
