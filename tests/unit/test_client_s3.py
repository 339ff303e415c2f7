"""The boto3 hooks, against a tiny local S3 stand-in that records every request it gets.

The stand-in checks each request's SigV4 signature itself, so a header added after signing
would show up as a bad signature rather than pass unnoticed.
"""

from __future__ import annotations

import hashlib
import hmac
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import boto3
import pytest
from boto3.s3.transfer import TransferConfig

from swift_dss.client.s3 import OPERATIONS, attach_classes, dss_s3_client, s3_config
from swift_dss.formats import ClassMap
from tests.unit.serving import serving

ACCESS, SECRET = "test:tester", "testing"
LAST_MODIFIED = "2024-01-01T00:00:00.000Z"


@dataclass
class Seen:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body_len: int
    signature_ok: bool

    @property
    def operation(self) -> str:
        q, copy = self.query, "x-amz-copy-source" in self.headers
        if self.method == "POST":
            return "CreateMultipartUpload" if "uploads" in q else "CompleteMultipartUpload"
        if "partNumber" in q:
            return "UploadPartCopy" if copy else "UploadPart"
        return "CopyObject" if copy else "PutObject"


def _hmac(key: bytes, msg: str) -> bytes:
    return hmac.new(key, msg.encode(), hashlib.sha256).digest()


def sigv4_ok(method: str, raw_path: str, headers: dict[str, str], secret: str) -> bool:
    """Recompute an S3 SigV4 header signature from what arrived on the wire."""
    auth = headers.get("authorization", "")
    if not auth.startswith("AWS4-HMAC-SHA256 "):
        return False
    fields = dict(p.strip().split("=", 1) for p in auth[len("AWS4-HMAC-SHA256 ") :].split(","))
    _, date, region, service, _ = fields["Credential"].split("/")
    signed = fields["SignedHeaders"].split(";")
    path, _, query = raw_path.partition("?")
    pairs = sorted(tuple(p.partition("=")[::2]) for p in query.split("&") if p)
    canonical = "\n".join(
        [
            method,
            path,
            "&".join(f"{k}={v}" for k, v in pairs),
            "".join(f"{h}:{' '.join(headers.get(h, '').split())}\n" for h in signed),
            ";".join(signed),
            headers["x-amz-content-sha256"],
        ]
    )
    scope = f"{date}/{region}/{service}/aws4_request"
    to_sign = "\n".join(
        [
            "AWS4-HMAC-SHA256",
            headers["x-amz-date"],
            scope,
            hashlib.sha256(canonical.encode()).hexdigest(),
        ]
    )
    key = ("AWS4" + secret).encode()
    for part in (date, region, service, "aws4_request"):
        key = _hmac(key, part)
    expected = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected, fields["Signature"])


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, *args: Any) -> None:
        pass

    def _record(self) -> Seen:
        headers = {k.lower(): v for k, v in self.headers.items()}
        length = int(headers.get("content-length", 0))
        remaining = length
        while remaining:
            remaining -= len(self.rfile.read(min(remaining, 1 << 16)))
        split = urlsplit(self.path)
        seen = Seen(
            self.command,
            split.path,
            parse_qs(split.query, keep_blank_values=True),
            headers,
            length,
            sigv4_ok(self.command, self.path, headers, SECRET),
        )
        with self.server.lock:
            self.server.seen.append(seen)
        return seen

    def _answer(self, body: str = "", headers: dict[str, str] | None = None) -> None:
        data = body.encode()
        self.send_response(200)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Type", "application/xml")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_PUT(self) -> None:
        seen = self._record()
        etag = '"d41d8cd98f00b204e9800998ecf8427e"'
        if seen.operation == "CopyObject":
            self._answer(
                f"<CopyObjectResult><ETag>{etag}</ETag>"
                f"<LastModified>{LAST_MODIFIED}</LastModified></CopyObjectResult>"
            )
        elif seen.operation == "UploadPartCopy":
            self._answer(
                f"<CopyPartResult><ETag>{etag}</ETag>"
                f"<LastModified>{LAST_MODIFIED}</LastModified></CopyPartResult>"
            )
        else:
            self._answer(headers={"ETag": etag})

    def do_POST(self) -> None:
        seen = self._record()
        bucket, _, key = seen.path.lstrip("/").partition("/")
        if seen.operation == "CreateMultipartUpload":
            self._answer(
                f"<InitiateMultipartUploadResult><Bucket>{bucket}</Bucket><Key>{key}</Key>"
                "<UploadId>upload-1</UploadId></InitiateMultipartUploadResult>"
            )
        else:
            self._answer(
                f"<CompleteMultipartUploadResult><Bucket>{bucket}</Bucket><Key>{key}</Key>"
                '<ETag>"abc-2"</ETag></CompleteMultipartUploadResult>'
            )


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.lock = threading.Lock()
        self.seen: list[Seen] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def take(self) -> list[Seen]:
        with self.lock:
            seen, self.seen = self.seen, []
        return seen


@pytest.fixture(scope="module")
def server() -> Iterator[_Server]:
    with serving(_Server()) as srv:
        yield srv


@pytest.fixture
def s3(server: _Server) -> Any:
    server.take()
    return boto3.session.Session().client(
        "s3",
        endpoint_url=server.url,
        aws_access_key_id=ACCESS,
        aws_secret_access_key=SECRET,
        config=s3_config(),
    )


