"""S3 storage classes through s3api with boto3: the all-in-one maps STANDARD_IA to class 30
and GLACIER to class 31 (its proxy-server.conf's [filter:s3_storage_class])."""

from __future__ import annotations

import os
import shutil
import subprocess
import uuid
from pathlib import Path

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from .helpers import Swift, payload, s3_client

pytestmark = pytest.mark.integration

BUCKET = "s3classes"
IA, GLACIER = 30, 31


@pytest.fixture(scope="module")
def s3(saio: object):
    client = s3_client(saio)
    client.create_bucket(Bucket=BUCKET)
    return client


@pytest.fixture(scope="module")
def swift(saio: object) -> Swift:
    return Swift.connect(saio)


def _key(prefix: str = "obj") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def _swift_class(swift: Swift, key: str, bucket: str = BUCKET) -> str:
    head = swift.request("HEAD", f"{bucket}/{key}")
    assert head.status_code == 200, head.text
    return head.headers["X-DSS-Object-Class"]


def _client(saio: object, **config: object):
    return boto3.client(
        "s3",
        endpoint_url=saio.proxy_url,
        aws_access_key_id=saio.s3_access_key,
        aws_secret_access_key=config.pop("secret", saio.s3_secret_key),
        region_name="us-east-1",
        config=Config(s3={"addressing_style": "path"}, **config),
    )


def test_single_part_put_lands_with_class_and_reads_back(s3, swift: Swift) -> None:
    key = _key()
    s3.put_object(Bucket=BUCKET, Key=key, Body=b"cold data", StorageClass="STANDARD_IA")
    assert _swift_class(swift, key) == str(IA)
    assert s3.head_object(Bucket=BUCKET, Key=key)["StorageClass"] == "STANDARD_IA"
    got = s3.get_object(Bucket=BUCKET, Key=key)
    assert got["StorageClass"] == "STANDARD_IA"
    assert got["Body"].read() == b"cold data"


def test_multipart_parts_and_object_land_with_class(s3, swift: Swift) -> None:
    key = _key("video")
    part = payload(5 * 1024 * 1024)
    upload = s3.create_multipart_upload(Bucket=BUCKET, Key=key, StorageClass="GLACIER")
    parts = []
    for n in (1, 2):
        etag = s3.upload_part(
            Bucket=BUCKET, Key=key, UploadId=upload["UploadId"], PartNumber=n, Body=part
        )["ETag"]
        parts.append({"ETag": etag, "PartNumber": n})
    segments = swift.request(
        "GET", f"{BUCKET}+segments", params={"format": "json", "prefix": key}
    ).json()
    assert len(segments) == 3  # the upload marker and two parts
    for seg in segments:
        assert _swift_class(swift, seg["name"], f"{BUCKET}+segments") == str(GLACIER)
    s3.complete_multipart_upload(
        Bucket=BUCKET, Key=key, UploadId=upload["UploadId"], MultipartUpload={"Parts": parts}
    )
    assert _swift_class(swift, key) == str(GLACIER)
    assert s3.head_object(Bucket=BUCKET, Key=key)["StorageClass"] == "GLACIER"
    assert s3.get_object(Bucket=BUCKET, Key=key)["Body"].read() == part * 2


def test_upload_without_storage_class_leaves_parts_alone(s3, swift: Swift) -> None:
    # Parts inherit only a class the table names: an upload classified in dss form keeps
    # what it did before (unclassified parts unless each part says otherwise).
    key = _key("plain")
    upload = s3.create_multipart_upload(Bucket=BUCKET, Key=key, Metadata={"dss-object-class": "27"})
    s3.upload_part(Bucket=BUCKET, Key=key, UploadId=upload["UploadId"], PartNumber=1, Body=b"x")
    assert _swift_class(swift, f"{key}/{upload['UploadId']}/1", f"{BUCKET}+segments") == "0"
    s3.abort_multipart_upload(Bucket=BUCKET, Key=key, UploadId=upload["UploadId"])


