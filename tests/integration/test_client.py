"""The client (Python API, boto3 helper, CLI) against the all-in-one cluster."""

from __future__ import annotations

import hashlib
import io
import os
import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from boto3.s3.transfer import TransferConfig
from click.testing import CliRunner

from swift_dss.cli import main
from swift_dss.client.api import DssClient, DssRequestError
from swift_dss.client.s3 import attach_classes, dss_s3_client
from swift_dss.formats import ClassMap

pytestmark = pytest.mark.integration

CONTAINER = "client-tests"
MiB = 2**20


def _name(stem: str) -> str:
    return f"{stem}-{uuid.uuid4().hex[:8]}"


@pytest.fixture(scope="module")
def client(saio: Any) -> Iterator[DssClient]:
    with DssClient(saio.auth_url, saio.user, saio.key) as c:
        c.ensure_container(CONTAINER)
        yield c


@pytest.fixture(scope="module")
def s3(saio: Any, client: DssClient) -> Any:
    return dss_s3_client(saio.proxy_url, saio.s3_access_key, saio.s3_secret_key)


def _check_download(client: DssClient, name: str, data: bytes, tmp_path: Path) -> ClassMap:
    dest = tmp_path / "out"
    cmap = client.download(CONTAINER, name, dest)
    assert dest.read_bytes() == data
    return cmap


def test_upload_object_class_via_headers(client: DssClient, tmp_path: Path) -> None:
    data = os.urandom(100_000)
    src = tmp_path / "doc.pdf"
    src.write_bytes(data)
    name = _name("doc")
    etag = client.upload(CONTAINER, name, src, 25)
    assert etag == hashlib.md5(data).hexdigest()
    assert _check_download(client, name, data, tmp_path) == ClassMap(25)
    assert client.classes(CONTAINER, name) == ClassMap(25)


def test_upload_range_classes_via_headers(client: DssClient, tmp_path: Path) -> None:
    data = os.urandom(64 * 512)
    cmap = ClassMap.build(26, [(0, 8, 11), (32, 16, 27)])
    name = _name("ranges")
    client.upload(CONTAINER, name, io.BytesIO(data), cmap)
    assert _check_download(client, name, data, tmp_path) == cmap
    assert client.classes(CONTAINER, name) == cmap


@pytest.mark.parametrize(
    "cmap",
    [
        ClassMap(28),
        ClassMap.build(0, [(0, 4, 25), (8, 8, 26)]),
        ClassMap.build(29, [(2, 2, 30)]),
    ],
    ids=["object", "ranges", "ranges+default"],
)
def test_upload_object_file(client: DssClient, tmp_path: Path, cmap: ClassMap) -> None:
    data = os.urandom(16 * 512 + 17)
    src = tmp_path / "data.bin"
    src.write_bytes(data)
    name = _name("objfile")
    etag = client.upload(CONTAINER, name, src, cmap, via="object-file")
    # Only the data is stored: the ETag and length are the data's.
    assert etag == hashlib.md5(data).hexdigest()
    assert _check_download(client, name, data, tmp_path) == cmap
    assert client.conn.head_object(CONTAINER, name)["content-length"] == str(len(data))


def test_upload_object_file_of_unknown_length(client: DssClient, tmp_path: Path) -> None:
    data = os.urandom(3 * MiB + 5)
    read_fd, write_fd = os.pipe()
    name = _name("pipe")

    def feed() -> None:
        with os.fdopen(write_fd, "wb") as w:
            w.write(data)

    writer = threading.Thread(target=feed)
    writer.start()
    with os.fdopen(read_fd, "rb") as r:
        etag = client.upload(CONTAINER, name, r, 27, via="object-file")
    writer.join()
    assert etag == hashlib.md5(data).hexdigest()
    assert _check_download(client, name, data, tmp_path) == ClassMap(27)


@pytest.mark.parametrize("via", ["post", "class-file", "get"])
def test_reclassify_routes(client: DssClient, tmp_path: Path, via: str) -> None:
    data = os.urandom(32 * 512)
    name = _name(f"re-{via}")
    client.upload(CONTAINER, name, io.BytesIO(data), 25, headers={"X-Object-Meta-Owner": "me"})
    before = client.conn.head_object(CONTAINER, name)
    new = ClassMap.build(27, [(0, 8, 28)])
    client.reclassify(CONTAINER, name, new, via=via)  # type: ignore[arg-type]
    assert client.classes(CONTAINER, name) == new
    after = client.conn.head_object(CONTAINER, name)
    # Classes only: data, ETag and user metadata stay.
    assert after["etag"] == before["etag"]
    assert after.get("x-object-meta-owner") == "me"
    assert _check_download(client, name, data, tmp_path) == new


