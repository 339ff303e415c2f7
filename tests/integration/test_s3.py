"""Classes through s3api with plain boto3: user-metadata form and raw headers."""

from __future__ import annotations

import uuid

import pytest
import requests

from .helpers import Swift, payload, s3_client

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def s3(saio: object):
    client = s3_client(saio)
    client.create_bucket(Bucket="s3plain")
    return client


@pytest.fixture(scope="module")
def swift(saio: object) -> Swift:
    return Swift.connect(saio)


def test_metadata_form_classifies_and_reads_back(s3, swift: Swift) -> None:
    key = f"pic-{uuid.uuid4().hex[:8]}.jpg"
    data = payload(20_000)
    s3.put_object(Bucket="s3plain", Key=key, Body=data, Metadata={"dss-range-class": "0-8-26"})
    head = swift.request("HEAD", f"s3plain/{key}").headers
    assert head["X-DSS-Object-Class"] == "0"
    assert head["X-DSS-Range-Class"] == "0-8-26"
    # The metadata form becomes the class; it does not linger as user metadata.
    assert "X-Object-Meta-Dss-Range-Class" not in head
    meta = s3.head_object(Bucket="s3plain", Key=key)["Metadata"]
    assert meta == {"dss-object-class": "0", "dss-range-class": "0-8-26"}
    assert s3.get_object(Bucket="s3plain", Key=key)["Body"].read() == data


def test_raw_header_through_event_hook(s3, swift: Swift) -> None:
    key = f"doc-{uuid.uuid4().hex[:8]}"

    def add_class(request, **_kwargs) -> None:
        request.headers["X-DSS-Object-Class"] = "27"

    s3.meta.events.register("before-sign.s3.PutObject", add_class)
    try:
        s3.put_object(Bucket="s3plain", Key=key, Body=b"hello")
    finally:
        s3.meta.events.unregister("before-sign.s3.PutObject", add_class)
    assert swift.request("HEAD", f"s3plain/{key}").headers["X-DSS-Object-Class"] == "27"


def test_multipart_classifies_parts_and_final_object(s3, swift: Swift) -> None:
    key = f"video-{uuid.uuid4().hex[:8]}.mp4"
    part = payload(5 * 1024 * 1024)
    upload = s3.create_multipart_upload(
        Bucket="s3plain", Key=key, Metadata={"dss-object-class": "28"}
    )
    parts = []
    for n in (1, 2):

        def add_class(request, **_kwargs) -> None:
            request.headers["X-DSS-Object-Class"] = "28"

        s3.meta.events.register("before-sign.s3.UploadPart", add_class)
        try:
            etag = s3.upload_part(
                Bucket="s3plain", Key=key, UploadId=upload["UploadId"], PartNumber=n, Body=part
            )["ETag"]
        finally:
            s3.meta.events.unregister("before-sign.s3.UploadPart", add_class)
        parts.append({"ETag": etag, "PartNumber": n})
    s3.complete_multipart_upload(
        Bucket="s3plain", Key=key, UploadId=upload["UploadId"], MultipartUpload={"Parts": parts}
    )
    assert swift.request("HEAD", f"s3plain/{key}").headers["X-DSS-Object-Class"] == "28"
    segments = swift.request(
        "GET", "s3plain+segments", params={"format": "json", "prefix": key}
    ).json()
    assert len(segments) == 2
    for seg in segments:
        head = swift.request("HEAD", f"s3plain+segments/{seg['name']}")
        assert head.headers["X-DSS-Object-Class"] == "28", seg["name"]
    assert s3.get_object(Bucket="s3plain", Key=key)["Body"].read() == part * 2


def test_a_presigned_get_reads_but_does_not_change_classes(s3, swift: Swift) -> None:
    """A presigned URL grants its one operation: the holder of a GET link may not change
    the object's classes, though its signer may."""
    key = f"shared-{uuid.uuid4().hex[:8]}"
    s3.put_object(Bucket="s3plain", Key=key, Body=b"hello", Metadata={"dss-object-class": "25"})
    get = s3.generate_presigned_url("get_object", Params={"Bucket": "s3plain", "Key": key})
    assert requests.get(get, timeout=30).content == b"hello"
    same = requests.get(get, headers={"X-DSS-Object-Class": "25"}, timeout=30)
    assert same.status_code == 200 and same.content == b"hello"
    change = requests.get(get, headers={"X-DSS-Object-Class": "27"}, timeout=30)
    assert change.status_code == 403 and "AccessDenied" in change.text
    assert swift.request("HEAD", f"s3plain/{key}").headers["X-DSS-Object-Class"] == "25"

    def add_class(request, **_kwargs) -> None:
        request.headers["X-DSS-Object-Class"] = "28"

    s3.meta.events.register("before-sign.s3.GetObject", add_class)
    try:
        assert s3.get_object(Bucket="s3plain", Key=key)["Body"].read() == b"hello"
    finally:
        s3.meta.events.unregister("before-sign.s3.GetObject", add_class)
    assert swift.request("HEAD", f"s3plain/{key}").headers["X-DSS-Object-Class"] == "28"
    put = s3.generate_presigned_url("put_object", Params={"Bucket": "s3plain", "Key": key})
    stored = requests.put(put, data=b"again", headers={"X-DSS-Object-Class": "26"}, timeout=30)
    assert stored.status_code == 200, stored.text
    assert swift.request("HEAD", f"s3plain/{key}").headers["X-DSS-Object-Class"] == "26"