def test_listings_report_storage_class_per_key(s3) -> None:
    prefix = f"list-{uuid.uuid4().hex[:6]}/"
    keys = {
        f"{prefix}standard": None,
        f"{prefix}ia file+name é": "STANDARD_IA",
        f"{prefix}glacier": "GLACIER",
        f"{prefix}dss-27": None,  # a class the table does not name: STANDARD
        f"{prefix}sub/deep": "GLACIER",
    }
    for key, storage_class in keys.items():
        extra = {"StorageClass": storage_class} if storage_class else {}
        if key.endswith("dss-27"):
            extra["Metadata"] = {"dss-object-class": "27"}
        s3.put_object(Bucket=BUCKET, Key=key, Body=b"data", **extra)
    expected = {k: v or "STANDARD" for k, v in keys.items()}
    v1 = s3.list_objects(Bucket=BUCKET, Prefix=prefix)["Contents"]
    assert {o["Key"]: o["StorageClass"] for o in v1} == expected
    v2 = s3.list_objects_v2(Bucket=BUCKET, Prefix=prefix)["Contents"]
    assert {o["Key"]: o["StorageClass"] for o in v2} == expected
    # Paging and delimiters work as before.
    page = s3.list_objects_v2(Bucket=BUCKET, Prefix=prefix, Delimiter="/", MaxKeys=2)
    assert page["IsTruncated"]
    rest = s3.list_objects_v2(
        Bucket=BUCKET,
        Prefix=prefix,
        Delimiter="/",
        ContinuationToken=page["NextContinuationToken"],
    )
    listed = {o["Key"]: o["StorageClass"] for o in page["Contents"] + rest["Contents"]}
    assert listed == {k: v for k, v in expected.items() if "/sub/" not in k}
    prefixes = page.get("CommonPrefixes", []) + rest.get("CommonPrefixes", [])
    assert prefixes == [{"Prefix": f"{prefix}sub/"}]


def test_unmapped_storage_class_is_refused(s3, swift: Swift) -> None:
    key = _key()
    for call in (
        lambda: s3.put_object(Bucket=BUCKET, Key=key, Body=b"x", StorageClass="DEEP_ARCHIVE"),
        lambda: s3.create_multipart_upload(Bucket=BUCKET, Key=key, StorageClass="ONEZONE_IA"),
        lambda: s3.put_object(Bucket=BUCKET, Key=key, Body=b"x", StorageClass="standard_ia"),
    ):
        with pytest.raises(ClientError) as err:
            call()
        assert err.value.response["Error"]["Code"] == "InvalidStorageClass"
        assert err.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400
    assert swift.request("HEAD", f"{BUCKET}/{key}").status_code == 404


def test_no_and_standard_storage_class_unchanged(s3, swift: Swift) -> None:
    for extra in ({}, {"StorageClass": "STANDARD"}):
        key = _key()
        s3.put_object(Bucket=BUCKET, Key=key, Body=b"plain", **extra)
        assert _swift_class(swift, key) == "0"
        assert "StorageClass" not in s3.head_object(Bucket=BUCKET, Key=key)
        got = s3.get_object(Bucket=BUCKET, Key=key)
        assert "StorageClass" not in got
        assert got["Body"].read() == b"plain"


def test_bad_signature_still_refused(saio: object, s3, swift: Swift) -> None:
    key = _key()
    wrong = _client(saio, signature_version="s3v4", secret="not-the-secret")
    with pytest.raises(ClientError) as err:
        wrong.put_object(Bucket=BUCKET, Key=key, Body=b"x", StorageClass="GLACIER")
    assert err.value.response["Error"]["Code"] == "SignatureDoesNotMatch"

    # The signature covers the storage class: one changed after signing is refused.
    def change_class(request, **_kwargs) -> None:
        request.headers["x-amz-storage-class"] = "STANDARD_IA"

    s3.meta.events.register("before-send.s3.PutObject", change_class)
    try:
        with pytest.raises(ClientError) as err:
            s3.put_object(Bucket=BUCKET, Key=key, Body=b"x", StorageClass="GLACIER")
    finally:
        s3.meta.events.unregister("before-send.s3.PutObject", change_class)
    assert err.value.response["Error"]["Code"] == "SignatureDoesNotMatch"
    assert swift.request("HEAD", f"{BUCKET}/{key}").status_code == 404


def test_signature_v2_with_storage_class(saio: object, swift: Swift) -> None:
    v2 = _client(saio, signature_version="s3")
    key = _key()
    v2.put_object(Bucket=BUCKET, Key=key, Body=b"v2", StorageClass="GLACIER")
    assert _swift_class(swift, key) == str(GLACIER)
    assert v2.head_object(Bucket=BUCKET, Key=key)["StorageClass"] == "GLACIER"


def test_storage_class_and_dss_class_must_agree(s3, swift: Swift) -> None:
    key = _key()
    with pytest.raises(ClientError) as err:
        s3.put_object(
            Bucket=BUCKET,
            Key=key,
            Body=b"x",
            StorageClass="GLACIER",
            Metadata={"dss-object-class": "26"},
        )
    assert err.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400
    assert "send one" in err.value.response["Error"]["Message"]
    # Agreeing forms are fine, and range classes combine with the storage class.
    s3.put_object(
        Bucket=BUCKET,
        Key=key,
        Body=payload(8192),
        StorageClass="STANDARD_IA",
        Metadata={"dss-object-class": str(IA), "dss-range-class": "0-8-26"},
    )
    head = swift.request("HEAD", f"{BUCKET}/{key}").headers
    assert head["X-DSS-Object-Class"] == str(IA)
    assert head["X-DSS-Range-Class"] == "0-8-26"