def _multipart(s3: Any, key: str = "big") -> None:
    up = s3.create_multipart_upload(Bucket="b", Key=key)
    parts = []
    for n in (1, 2):
        r = s3.upload_part(Bucket="b", Key=key, UploadId=up["UploadId"], PartNumber=n, Body=b"x")
        parts.append({"ETag": r["ETag"], "PartNumber": n})
    r = s3.upload_part_copy(
        Bucket="b", Key=key, UploadId=up["UploadId"], PartNumber=3, CopySource="b/src"
    )
    parts.append({"ETag": r["CopyPartResult"]["ETag"], "PartNumber": 3})
    s3.complete_multipart_upload(
        Bucket="b", Key=key, UploadId=up["UploadId"], MultipartUpload={"Parts": parts}
    )


def _all_operations(s3: Any) -> None:
    s3.put_object(Bucket="b", Key="small", Body=b"hello")
    _multipart(s3)
    s3.copy_object(Bucket="b", Key="copy", CopySource="b/small")


def test_fixed_class_on_every_operation_and_signed(s3: Any, server: _Server) -> None:
    attach_classes(s3, 26)
    _all_operations(s3)
    seen = server.take()
    assert sorted({s.operation for s in seen}) == sorted(OPERATIONS)
    for s in seen:
        assert s.headers.get("x-dss-object-class") == "26", s.operation
        assert "x-dss-range-class" not in s.headers
        assert "x-dss-object-class" in s.headers["authorization"], "class header not signed"
        assert s.signature_ok, s.operation


def test_range_classes_travel_as_headers(s3: Any, server: _Server) -> None:
    attach_classes(s3, ClassMap.build(25, [(0, 8, 11), (16, 8, 12)]))
    s3.put_object(Bucket="b", Key="k", Body=b"z" * 20000)
    (seen,) = server.take()
    assert seen.headers["x-dss-object-class"] == "25"
    assert seen.headers["x-dss-range-class"] == "0-8-11,16-8-12"
    assert seen.signature_ok


def test_classes_for_sees_operation_and_params(s3: Any, server: _Server) -> None:
    calls: list[tuple[str, str]] = []

    def classes_for(operation: str, params: Any) -> int | None:
        calls.append((operation, params["Key"]))
        if operation == "UploadPart":
            return 20 + params["PartNumber"]
        return None if operation == "CopyObject" else 30

    attach_classes(s3, classes_for)
    _all_operations(s3)
    seen = server.take()
    got = [(s.operation, s.headers.get("x-dss-object-class")) for s in seen]
    assert got == [
        ("PutObject", "30"),
        ("CreateMultipartUpload", "30"),
        ("UploadPart", "21"),
        ("UploadPart", "22"),
        ("UploadPartCopy", "30"),
        ("CompleteMultipartUpload", "30"),
        ("CopyObject", None),
    ]
    assert [op for op, _ in calls] == [op for op, _ in got]
    assert all(s.signature_ok for s in seen)


def test_metadata_mode(s3: Any, server: _Server) -> None:
    attach_classes(s3, ClassMap.build(27, [(0, 1, 28)]), via="metadata")
    s3.put_object(Bucket="b", Key="m", Body=b"data", Metadata={"owner": "me"})
    _multipart(s3)
    s3.copy_object(Bucket="b", Key="c1", CopySource="b/m")
    s3.copy_object(
        Bucket="b", Key="c2", CopySource="b/m", MetadataDirective="REPLACE", Metadata={"a": "b"}
    )
    seen = server.take()
    assert len(seen) == 8
    for s in seen:
        assert s.headers.get("x-amz-meta-dss-object-class") == "27", s.operation
        assert s.headers.get("x-amz-meta-dss-range-class") == "0-1-28", s.operation
        assert "x-dss-object-class" not in s.headers
        assert s.signature_ok, s.operation
    assert seen[0].headers["x-amz-meta-owner"] == "me"
    assert seen[-1].headers["x-amz-meta-a"] == "b"


def test_upload_file_multipart_every_call(server: _Server, tmp_path: Path) -> None:
    s3 = dss_s3_client(server.url, ACCESS, SECRET, default_class=29)
    server.take()
    path = tmp_path / "disk.vmdk"
    path.write_bytes(b"\0" * (11 * 1024 * 1024))
    cfg = TransferConfig(multipart_threshold=5 * 1024 * 1024, multipart_chunksize=5 * 1024 * 1024)
    s3.upload_file(str(path), "b", "disk.vmdk", Config=cfg)
    seen = server.take()
    ops = sorted(s.operation for s in seen)
    assert ops == [
        "CompleteMultipartUpload",
        "CreateMultipartUpload",
        "UploadPart",
        "UploadPart",
        "UploadPart",
    ]
    assert sum(s.body_len for s in seen if s.operation == "UploadPart") == path.stat().st_size
    for s in seen:
        assert s.headers.get("x-dss-object-class") == "29", s.operation
        assert s.signature_ok, s.operation


def test_detach_and_unrelated_calls(s3: Any, server: _Server) -> None:
    hooks = attach_classes(s3, 25)
    s3.put_object(Bucket="b", Key="k1", Body=b"a")
    hooks.detach()
    s3.put_object(Bucket="b", Key="k2", Body=b"a")
    first, second = server.take()
    assert first.headers.get("x-dss-object-class") == "25"
    assert "x-dss-object-class" not in second.headers
    assert second.signature_ok


def test_stand_in_catches_changes_after_signing(s3: Any, server: _Server) -> None:
    attach_classes(s3, 25)

    def tamper(request: Any, **_: Any) -> None:
        request.headers["X-DSS-Object-Class"] = "31"

    s3.meta.events.register("before-send.s3.PutObject", tamper)
    s3.put_object(Bucket="b", Key="k", Body=b"a")
    (seen,) = server.take()
    assert seen.headers["x-dss-object-class"] == "31"
    assert not seen.signature_ok


def test_bad_arguments(s3: Any) -> None:
    with pytest.raises(ValueError):
        attach_classes(s3, 25, via="query")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        attach_classes(s3, 256)
