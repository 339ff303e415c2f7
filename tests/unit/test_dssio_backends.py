"""dssio's none and record backends and the module-level calls, on real files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from swift_dss import dssio
from swift_dss.dssio import NoneBackend, RecordBackend


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
        {"path": path, "op": "write", "offset": 0, "length": 6, "class": 7},
        {"path": path, "op": "write", "offset": 6, "length": 4, "class": 8},
        {"path": path, "op": "write", "offset": 2, "length": 2, "class": 9},
        {"path": path, "op": "read", "offset": 3, "length": 4, "class": 7},
        {"path": path, "op": "read", "offset": 2, "length": 2, "class": 9},
        {"path": path, "op": "reclassify", "offset": 0, "length": 10, "class": 30},
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