def test_copy_with_storage_class(s3, swift: Swift) -> None:
    src, dst = _key("src"), _key("dst")
    s3.put_object(Bucket=BUCKET, Key=src, Body=b"copy me")
    s3.copy_object(
        Bucket=BUCKET, Key=dst, CopySource={"Bucket": BUCKET, "Key": src}, StorageClass="GLACIER"
    )
    assert _swift_class(swift, src) == "0"
    assert _swift_class(swift, dst) == str(GLACIER)
    assert s3.get_object(Bucket=BUCKET, Key=dst)["Body"].read() == b"copy me"


def test_swift_api_ignores_storage_class_header(swift: Swift) -> None:
    key = _key()
    put = swift.request(
        "PUT", f"{BUCKET}/{key}", data=b"swift", headers={"X-Amz-Storage-Class": "GLACIER"}
    )
    assert put.status_code == 201
    assert _swift_class(swift, key) == "0"


def test_info_advertises_table(saio: object, swift: Swift) -> None:
    info = swift.session.get(f"{saio.proxy_url}/info", timeout=30).json()
    assert info["s3_storage_class"]["storage_classes"] == {"STANDARD_IA": IA, "GLACIER": GLACIER}


def test_client_hooks_leave_storage_class_calls_alone(saio: object, s3, swift: Swift) -> None:
    from swift_dss.client.s3 import dss_s3_client

    client = dss_s3_client(saio.proxy_url, saio.s3_access_key, saio.s3_secret_key, 27)
    hooked, named = _key("hooked"), _key("named")
    client.put_object(Bucket=BUCKET, Key=hooked, Body=b"x")
    client.put_object(Bucket=BUCKET, Key=named, Body=b"x", StorageClass="GLACIER")
    assert _swift_class(swift, hooked) == "27"
    assert _swift_class(swift, named) == str(GLACIER)


def test_listing_of_more_keys_than_heads_in_flight(s3) -> None:
    # More keys than twice listing_concurrency (10): every HEAD's answer must be collected.
    prefix = f"many-{uuid.uuid4().hex[:6]}/"
    for n in range(35):
        extra = {"StorageClass": "GLACIER"} if n % 2 else {}
        s3.put_object(Bucket=BUCKET, Key=f"{prefix}{n:03d}", Body=b"x", **extra)
    listed = s3.list_objects_v2(Bucket=BUCKET, Prefix=prefix)["Contents"]
    assert [o["StorageClass"] for o in listed] == [
        "GLACIER" if n % 2 else "STANDARD" for n in range(35)
    ]


@pytest.mark.skipif(shutil.which("aws") is None, reason="the aws CLI is not installed")
def test_aws_cli_storage_class(saio: object, s3, swift: Swift, tmp_path: Path) -> None:
    env = {
        **os.environ,
        "AWS_ACCESS_KEY_ID": saio.s3_access_key,
        "AWS_SECRET_ACCESS_KEY": saio.s3_secret_key,
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_CONFIG_FILE": os.devnull,
        "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
        "AWS_REQUEST_CHECKSUM_CALCULATION": "when_required",
    }
    small, large = tmp_path / "small", tmp_path / "large"
    small.write_bytes(b"small")
    large.write_bytes(payload(9 * 1024 * 1024))  # past the CLI's 8 MiB multipart threshold
    for path, storage_class in ((small, "STANDARD_IA"), (large, "GLACIER")):
        subprocess.run(
            ["aws", "--endpoint-url", saio.proxy_url, "s3", "cp", str(path),
             f"s3://{BUCKET}/cli/{path.name}", "--storage-class", storage_class],
            env=env, check=True, capture_output=True, timeout=300,
        )  # fmt: skip
    assert _swift_class(swift, "cli/small") == str(IA)
    assert _swift_class(swift, "cli/large") == str(GLACIER)
    segments = swift.request(
        "GET", f"{BUCKET}+segments", params={"format": "json", "prefix": "cli/large/"}
    ).json()
    assert segments, "the CLI should have made a multipart upload"
    for seg in segments:
        assert _swift_class(swift, seg["name"], f"{BUCKET}+segments") == str(GLACIER)
    listed = s3.list_objects_v2(Bucket=BUCKET, Prefix="cli/")["Contents"]
    assert {o["Key"]: o["StorageClass"] for o in listed} == {
        "cli/large": "GLACIER",
        "cli/small": "STANDARD_IA",
    }
    refused = subprocess.run(
        ["aws", "--endpoint-url", saio.proxy_url, "s3", "cp", str(small),
         f"s3://{BUCKET}/cli/refused", "--storage-class", "DEEP_ARCHIVE"],
        env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert refused.returncode != 0
    assert "InvalidStorageClass" in refused.stderr
