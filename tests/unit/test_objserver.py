"""The dss object server in-process: real Swift object server code on a tmpfs device, with the
dssio record backend logging the class of every I/O."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from swift.common import storage_policy, utils
from swift.common.swob import Request
from swift.common.utils import Timestamp

from swift_dss.class_post import DATA_TIMESTAMP, FOR_DATA, KEPT_META
from swift_dss.dssio import NoneBackend
from swift_dss.formats import SECTOR, ClassMap, from_sysmeta, to_sysmeta
from swift_dss.objserver import ObjectController, app_factory, stored_classes

DEVICE = "sda1"
REPLICA = "sdb1"
OBJ_PATH = f"/{DEVICE}/0/a/c/"

SWIFT_CONF = """
[swift-hash]
swift_hash_path_suffix = dss-unit-test

[storage-policy:0]
name = gold
default = yes

[storage-policy:1]
name = silver
"""


def _run(*cmd: str) -> None:
    subprocess.run(cmd, check=True, capture_output=True)


@pytest.fixture
def tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A tmpfs mount (ext4 here cannot hold Swift's xattrs)."""
    mnt = tmp_path / "devices"
    mnt.mkdir()
    try:
        _run("mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", str(mnt))
    except (OSError, subprocess.CalledProcessError) as e:
        pytest.skip(f"cannot mount tmpfs: {e}")
    try:
        yield mnt
    finally:
        _run("umount", str(mnt))


