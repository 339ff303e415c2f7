"""Malformed class information: every case gets a 4xx with a one-line reason, nothing is stored,
and the cluster stays healthy."""

from __future__ import annotations

import struct
import uuid

import pytest
import requests

from swift_dss.formats import encode_blocks, encode_object, encode_ranges

from .helpers import Swift, payload

pytestmark = pytest.mark.integration


def hdr(version: int, cls_bytes: int, rest: bytes) -> bytes:
    return b"DS" + bytes([version, cls_bytes]) + rest


DATA = payload(4096)

# (name, method, headers, body, expected status, words the reason must contain)
CASES = [
    ("class too high", "PUT", {"X-DSS-Object-Class": "256"}, DATA, 400, "outside"),
    ("class negative", "PUT", {"X-DSS-Object-Class": "-1"}, DATA, 400, "decimal"),
    ("class not a number", "PUT", {"X-DSS-Object-Class": "abc"}, DATA, 400, "decimal"),
    ("class empty", "PUT", {"X-DSS-Object-Class": ""}, DATA, 400, "decimal"),
    ("class fraction", "PUT", {"X-DSS-Object-Class": "25.5"}, DATA, 400, "decimal"),
    ("class hex", "PUT", {"X-DSS-Object-Class": "0x19"}, DATA, 400, "decimal"),
    ("class 11 digits", "PUT", {"X-DSS-Object-Class": "25000000000"}, DATA, 400, "decimal"),
    ("range missing class", "PUT", {"X-DSS-Range-Class": "0-64"}, DATA, 400, "offset-length"),
    ("range trailing comma", "PUT", {"X-DSS-Range-Class": "0-4-25,"}, DATA, 400, "offset-length"),
    ("range zero length", "PUT", {"X-DSS-Range-Class": "0-0-25"}, DATA, 400, "empty"),
    ("range overlap", "PUT", {"X-DSS-Range-Class": "0-4-25,2-4-26"}, DATA, 400, "overlaps"),
    ("range past end", "PUT", {"X-DSS-Range-Class": "0-9-25"}, DATA, 400, "object has 8"),
    ("range class high", "PUT", {"X-DSS-Range-Class": "0-4-300"}, DATA, 400, "outside"),
    ("range offset huge", "PUT", {"X-DSS-Range-Class": "4294967295-2-25"}, DATA, 400, "2^32"),
    ("range space inside", "PUT", {"X-DSS-Range-Class": "0 4-4-25"}, DATA, 400, "offset-length"),
    ("range negative", "PUT", {"X-DSS-Range-Class": "0--4-25"}, DATA, 400, "offset-length"),
    ("range dashes only", "PUT", {"X-DSS-Range-Class": "--"}, DATA, 400, "offset-length"),
    (
        "too many ranges",
        "PUT",
        {"X-DSS-Range-Class": ",".join(f"{i}-1-{25 + i % 2}" for i in range(300))},
        payload(600_000),
        413,
        "limit is 256",
    ),
    (
        "range header too long",
        "PUT",
        {"X-DSS-Range-Class": "0" * 8100 + "-1-25"},
        DATA,
        413,
        "limit is 8000",
    ),
    ("object file empty", "PUT", {"X-DSS-Object-File": "True"}, b"", 400, "truncated"),
    # Taken as false, the class file would be stored as the object's first bytes.
    ("object file flag", "PUT", {"X-DSS-Object-File": "Tru"}, DATA, 400, "true or false"),
    ("class file flag", "PUT", {"X-DSS-Class-File": ""}, DATA, 400, "true or false"),
    ("object file magic", "PUT", {"X-DSS-Object-File": "True"}, b"XX" + bytes(15), 400, "magic"),
    (
        "object file version",
        "PUT",
        {"X-DSS-Object-File": "True"},
        hdr(7, 1, bytes(13)),
        400,
        "VER_ID",
    ),
    (
        "object file cls 0",
        "PUT",
        {"X-DSS-Object-File": "1"},
        hdr(0, 0, bytes(13)),
        400,
        "CLS_BYTES",
    ),
    (
        "object file cls 5",
        "PUT",
        {"X-DSS-Object-File": "1"},
        hdr(0, 5, bytes(17)),
        400,
        "CLS_BYTES",
    ),
    (
        "object file reserved",
        "PUT",
        {"X-DSS-Object-File": "True"},
        hdr(0, 1, b"\x01" + bytes(11)) + b"\x19" + DATA,
        400,
        "reserved",
    ),
    (
        "range file truncated",
        "PUT",
        {"X-DSS-Object-File": "True"},
        hdr(1, 1, struct.pack("<I", 3) + bytes(8)) + struct.pack("<IIB", 0, 1, 25),
        400,
        "truncated",
    ),
    (
        "range file overlap",
        "PUT",
        {"X-DSS-Object-File": "True"},
        encode_ranges([(0, 4, 25), (3, 1, 26)]) + DATA,
        400,
        "overlaps",
    ),
    (
        "range file past data",
        "PUT",
        {"X-DSS-Object-File": "True"},
        encode_ranges([(0, 100, 25)]) + DATA,
        400,
        "object has 8",
    ),
    (
        "block file zero sectors",
        "PUT",
        {"X-DSS-Object-File": "True"},
        hdr(2, 1, struct.pack("<II", 1, 0) + bytes(4)) + b"\x19" + DATA,
        400,
        "BLK_SECTORS",
    ),
    (
        "class section over limit",
        "PUT",
        {"X-DSS-Object-File": "True"},
        hdr(1, 1, struct.pack("<I", 1_000_000) + bytes(8)) + DATA,
        413,
        "limit",
    ),
    (
        "object file and range header",
        "PUT",
        {"X-DSS-Object-File": "True", "X-DSS-Range-Class": "0-1-25"},
        encode_object(25) + DATA,
        400,
        "send one",
    ),
    (
        "object file class high",
        "PUT",
        {"X-DSS-Object-File": "True"},
        encode_object(300, 2) + DATA,
        400,
        "outside",
    ),
    (
        "block file class high",
        "PUT",
        {"X-DSS-Object-File": "True"},
        encode_blocks([25, 999], 1, 2) + DATA,
        400,
        "outside",
    ),
    (
        "meta form malformed beside header",
        "PUT",
        {"X-DSS-Object-Class": "25", "X-Object-Meta-Dss-Object-Class": "abc"},
        DATA,
        400,
        "decimal",
    ),
    (
        "meta form class high",
        "PUT",
        {"X-Object-Meta-Dss-Object-Class": "999"},
        DATA,
        400,
        "outside",
    ),
]