def test_refusals_carry_the_reason(client: DssClient) -> None:
    name = _name("refused")
    with pytest.raises(DssRequestError) as err:
        client.upload(CONTAINER, name, io.BytesIO(b"x"), 5)  # reserved in the test cluster
    assert err.value.status == 403
    assert "5" in str(err.value)
    client.upload(CONTAINER, name, io.BytesIO(b"x" * 512), 25)
    with pytest.raises(DssRequestError) as err:
        client.reclassify(CONTAINER, name, ClassMap.build(0, [(0, 8, 26)]))
    assert err.value.status == 400
    assert err.value.detail
    with pytest.raises(DssRequestError) as err:
        client.reclassify(CONTAINER, _name("missing"), 25, via="class-file")
    assert err.value.status == 404


def test_boto3_single_part(s3: Any, client: DssClient) -> None:
    bucket = CONTAINER
    key = _name("s3-single")
    hooks = attach_classes(s3, ClassMap.build(26, [(0, 2, 27)]))
    try:
        s3.put_object(Bucket=bucket, Key=key, Body=os.urandom(10_000))
    finally:
        hooks.detach()
    assert client.classes(CONTAINER, key) == ClassMap.build(26, [(0, 2, 27)])


def test_boto3_metadata_form(s3: Any, client: DssClient) -> None:
    key = _name("s3-meta")
    hooks = attach_classes(s3, 30, via="metadata")
    try:
        s3.put_object(Bucket=CONTAINER, Key=key, Body=b"hello", Metadata={"owner": "me"})
    finally:
        hooks.detach()
    assert client.classes(CONTAINER, key) == ClassMap(30)
    assert s3.head_object(Bucket=CONTAINER, Key=key)["Metadata"]["owner"] == "me"


def test_boto3_multipart(saio: Any, client: DssClient, tmp_path: Path) -> None:
    s3 = dss_s3_client(saio.proxy_url, saio.s3_access_key, saio.s3_secret_key, default_class=28)
    src = tmp_path / "video.mp4"
    data = os.urandom(11 * MiB)
    src.write_bytes(data)
    key = _name("s3-multi")
    cfg = TransferConfig(multipart_threshold=5 * MiB, multipart_chunksize=5 * MiB)
    s3.upload_file(str(src), CONTAINER, key, Config=cfg)
    assert client.classes(CONTAINER, key) == ClassMap(28)
    out = tmp_path / "back"
    s3.download_file(CONTAINER, key, str(out))
    assert out.read_bytes() == data


def test_boto3_copy_keeps_or_sets_classes(s3: Any, client: DssClient) -> None:
    src, kept, changed = _name("s3-src"), _name("s3-kept"), _name("s3-changed")
    hooks = attach_classes(s3, lambda op, params: 25 if op == "PutObject" else None)
    s3.put_object(Bucket=CONTAINER, Key=src, Body=b"x" * 1000)
    s3.copy_object(Bucket=CONTAINER, Key=kept, CopySource=f"{CONTAINER}/{src}")
    hooks.detach()
    assert client.classes(CONTAINER, kept) == ClassMap(25)
    hooks = attach_classes(s3, 29)
    s3.copy_object(Bucket=CONTAINER, Key=changed, CopySource=f"{CONTAINER}/{src}")
    hooks.detach()
    assert client.classes(CONTAINER, changed) == ClassMap(29)


def _auth(saio: Any) -> list[str]:
    return ["-A", saio.auth_url, "-U", saio.user, "-K", saio.key]