@pytest.fixture
def policies(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    conf = tmp_path / "swift.conf"
    conf.write_text(SWIFT_CONF)
    monkeypatch.setattr(utils, "SWIFT_CONF_FILE", str(conf))
    monkeypatch.setattr(utils, "HASH_PATH_SUFFIX", b"dss-unit-test")
    storage_policy.reload_storage_policies()
    try:
        yield
    finally:
        monkeypatch.undo()
        storage_policy.reload_storage_policies()


class Server:
    def __init__(self, app: ObjectController, log: Path, devices: Path) -> None:
        self.app = app
        self.log = log
        self.devices = devices
        self._ts = iter(Timestamp(t) for t in range(1_700_000_000, 1_800_000_000))

    def timestamp(self) -> str:
        return next(self._ts).internal

    def request(
        self, method: str, obj: str, body: Any = None, policy: int = 0, **headers: str
    ) -> Any:
        hdrs = {"X-Timestamp": self.timestamp(), "X-Backend-Storage-Policy-Index": str(policy)}
        if method == "PUT":
            hdrs["Content-Type"] = "application/octet-stream"
        hdrs.update(headers)
        req = Request.blank(OBJ_PATH + obj, method=method, headers=hdrs)
        if body is not None:
            if isinstance(body, bytes):
                req.body = body
            else:
                # An iterable of chunks, sent without Content-Length like a chunked PUT.
                req.environ["wsgi.input"] = _ChunkedInput(body)
                req.headers["Transfer-Encoding"] = "chunked"
                req.headers.pop("Content-Length", None)
        resp = req.get_response(self.app)
        resp.body_bytes = resp.body  # drain the app_iter so the reader closes
        return resp

    def diskfile(self, obj: str, policy: int = 0, device: str = DEVICE) -> Any:
        return self.app.get_diskfile(
            device, "0", "a", "c", obj, policy=storage_policy.POLICIES[policy]
        )

    def records(
        self, obj: str, op: str, policy: int = 0, device: str = DEVICE
    ) -> list[dict[str, Any]]:
        """Log entries of ``op`` on ``obj``'s files (its temp file while written, its .data
        file after) with a non-empty range."""
        datadir = self.diskfile(obj, policy, device)._datadir
        out = []
        if not self.log.exists():
            return out
        for line in self.log.read_text().splitlines():
            entry = json.loads(line)
            if entry["op"] != op or os.path.dirname(entry["path"]) != datadir:
                continue
            if entry["length"] or op == "reclassify":
                out.append(entry)
        return out

    def clear_log(self) -> None:
        # Truncate rather than unlink: the backend keeps its O_APPEND descriptor open.
        if self.log.exists():
            os.truncate(self.log, 0)


class _ChunkedInput:
    def __init__(self, chunks: list[bytes]) -> None:
        self._chunks = list(chunks)
        self._buf = b""

    def read(self, size: int = -1) -> bytes:
        # Hand out one client chunk at a time, as eventlet's chunked reader does.
        if not self._buf and self._chunks:
            self._buf = self._chunks.pop(0)
        if size < 0:
            size = len(self._buf)
        out, self._buf = self._buf[:size], self._buf[size:]
        return out

    def readline(self, size: int = -1) -> bytes:
        return self.read(size)


@pytest.fixture
def server(tmpfs: Path, policies: None, tmp_path: Path) -> Server:
    (tmpfs / DEVICE).mkdir()
    (tmpfs / REPLICA).mkdir()
    log = tmp_path / "record.jsonl"
    conf = {
        "devices": str(tmpfs),
        "mount_check": "false",
        "dssio_backend": "record",
        "dssio_record_log": str(log),
        "log_requests": "false",
        # Small reads so that reads cross class boundaries often.
        "disk_chunk_size": "700",
    }
    app = app_factory({}, **conf)
    assert isinstance(app, ObjectController)
    return Server(app, log, tmpfs)


def classes_of(cmap: ClassMap | None) -> dict[str, str]:
    return to_sysmeta(cmap) if cmap is not None else {}


def assert_covered(entries: list[dict[str, Any]], cmap: ClassMap, start: int, end: int) -> None:
    """The entries cover [start, end) exactly once, each with the class of all its bytes."""
    pos = start
    for e in sorted(entries, key=lambda e: e["offset"]):
        assert e["offset"] == pos, (e, pos)
        pieces = list(cmap.segments(e["offset"], e["length"]))
        assert len(pieces) == 1, f"I/O {e} crosses a class boundary: {pieces}"
        assert pieces[0][2] == e["class"], (e, pieces)
        pos += e["length"]
    assert pos >= end, (pos, end)


def assert_reads_classified(entries: list[dict[str, Any]], cmap: ClassMap) -> None:
    for e in entries:
        pieces = list(cmap.segments(e["offset"], e["length"]))
        assert len(pieces) == 1 and pieces[0][2] == e["class"], (e, pieces)


def body(size: int) -> bytes:
    return bytes((i * 7 + i // 251) % 256 for i in range(size))


# ---------------------------------------------------------------------------------------


def test_object_class_put_and_get(server: Server) -> None:
    data = body(5000)
    cmap = ClassMap.build(23)
    resp = server.request("PUT", "o1", data, **classes_of(cmap))
    assert resp.status_int == 201
    assert resp.etag == hashlib.md5(data).hexdigest()
    writes = server.records("o1", "write")
    assert writes and {e["class"] for e in writes} == {23}
    assert_covered(writes, cmap, 0, len(data))

    resp = server.request("GET", "o1")
    assert resp.status_int == 200
    assert resp.body_bytes == data
    assert resp.headers["X-Object-Transient-Sysmeta-Dss-Class"] == "23"
    reads = server.records("o1", "read")
    assert {e["class"] for e in reads} == {23}
    assert_covered(reads, cmap, 0, len(data))
    assert all(e["path"].endswith(".data") for e in reads)


def test_swifts_page_cache_drops_reach_the_storage_below(server: Server) -> None:
    data = body(5000)
    server.clear_log()
    assert server.request("PUT", "dropped", data).status_int == 201
    drops = server.records("dropped", "drop_cache")
    assert [(e["offset"], e["length"]) for e in drops] == [(0, 5000)], drops
    # An authenticated GET is not kept cached (keep_cache_private is off): each stretch
    # read is dropped, and together the drops cover the object.
    server.clear_log()
    resp = server.request("GET", "dropped", **{"X-Auth-Token": "t"})
    assert resp.status_int == 200 and resp.body_bytes == data
    drops = server.records("dropped", "drop_cache")
    assert drops and sum(e["length"] for e in drops) >= 5000, drops
    # One Swift keeps cached (small, and no token): no drop.
    server.clear_log()
    assert server.request("GET", "dropped").body_bytes == data
    assert server.records("dropped", "drop_cache") == []


def test_ranges_with_default(server: Server) -> None:
    data = body(10 * SECTOR + 100)
    cmap = ClassMap.build(15, [(2, 3, 24), (7, 1, 31)])
    assert server.request("PUT", "o2", data, **classes_of(cmap)).status_int == 201
    writes = server.records("o2", "write")
    assert_covered(writes, cmap, 0, len(data))
    assert [e["class"] for e in sorted(writes, key=lambda e: e["offset"])] == [15, 24, 15, 31, 15]

    resp = server.request("GET", "o2")
    assert resp.body_bytes == data
    reads = server.records("o2", "read")
    assert_covered(reads, cmap, 0, len(data))


def test_chunked_put_straddling_boundaries(server: Server) -> None:
    data = body(8 * SECTOR)
    cmap = ClassMap.build(0, [(1, 2, 12), (5, 1, 22)])
    # Chunk edges at 300, 1000, 1100, 2900: each crosses or touches a class boundary.
    chunks = [data[:300], data[300:1000], data[1000:1100], data[1100:2900], data[2900:]]
    resp = server.request("PUT", "o3", chunks, **classes_of(cmap))
    assert resp.status_int == 201
    assert resp.etag == hashlib.md5(data).hexdigest()
    writes = server.records("o3", "write")
    assert_covered(writes, cmap, 0, len(data))
    # 300 | 212+300+... : a chunk crossing a boundary becomes several I/Os.
    assert len(writes) > len(chunks)
    assert server.request("GET", "o3").body_bytes == data


def test_range_get(server: Server) -> None:
    data = body(6 * SECTOR)
    cmap = ClassMap.build(3, [(2, 2, 40)])
    server.request("PUT", "o4", data, **classes_of(cmap))
    server.clear_log()
    resp = server.request("GET", "o4", Range="bytes=900-2100")
    assert resp.status_int == 206
    assert resp.body_bytes == data[900:2101]
    reads = server.records("o4", "read")
    assert reads[0]["offset"] == 900
    assert_reads_classified(reads, cmap)
    covered = sum(e["length"] for e in reads)
    assert covered >= 2101 - 900
    assert {e["class"] for e in reads} >= {3, 40}


def test_multi_range_get(server: Server) -> None:
    data = body(6 * SECTOR)
    cmap = ClassMap.build(3, [(2, 2, 40)])
    server.request("PUT", "o4m", data, **classes_of(cmap))
    server.clear_log()
    resp = server.request("GET", "o4m", Range="bytes=10-20,1500-1600")
    assert resp.status_int == 206
    assert data[10:21] in resp.body_bytes and data[1500:1601] in resp.body_bytes
    reads = server.records("o4m", "read")
    assert {e["offset"] for e in reads} >= {10, 1500}
    assert_reads_classified(reads, cmap)


def test_unclassified_put_is_class_0(server: Server) -> None:
    data = body(3000)
    assert server.request("PUT", "o5", data).status_int == 201
    writes = server.records("o5", "write")
    assert_covered(writes, ClassMap(), 0, len(data))
    assert {e["class"] for e in writes} == {0}
    assert server.request("GET", "o5").body_bytes == data
    assert {e["class"] for e in server.records("o5", "read")} == {0}


def test_post_reclassifies_over_object_length(server: Server) -> None:
    data = body(4 * SECTOR + 17)
    old = ClassMap.build(11)
    new = ClassMap.build(20, [(1, 1, 29)])
    put = server.request("PUT", "o6", data, **classes_of(old))
    etag = put.etag
    resp = server.request("POST", "o6", **classes_of(new))
    assert resp.status_int == 202
    recl = server.records("o6", "reclassify")
    assert [(e["offset"], e["length"], e["class"]) for e in recl] == [
        (0, SECTOR, 20),
        (SECTOR, SECTOR, 29),
        (2 * SECTOR, 2 * SECTOR + 17, 20),
    ]
    assert all(e["path"].endswith(".data") for e in recl)

    server.clear_log()
    got = server.request("GET", "o6")
    assert got.body_bytes == data
    assert got.etag == etag
    assert got.headers["X-Object-Transient-Sysmeta-Dss-Class"] == "20"
    assert_covered(server.records("o6", "read"), new, 0, len(data))


def test_post_with_same_classes_or_without_sysmeta_does_not_reclassify(server: Server) -> None:
    cmap = ClassMap.build(11)
    server.request("PUT", "o7", body(2000), **classes_of(cmap))
    assert server.request("POST", "o7", **classes_of(cmap)).status_int == 202
    # The same classes in another form: a range of the object class changes no byte.
    alike = ClassMap.build(11, [(1, 2, 11)])
    assert server.request("POST", "o7", **classes_of(alike)).status_int == 202
    assert server.request("POST", "o7", **{"X-Object-Meta-Color": "blue"}).status_int == 202
    assert server.records("o7", "reclassify") == []


def test_a_post_for_data_an_upload_replaced_is_refused(server: Server) -> None:
    first, second = server.timestamp(), server.timestamp()
    server.request("PUT", "o20", body(1000), **{"X-Timestamp": first, "X-Object-Meta-V": "1"})
    server.request("PUT", "o20", body(2000), **{"X-Timestamp": second, "X-Object-Meta-V": "2"})
    stale = {DATA_TIMESTAMP: first, "X-Object-Meta-V": "1"}
    refused = server.request("POST", "o20", **stale, **classes_of(ClassMap.build(12)))
    assert refused.status_int == 409
    assert b"replaced" in refused.body_bytes
    head = server.request("HEAD", "o20")
    assert head.headers["X-Object-Meta-V"] == "2"
    assert "X-Object-Transient-Sysmeta-Dss-Class" not in head.headers
    current = {DATA_TIMESTAMP: second, "X-Object-Meta-V": "2"}
    taken = server.request("POST", "o20", **current, **classes_of(ClassMap.build(12)))
    assert taken.status_int == 202
    assert server.request("HEAD", "o20").headers["X-Object-Transient-Sysmeta-Dss-Class"] == "12"
    # An object that is gone gets Swift's own answer.
    assert server.request("POST", "o21", **current).status_int == 404


@pytest.mark.parametrize("kept", [True, False])
def test_classes_set_for_other_data_give_way_to_an_upload_landing_after(
    server: Server, kept: bool
) -> None:
    """An upload under way while a POST set classes for the data before it: the POST is
    newer, so Swift applies its .meta to the upload; what it set for the older data is
    dropped, and the metadata it re-sent too when it was the object's own."""
    older, upload, post = (server.timestamp() for _ in range(3))
    server.request("PUT", "o22", body(1000), **{"X-Timestamp": older, "X-Object-Meta-V": "old"})
    meta = {"X-Timestamp": post, FOR_DATA: older, "X-Object-Meta-V": "old" if kept else "post"}
    if kept:
        meta[KEPT_META] = "yes"
    assert server.request("POST", "o22", **meta, **classes_of(ClassMap.build(12))).status_int == 202
    own = {"X-Timestamp": upload, "X-Object-Meta-V": "new", **classes_of(ClassMap.build(21))}
    assert server.request("PUT", "o22", body(3000), **own).status_int == 201
    got = server.request("GET", "o22")
    assert got.body_bytes == body(3000)
    # Swift's own rule: the POST is the newer, and its timestamp stays the object's.
    assert got.headers["X-Timestamp"] == post
    assert got.headers["X-Object-Meta-V"] == ("new" if kept else "post")
    assert got.headers["X-Object-Transient-Sysmeta-Dss-Class"] == "21"
    assert_reads_classified(server.records("o22", "read"), ClassMap.build(21))
    # Classes set for the data that is there hold, as before.
    meta = {FOR_DATA: upload, **classes_of(ClassMap.build(13))}
    assert server.request("POST", "o22", **meta).status_int == 202
    assert server.request("HEAD", "o22").headers["X-Object-Transient-Sysmeta-Dss-Class"] == "13"


def test_post_classifies_an_unclassified_object(server: Server) -> None:
    data = body(1500)
    server.request("PUT", "o8", data)
    assert server.request("POST", "o8", **classes_of(ClassMap.build(0))).status_int == 202
    assert server.records("o8", "reclassify") == []
    assert server.request("POST", "o8", **classes_of(ClassMap.build(5))).status_int == 202
    recl = server.records("o8", "reclassify")
    assert [(e["offset"], e["length"], e["class"]) for e in recl] == [(0, 1500, 5)]


def test_head_answers_classes_without_data_io(server: Server) -> None:
    cmap = ClassMap.build(9, [(0, 1, 30)])
    server.request("PUT", "o9", body(1200), **classes_of(cmap))
    server.clear_log()
    resp = server.request("HEAD", "o9")
    assert resp.status_int == 200
    assert resp.headers["X-Object-Transient-Sysmeta-Dss-Class"] == "9"
    assert server.records("o9", "read") == []


def test_corrupt_sysmeta_is_unclassified(server: Server) -> None:
    data = body(1000)
    resp = server.request(
        "PUT",
        "o10",
        data,
        **{
            "X-Object-Transient-Sysmeta-Dss-Class": "9",
            "X-Object-Transient-Sysmeta-Dss-Ranges": "2",
            "X-Object-Transient-Sysmeta-Dss-Ranges-0": "!!!",
        },
    )
    assert resp.status_int == 201
    assert {e["class"] for e in server.records("o10", "write")} == {0}
    got = server.request("GET", "o10")
    assert got.status_int == 200 and got.body_bytes == data
    assert {e["class"] for e in server.records("o10", "read")} == {0}


def test_ranges_of_the_default_class_write_and_read_as_one_class(server: Server) -> None:
    data = body(6 * SECTOR)
    cmap = ClassMap.build(21, [(1, 2, 21)])
    assert cmap.uniform_class == 21
    chunks = [data[:700], data[700:]]
    assert server.request("PUT", "o13", chunks, **classes_of(cmap)).status_int == 201
    writes = server.records("o13", "write")
    assert {e["class"] for e in writes} == {21}
    assert_covered(writes, cmap, 0, len(data))
    assert server.request("GET", "o13").body_bytes == data
    assert_covered(server.records("o13", "read"), cmap, 0, len(data))


def test_stored_classes_reads_metadata_in_any_case() -> None:
    cmap = ClassMap.build(5, [(0, 1, 7)])
    meta = {"Content-Length": "512", **to_sysmeta(cmap)}
    lower = {k.lower(): v for k, v in meta.items()}
    assert stored_classes(meta, None, "o") == cmap
    assert stored_classes(lower, None, "o") == cmap
    assert stored_classes({"Content-Length": "512"}, None, "o") is None


def test_other_policy_and_empty_object(server: Server) -> None:
    cmap = ClassMap.build(27)
    assert server.request("PUT", "o11", body(800), policy=1, **classes_of(cmap)).status_int == 201
    assert {e["class"] for e in server.records("o11", "write", policy=1)} == {27}
    assert server.request("PUT", "o12", b"", **classes_of(cmap)).status_int == 201
    assert server.records("o12", "write") == []
    assert server.request("GET", "o12").body_bytes == b""
    assert server.request("POST", "o12", **classes_of(ClassMap.build(3))).status_int == 202
    assert server.records("o12", "reclassify") == []


def test_config_is_checked_at_start(tmpfs: Path, policies: None) -> None:
    base = {"devices": str(tmpfs), "mount_check": "false"}
    with pytest.raises(ValueError, match="dssio_record_log"):
        app_factory({}, **base, dssio_backend="record")
    with pytest.raises(ValueError, match="dssio_kernel_o_classify"):
        app_factory({}, **base, dssio_backend_sdb="kernel")
    with pytest.raises(ValueError, match="expected one of"):
        app_factory({}, **base, dssio_backend="fast")
    app = app_factory({}, **base, dssio_backend_sdb="none")
    assert app.dssio.name_for(str(tmpfs / "sdb")) == "none"
    # auto: tmpfs is not a dss-tier mount.
    assert app.dssio.name_for(str(tmpfs)) == "none"


def _ssync_update(method: str, path: str, headers: dict[str, str], data: bytes = b"") -> bytes:
    lines = [f"{method} {path}"] + [f"{k}: {v}" for k, v in sorted(headers.items())]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + data


def test_ssync_classifies_replicas_on_arrival(server: Server) -> None:
    """An SSYNC request to the real receiver, with the PUT and POST subrequests built from
    the source diskfile the way ssync's sender builds them."""
    data = body(5 * SECTOR + 3)
    put_classes = ClassMap.build(14, [(1, 2, 25)])
    post_classes = ClassMap.build(19, [(4, 1, 26)])
    server.request("PUT", "r1", data, **classes_of(put_classes))
    server.request("POST", "r1", **classes_of(post_classes), **{"X-Object-Meta-K": "v"})
    server.clear_log()

    src = server.diskfile("r1")
    with src.open():
        put_headers = {
            k: v
            for k, v in src.get_datafile_metadata().items()
            if k not in ("name", "Content-Length")
        }
        put_headers["Content-Length"] = str(src.content_length)
        post_headers = dict(src.get_metafile_metadata())
        sent = b"".join(src.reader())
    assert sent == data
    # The sender's read of the source went through dssio with the current classes.
    assert_covered(server.records("r1", "read"), post_classes, 0, len(data))

    ssync_body = (
        b":MISSING_CHECK: START\r\n:MISSING_CHECK: END\r\n:UPDATES: START\r\n"
        + _ssync_update("PUT", "/a/c/r1", put_headers, sent)
        + _ssync_update("POST", "/a/c/r1", post_headers)
        + b":UPDATES: END\r\n"
    )
    req = Request.blank(
        f"/{REPLICA}/0",
        method="SSYNC",
        body=ssync_body,
        headers={"X-Backend-Storage-Policy-Index": "0"},
    )
    resp = req.get_response(server.app)
    assert resp.status_int == 200
    assert b":ERROR:" not in resp.body, resp.body
    assert b":UPDATES: END" in resp.body

    writes = server.records("r1", "write", device=REPLICA)
    assert_covered(writes, put_classes, 0, len(data))
    recl = server.records("r1", "reclassify", device=REPLICA)
    assert [(e["offset"], e["length"], e["class"]) for e in recl] == [
        (s[0], s[1], s[2]) for s in post_classes.segments(0, len(data))
    ]
    got = Request.blank(
        f"/{REPLICA}/0/a/c/r1", headers={"X-Backend-Storage-Policy-Index": "0"}
    ).get_response(server.app)
    assert got.body == data
    assert_covered(server.records("r1", "read", device=REPLICA), post_classes, 0, len(data))


def test_none_backend_does_stock_data_io_and_keeps_classes_in_metadata(
    tmpfs: Path, policies: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With dssio none no class reaches the device, so the data I/O is stock Swift's: no
    classified reader or writer path, no reclassifying reopen; the class map still lives
    in the object's metadata and comes back with it."""
    (tmpfs / DEVICE).mkdir()
    conf = {"devices": str(tmpfs), "mount_check": "false", "dssio_backend": "none"}
    server = Server(app_factory({}, **conf), tmp_path / "unused.jsonl", tmpfs)

    def refuse(*_args: Any, **_kwargs: Any) -> None:
        raise AssertionError("dssio I/O on a device no class reaches")

    monkeypatch.setattr(NoneBackend, "dwrite", refuse)
    monkeypatch.setattr(NoneBackend, "dread", refuse)
    monkeypatch.setattr(NoneBackend, "reclassify", refuse)
    data = body(3 * SECTOR + 5)
    cmap = ClassMap.build(14, [(1, 2, 25)])
    assert server.request("PUT", "n1", data, **classes_of(cmap)).status_int == 201
    resp = server.request("GET", "n1")
    assert resp.body_bytes == data
    assert from_sysmeta(resp.headers) == cmap
    assert server.request("POST", "n1", **classes_of(ClassMap.build(3))).status_int == 202
    assert from_sysmeta(server.request("HEAD", "n1").headers) == ClassMap.build(3)
    assert server.request("GET", "n1", Range="bytes=5-20").body_bytes == data[5:21]