EXISTING_CASES = [
    (
        "class file with data",
        "PUT",
        {"X-DSS-Class-File": "True"},
        encode_object(25) + b"x",
        400,
        "data",
    ),
    (
        "class file too long",
        "PUT",
        {"X-DSS-Class-File": "True"},
        encode_ranges([(i, 1, 25) for i in range(0, 20_000, 2)]),
        413,
        "limit",
    ),
    ("class file bad magic", "PUT", {"X-DSS-Class-File": "True"}, b"DX" + bytes(15), 400, "magic"),
    # A copy's body is its source's data: it was read as a class file.
    (
        "copy with a class file",
        "PUT",
        {"X-Copy-From": "bad/source", "X-DSS-Class-File": "true"},
        b"",
        400,
        "cannot go with a copy",
    ),
    (
        "copy with an object file",
        "PUT",
        {"X-Copy-From": "bad/source", "X-DSS-Object-File": "true"},
        b"",
        400,
        "cannot go with a copy",
    ),
    (
        "class file past end",
        "PUT",
        {"X-DSS-Class-File": "1"},
        encode_ranges([(0, 99, 25)]),
        400,
        "object",
    ),
    ("post bad class", "POST", {"X-DSS-Object-Class": "abc"}, None, 400, "decimal"),
    ("post range past end", "POST", {"X-DSS-Range-Class": "8-1-25"}, None, 400, "object has 8"),
    ("post reserved class", "POST", {"X-DSS-Object-Class": "3"}, None, 403, "may not be set"),
    (
        "get overlapping ranges",
        "GET",
        {"X-DSS-Range-Class": "0-2-25,1-1-26"},
        None,
        400,
        "overlaps",
    ),
    ("get class too high", "GET", {"X-DSS-Object-Class": "1000"}, None, 400, "outside"),
    # A POST's body is not read: its class file would be lost, and its user metadata with
    # it, as a POST without X-Object-Meta-* headers drops them.
    ("post class file", "POST", {"X-DSS-Class-File": "true"}, encode_object(26), 400, "a PUT"),
    ("post malformed flag", "POST", {"X-DSS-Object-File": "tru"}, None, 400, "true or false"),
    (
        "both flags",
        "PUT",
        {"X-DSS-Class-File": "1", "X-DSS-Object-File": "1"},
        encode_object(26),
        400,
        "exclude each other",
    ),
]


@pytest.fixture(scope="module")
def swift(saio: object) -> Swift:
    s = Swift.with_container(saio, "bad")
    assert s.request("PUT", "bad/source", data=DATA).status_code == 201
    return s


def check_reason(resp: requests.Response, status: int, words: str) -> None:
    assert resp.status_code == status, (resp.status_code, resp.text)
    reason = resp.text.strip()
    assert reason and "\n" not in reason, reason
    assert words in reason, reason


@pytest.mark.parametrize(("name", "method", "headers", "body", "status", "words"), CASES)
def test_bad_put_is_refused_and_stores_nothing(
    swift: Swift, name: str, method: str, headers: dict, body: bytes, status: int, words: str
) -> None:
    obj = f"bad/{uuid.uuid4().hex}"
    check_reason(swift.request(method, obj, headers=headers, data=body), status, words)
    assert swift.request("HEAD", obj).status_code == 404


@pytest.mark.parametrize(("name", "method", "headers", "body", "status", "words"), EXISTING_CASES)
def test_bad_reclassification_changes_nothing(
    swift: Swift, name: str, method: str, headers: dict, body: bytes | None, status: int, words: str
) -> None:
    obj = f"bad/{uuid.uuid4().hex}"
    swift.request(
        "PUT", obj, data=DATA, headers={"X-DSS-Object-Class": "25", "X-Object-Meta-K": "v"}
    )
    check_reason(swift.request(method, obj, headers=headers, data=body), status, words)
    head = swift.request("HEAD", obj)
    assert head.headers["X-DSS-Object-Class"] == "25"
    assert head.headers["X-Object-Meta-K"] == "v"
    assert "X-DSS-Range-Class" not in head.headers
    assert swift.request("GET", obj).content == DATA


def test_cluster_healthy_after_bad_input(swift: Swift, saio: object) -> None:
    assert len(CASES) + len(EXISTING_CASES) >= 30
    assert requests.get(f"{saio.proxy_url}/healthcheck", timeout=10).text == "OK"
    obj = f"bad/{uuid.uuid4().hex}"
    assert (
        swift.request("PUT", obj, data=DATA, headers={"X-DSS-Object-Class": "25"}).status_code
        == 201
    )
    assert swift.request("GET", obj).content == DATA