def test_cli_upload_auto_and_back(saio: Any, client: DssClient, tmp_path: Path) -> None:
    pic, song = tmp_path / "photo.jpg", tmp_path / "song.mp3"
    pic.write_bytes(os.urandom(50_000))
    song.write_bytes(os.urandom(20_000))
    runner = CliRunner()
    prefix = _name("cli")
    r = runner.invoke(
        main, ["upload", *_auth(saio), CONTAINER, str(pic), "--auto", "--name", f"{prefix}.jpg"]
    )
    assert r.exit_code == 0, r.output
    assert "X-DSS-Object-Class: 26" in r.output
    assert "picture" in r.output
    args = ["--auto", "--via", "object-file", "--name", f"{prefix}.mp3", CONTAINER, str(song)]
    r = runner.invoke(main, ["upload", *_auth(saio), *args])
    assert r.exit_code == 0, r.output
    assert client.classes(CONTAINER, f"{prefix}.jpg") == ClassMap(26)
    assert client.classes(CONTAINER, f"{prefix}.mp3") == ClassMap(27)

    r = runner.invoke(main, ["classes", *_auth(saio), "--json", CONTAINER, f"{prefix}.mp3"])
    assert r.exit_code == 0, r.output
    assert '"object_class": 27' in r.output

    args = ["--range-class", "0-8-30", "--class", "25", "--via", "class-file"]
    r = runner.invoke(main, ["reclassify", *_auth(saio), CONTAINER, f"{prefix}.mp3", *args])
    assert r.exit_code == 0, r.output
    out = tmp_path / "song.back"
    r = runner.invoke(main, ["download", *_auth(saio), CONTAINER, f"{prefix}.mp3", "-o", str(out)])
    assert r.exit_code == 0, r.output
    assert out.read_bytes() == song.read_bytes()
    assert "X-DSS-Object-Class: 25" in r.output
    assert "X-DSS-Range-Class: 0-8-30" in r.output


def test_cli_refusal_is_one_line(saio: Any, tmp_path: Path) -> None:
    f = tmp_path / "f.txt"
    f.write_text("x")
    r = CliRunner().invoke(main, ["upload", *_auth(saio), CONTAINER, str(f), "--class", "3"])
    assert r.exit_code == 1
    assert "Traceback" not in r.output
    assert r.output.strip().splitlines()[-1].startswith("Error: PUT")
    assert "403" in r.output


AUTH_VARS = ("ST_AUTH", "ST_USER", "ST_KEY", "ST_AUTH_VERSION", "OS_AUTH_VERSION",
             "OS_IDENTITY_API_VERSION", "OS_AUTH_URL", "OS_USERNAME", "OS_PASSWORD",
             "OS_AUTH_TOKEN", "OS_STORAGE_URL", "OS_PROJECT_NAME", "OS_TENANT_NAME")  # fmt: skip


def _dss(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """The installed ``dss`` in its own process, with only the auth variables given."""
    clean = {k: v for k, v in os.environ.items() if k not in AUTH_VARS}
    exe = Path(sys.executable).with_name("dss")
    return subprocess.run([str(exe), *args], env={**clean, **env}, capture_output=True,
                          text=True, timeout=120, check=False)  # fmt: skip


def test_cli_logs_in_as_the_swift_cli_does(saio: Any, tmp_path: Path) -> None:
    src = tmp_path / "a.txt"
    src.write_bytes(os.urandom(3000))
    name = _name("auth")
    up = _dss("upload", "-A", saio.auth_url, "-U", saio.user, "-K", saio.key, "-V", "1",
              "--class", "25", "--name", name, CONTAINER, str(src))  # fmt: skip
    assert up.returncode == 0, up.stderr
    st = {"ST_AUTH": saio.auth_url, "ST_USER": saio.user, "ST_KEY": saio.key}
    got = _dss("classes", CONTAINER, name, **st)
    assert (got.returncode, got.stdout.strip()) == (0, "X-DSS-Object-Class: 25"), got.stderr
    bad = _dss("classes", CONTAINER, name, **{**st, "ST_KEY": "wrong"})
    assert bad.returncode == 1 and "401" in bad.stderr.strip().splitlines()[-1]
    # A token from the swift CLI itself, then no credentials at all.
    swift = Path(sys.executable).with_name("swift")
    out = subprocess.run([str(swift), "auth"], env={**os.environ, **st}, capture_output=True,
                         text=True, timeout=60, check=True).stdout  # fmt: skip
    exports = dict(
        line.removeprefix("export ").split("=", 1) for line in out.splitlines() if "=" in line
    )
    token = {k: exports[k] for k in ("OS_STORAGE_URL", "OS_AUTH_TOKEN")}
    dest = tmp_path / "back"
    down = _dss("download", CONTAINER, name, "-o", str(dest), **token)
    assert down.returncode == 0, down.stderr
    assert dest.read_bytes() == src.read_bytes()
    flags = ["--os-auth-token", token["OS_AUTH_TOKEN"], "--os-storage-url", token["OS_STORAGE_URL"]]
    rc = _dss("reclassify", *flags, CONTAINER, name, "--class", "26")
    assert rc.returncode == 0, rc.stderr
    assert _dss("classes", CONTAINER, name, **st).stdout.strip() == "X-DSS-Object-Class: 26"
