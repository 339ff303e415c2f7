"""The dss middleware and object server against a real all-in-one Swift cluster."""

from __future__ import annotations

import hashlib
import io
import shlex
import subprocess
import sys
import tarfile
import uuid
from pathlib import Path

import pytest

from swift_dss.formats import (
    SECTOR,
    classmap_from_headers,
    encode_blocks,
    encode_object,
    encode_ranges,
)

from .helpers import Swift, byte_classes, payload, recorded

pytestmark = pytest.mark.integration
VENV_BIN = Path(sys.executable).parent


@pytest.fixture(scope="module")
def swift(saio: object) -> Swift:
    return Swift.with_container(saio, "c1")


def new_name() -> str:
    return f"obj-{uuid.uuid4().hex[:10]}"


def classes_of(swift: Swift, name: str, container: str = "c1") -> dict[str, str]:
    resp = swift.request("HEAD", f"{container}/{name}")
    assert resp.status_code == 200, resp.text
    return {k: v for k, v in resp.headers.items() if k.lower().startswith("x-dss-")}


def expected_bytes(obj: str | None, rng: str | None, size: int) -> list[int]:
    cmap = classmap_from_headers(obj, rng, size=size)
    return [cmap.class_at(i) for i in range(size)]


# -- in band: headers -----------------------------------------------------------------------


def test_sized_put_with_object_class(swift: Swift, saio: object) -> None:
    name, data = new_name(), payload(100_000)
    with recorded(saio.record_log) as io:
        resp = swift.request("PUT", f"c1/{name}", data=data, headers={"X-DSS-Object-Class": "25"})
    assert resp.status_code == 201, resp.text
    assert resp.headers["Etag"] == hashlib.md5(data).hexdigest()
    assert byte_classes(io, "write", len(data)) == [25] * len(data)
    assert classes_of(swift, name) == {"X-Dss-Object-Class": "25"}


def test_chunked_put_with_range_classes_splits_every_write(swift: Swift, saio: object) -> None:
    name, data = new_name(), payload(700_000)
    spec = "0-64-25,1024-32-26,100-3-27"

    def chunks():  # odd-sized chunks straddle every range boundary
        for i in range(0, len(data), 65_537):
            yield data[i : i + 65_537]

    with recorded(saio.record_log) as io:
        resp = swift.request(
            "PUT",
            f"c1/{name}",
            data=chunks(),
            headers={"X-DSS-Range-Class": spec, "X-DSS-Object-Class": "29"},
        )
    assert resp.status_code == 201, resp.text
    assert byte_classes(io, "write", len(data)) == expected_bytes("29", spec, len(data))
    assert all(e.length > 0 for e in io)
    got = classes_of(swift, name)
    assert got == {"X-Dss-Object-Class": "29", "X-Dss-Range-Class": "0-64-25,100-3-27,1024-32-26"}

    with recorded(saio.record_log) as io:
        body = swift.request("GET", f"c1/{name}").content
    assert body == data
    assert byte_classes(io, "read", len(data)) == expected_bytes("29", spec, len(data))


def test_range_get_reads_with_stored_classes(swift: Swift, saio: object) -> None:
    name, data = new_name(), payload(200_000)
    swift.request("PUT", f"c1/{name}", data=data, headers={"X-DSS-Range-Class": "10-20-30"})
    with recorded(saio.record_log) as io:
        resp = swift.request("GET", f"c1/{name}", headers={"Range": "bytes=5000-15999"})
    assert resp.status_code == 206 and resp.content == data[5000:16000]
    reads = byte_classes(io, "read", len(data))
    for i in range(5000, 16000):
        assert reads[i] == (30 if 10 * SECTOR <= i < 30 * SECTOR else 0), i


def test_unclassified_put_reaches_dssio_as_class_0(swift: Swift, saio: object) -> None:
    name, data = new_name(), payload(10_000)
    with recorded(saio.record_log) as io:
        assert swift.request("PUT", f"c1/{name}", data=data).status_code == 201
    assert byte_classes(io, "write", len(data)) == [0] * len(data)
    assert classes_of(swift, name) == {"X-Dss-Object-Class": "0"}


# -- the paper's curl examples ------------------------------------------------------------


def run_curl(template: str, swift: Swift, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Runs one of the paper's examples as printed, with this cluster's token and URL."""
    command = (
        template.replace("abc", swift.token)
        .replace("http://localhost:8080/v1/AUTH_test", swift.storage_url)
        .replace("\\\n", " ")
    )
    return subprocess.run(
        [*shlex.split(command), "-s", "-o", "/dev/null", "-w", "%{http_code}"],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=True,
    )


PAPER_PUT = """curl -X PUT -H "X-Auth-Token: abc" -T "foo" \\
-H "X-DSS-Object-Class: 25" \\
http://localhost:8080/v1/AUTH_test/c1/foo"""
PAPER_RANGE = """curl -X PUT -H "X-Auth-Token: abc" -T "foo" \\
-H "X-DSS-Range-Class: 0-64-25,1024-32-26" \\
http://localhost:8080/v1/AUTH_test/c1/foo"""
PAPER_POST = """curl -X POST -H "X-Auth-Token: abc" \\
-H "X-DSS-Object-Class: 26" \\
http://localhost:8080/v1/AUTH_test/c1/foo"""
PAPER_CLASS_FILE = """curl -X PUT -H "X-Auth-Token: abc" \\
-T "foo.cls" \\
-H "X-DSS-Class-File: True" \\
http://localhost:8080/v1/AUTH_test/c1/foo"""


def test_paper_curl_examples(swift: Swift, tmp_path: Path) -> None:
    data = payload(600_000)
    (tmp_path / "foo").write_bytes(data)
    (tmp_path / "foo.cls").write_bytes(encode_ranges([(0, 8, 27), (8, 8, 28)]))

    assert run_curl(PAPER_PUT, swift, tmp_path).stdout == "201"
    assert classes_of(swift, "foo") == {"X-Dss-Object-Class": "25"}

    assert run_curl(PAPER_RANGE, swift, tmp_path).stdout == "201"
    assert classes_of(swift, "foo") == {
        "X-Dss-Object-Class": "0",
        "X-Dss-Range-Class": "0-64-25,1024-32-26",
    }

    # A reclassification states the classes completely, by the rules of a PUT: the whole
    # object is class 26 now, as the paper says of this example.
    assert run_curl(PAPER_POST, swift, tmp_path).stdout == "202"
    assert classes_of(swift, "foo") == {"X-Dss-Object-Class": "26"}

    assert run_curl(PAPER_CLASS_FILE, swift, tmp_path).stdout == "202"
    assert classes_of(swift, "foo") == {
        "X-Dss-Object-Class": "0",
        "X-Dss-Range-Class": "0-8-27,8-8-28",
    }
    assert swift.request("GET", "c1/foo").content == data


# -- class files --------------------------------------------------------------------------

CLASS_FILES = {
    "object": (encode_object(27), {"X-Dss-Object-Class": "27"}),
    "range": (
        encode_ranges([(0, 4, 25), (16, 8, 26)], cls_bytes=2),
        {"X-Dss-Object-Class": "0", "X-Dss-Range-Class": "0-4-25,16-8-26"},
    ),
    "block": (
        encode_blocks([25, 25, 26, 0, 27], 8, cls_bytes=4),
        {"X-Dss-Object-Class": "0", "X-Dss-Range-Class": "0-16-25,16-8-26,24-8-0,32-8-27"},
    ),
    # 50,000 bytes are 98 sectors: the second block runs past the end and covers what is there.
    "block-partial": (
        encode_blocks([25, 26], 64),
        {"X-Dss-Object-Class": "0", "X-Dss-Range-Class": "0-64-25,64-34-26"},
    ),
}


def test_chunked_put_stores_only_the_ranges_the_object_holds(swift: Swift) -> None:
    # The proxy cannot check ranges against a length it is not told; the object servers
    # keep what lies inside the 98 sectors received.
    name, data = new_name(), payload(50_000)
    resp = swift.request(
        "PUT",
        f"c1/{name}",
        data=iter([data[:20_000], data[20_000:]]),
        headers={"X-DSS-Object-Class": "27", "X-DSS-Range-Class": "0-4-25,90-20-26,200-8-28"},
    )
    assert resp.status_code == 201, resp.text
    assert classes_of(swift, name) == {
        "X-Dss-Object-Class": "27",
        "X-Dss-Range-Class": "0-4-25,90-8-26",
    }
    assert swift.request("GET", f"c1/{name}").content == data


@pytest.mark.parametrize("kind", sorted(CLASS_FILES))
@pytest.mark.parametrize("chunked", [False, True])
def test_object_file_in_band(swift: Swift, saio: object, kind: str, chunked: bool) -> None:
    classfile, expected = CLASS_FILES[kind]
    name, data = new_name(), payload(50_000)
    body = classfile + data
    with recorded(saio.record_log) as io:
        resp = swift.request(
            "PUT",
            f"c1/{name}",
            data=iter([body[:7], body[7:30_000], body[30_000:]]) if chunked else body,
            headers={"X-DSS-Object-File": "True"},
        )
    assert resp.status_code == 201, resp.text
    assert resp.headers["Etag"] == hashlib.md5(data).hexdigest()
    head = swift.request("HEAD", f"c1/{name}")
    assert head.headers["Content-Length"] == str(len(data))
    assert classes_of(swift, name) == expected
    assert swift.request("GET", f"c1/{name}").content == data
    writes = byte_classes(io, "write", len(data))
    want = expected_bytes(
        expected["X-Dss-Object-Class"], expected.get("X-Dss-Range-Class"), len(data)
    )
    assert writes == want


@pytest.mark.parametrize("kind", sorted(CLASS_FILES))
def test_class_file_out_of_band(swift: Swift, kind: str) -> None:
    classfile, expected = CLASS_FILES[kind]
    name, data = new_name(), payload(50_000)
    swift.request(
        "PUT",
        f"c1/{name}",
        data=data,
        headers={"X-DSS-Object-Class": "30", "X-Object-Meta-Color": "red"},
    )
    resp = swift.request("PUT", f"c1/{name}", data=classfile, headers={"X-DSS-Class-File": "True"})
    assert resp.status_code == 202, resp.text
    assert classes_of(swift, name) == expected
    get = swift.request("GET", f"c1/{name}")
    assert get.content == data
    assert get.headers["X-Object-Meta-Color"] == "red"
    assert get.headers["Etag"] == hashlib.md5(data).hexdigest()


def test_class_file_for_missing_object_is_404(swift: Swift) -> None:
    resp = swift.request(
        "PUT", f"c1/{new_name()}", data=encode_object(25), headers={"X-DSS-Class-File": "True"}
    )
    assert resp.status_code == 404


# -- reclassification ---------------------------------------------------------------------


@pytest.mark.parametrize("via", ["POST", "GET", "class-file"])
def test_reclassification_changes_classes_only(swift: Swift, saio: object, via: str) -> None:
    name, data = new_name(), payload(30_000)
    swift.request(
        "PUT",
        f"c1/{name}",
        data=data,
        headers={
            "X-DSS-Object-Class": "25",
            "Content-Type": "image/png",
            "X-Object-Meta-Stars": "5",
            "Content-Disposition": "attachment",
        },
    )
    before = swift.request("HEAD", f"c1/{name}").headers
    with recorded(saio.record_log) as io:
        if via == "class-file":
            resp = swift.request(
                "PUT",
                f"c1/{name}",
                data=encode_ranges([(0, 2, 31)]),
                headers={"X-DSS-Class-File": "1"},
            )
            assert resp.status_code == 202
        else:
            resp = swift.request(via, f"c1/{name}", headers={"X-DSS-Range-Class": "0-2-31"})
            assert resp.status_code == (202 if via == "POST" else 200), resp.text
            if via == "GET":
                assert resp.content == data
    # Every way of reclassifying answers with the classes now stored.
    assert resp.headers["X-DSS-Object-Class"] == "0"
    assert resp.headers["X-DSS-Range-Class"] == "0-2-31"
    after = swift.request("HEAD", f"c1/{name}").headers
    for key in (
        "Etag",
        "Content-Type",
        "Content-Length",
        "X-Object-Meta-Stars",
        "Content-Disposition",
    ):
        assert after[key] == before[key], key
    want_default = "0"  # the new classes replace the old ones whole, as on a PUT
    assert after["X-DSS-Object-Class"] == want_default
    assert after["X-DSS-Range-Class"] == "0-2-31"
    assert swift.request("GET", f"c1/{name}").content == data
    # The tier learns of the new classes for the stored bytes.
    reclass = [e for e in io if e.op == "reclassify"]
    assert reclass, "reclassification never reached dssio"
    covered = byte_classes(reclass, "reclassify", len(data))
    assert covered == expected_bytes(want_default, "0-2-31", len(data))


def test_user_metadata_post_keeps_classes(swift: Swift) -> None:
    name = new_name()
    swift.request("PUT", f"c1/{name}", data=payload(5000), headers={"X-DSS-Range-Class": "0-4-26"})
    resp = swift.request("POST", f"c1/{name}", headers={"X-Object-Meta-Album": "blue"})
    assert resp.status_code == 202
    head = swift.request("HEAD", f"c1/{name}").headers
    assert head["X-Object-Meta-Album"] == "blue"
    assert head["X-DSS-Range-Class"] == "0-4-26"


def test_post_with_user_metadata_and_class_sets_both(swift: Swift) -> None:
    name = new_name()
    swift.request("PUT", f"c1/{name}", data=b"x" * 100, headers={"X-Object-Meta-A": "1"})
    resp = swift.request(
        "POST", f"c1/{name}", headers={"X-Object-Meta-B": "2", "X-DSS-Object-Class": "28"}
    )
    assert resp.status_code == 202
    head = swift.request("HEAD", f"c1/{name}").headers
    assert head["X-Object-Meta-B"] == "2" and "X-Object-Meta-A" not in head
    assert head["X-DSS-Object-Class"] == "28"


# -- COPY and versioning ------------------------------------------------------------------


def test_copy_keeps_classes_and_can_set_new_ones(swift: Swift) -> None:
    name, data = new_name(), payload(20_000)
    swift.request("PUT", f"c1/{name}", data=data, headers={"X-DSS-Range-Class": "0-8-27"})
    resp = swift.request("COPY", f"c1/{name}", headers={"Destination": f"c1/{name}-copy"})
    assert resp.status_code == 201, resp.text
    assert classes_of(swift, f"{name}-copy") == {
        "X-Dss-Object-Class": "0",
        "X-Dss-Range-Class": "0-8-27",
    }
    resp = swift.request(
        "PUT",
        f"c1/{name}-copy2",
        headers={"X-Copy-From": f"c1/{name}", "X-DSS-Object-Class": "30"},
    )
    assert resp.status_code == 201, resp.text
    assert classes_of(swift, f"{name}-copy2") == {"X-Dss-Object-Class": "30"}
    assert swift.request("GET", f"c1/{name}-copy2").content == data


def test_versioning_keeps_classes_of_old_versions(swift: Swift) -> None:
    assert swift.request("PUT", "vers", headers={"X-Versions-Enabled": "true"}).status_code in (
        201,
        202,
    )
    swift.request("PUT", "vers/doc", data=b"v1", headers={"X-DSS-Object-Class": "25"})
    swift.request("PUT", "vers/doc", data=b"v2", headers={"X-DSS-Object-Class": "26"})
    listing = swift.request("GET", "vers", params={"versions": "", "format": "json"}).json()
    versions = {item["version_id"]: item for item in listing if item["name"] == "doc"}
    assert len(versions) == 2
    classes = set()
    for version_id in versions:
        resp = swift.request("HEAD", "vers/doc", params={"version-id": version_id})
        assert resp.status_code == 200
        classes.add(resp.headers["X-DSS-Object-Class"])
    assert classes == {"25", "26"}


# -- the stock swift CLI ------------------------------------------------------------------


def test_stock_swift_cli_with_header(saio: object, swift: Swift, tmp_path: Path) -> None:
    src = tmp_path / "song.mp3"
    src.write_bytes(payload(4096))
    auth = ["-A", saio.auth_url, "-U", saio.user, "-K", saio.key]
    subprocess.run(
        [
            str(VENV_BIN / "swift"),
            *auth,
            "upload",
            "c1",
            "song.mp3",
            "-H",
            "X-DSS-Object-Class: 25",
        ],
        cwd=tmp_path,
        check=True,
        capture_output=True,
    )
    stat = subprocess.run(
        [str(VENV_BIN / "swift"), *auth, "stat", "c1", "song.mp3"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    assert "X-Dss-Object-Class: 25" in stat


# -- policy and /info ---------------------------------------------------------------------


@pytest.mark.parametrize("cls", ["1", "10", "32", "200"])
def test_classes_outside_the_policy_are_403(swift: Swift, cls: str) -> None:
    # The test cluster allows 0,11-31 and reserves 1-10 for the storage system.
    name = new_name()
    resp = swift.request("PUT", f"c1/{name}", data=b"x", headers={"X-DSS-Object-Class": cls})
    assert resp.status_code == 403
    assert f"class {cls} may not be set" in resp.text
    assert swift.request("HEAD", f"c1/{name}").status_code == 404


def test_info_advertises_dss(saio: object) -> None:
    import requests

    info = requests.get(f"{saio.proxy_url}/info", timeout=10).json()
    assert info["dss"]["formats"] == ["object", "range", "block"]
    assert info["dss"]["reserved_classes"] == "1-10"
    assert info["dss"]["settable_classes"] == "0,11-31"


def test_get_with_the_stored_classes_does_not_reclassify(swift: Swift, saio: object) -> None:
    name = new_name()
    swift.request("PUT", f"c1/{name}", data=payload(3000), headers={"X-DSS-Range-Class": "0-2-26"})
    with recorded(saio.record_log) as io:
        resp = swift.request("GET", f"c1/{name}", headers={"X-DSS-Range-Class": "0-2-26"})
    assert resp.status_code == 200
    assert [e for e in io if e.op == "reclassify"] == []
    assert resp.headers["X-DSS-Range-Class"] == "0-2-26"


@pytest.mark.parametrize(
    ("stored", "stated"),
    [
        (
            {"X-DSS-Object-Class": "26", "X-DSS-Range-Class": "0-1-26,2-2-27"},
            {"X-DSS-Object-Class": "26", "X-DSS-Range-Class": "2-2-27"},
        ),
        ({"X-DSS-Object-Class": "26"}, {"X-DSS-Object-Class": "26", "X-DSS-Range-Class": "0-6-26"}),
        ({}, {"X-DSS-Object-Class": "0"}),
    ],
    ids=["redundant-range-stored", "redundant-range-stated", "unclassified"],
)
def test_get_stating_the_stored_classes_in_another_form_does_not_reclassify(
    swift: Swift, saio: object, stored: dict[str, str], stated: dict[str, str]
) -> None:
    name = new_name()
    swift.request("PUT", f"c1/{name}", data=payload(3000), headers=stored)
    before = classes_of(swift, name)
    # A POST, even one the object servers find changes nothing, moves the X-Timestamp.
    stamp = swift.request("HEAD", f"c1/{name}").headers["X-Timestamp"]
    with recorded(saio.record_log) as io:
        resp = swift.request("GET", f"c1/{name}", headers=stated)
    assert resp.status_code == 200
    assert [e for e in io if e.op == "reclassify"] == []
    assert resp.headers["X-Timestamp"] == stamp
    assert {k: resp.headers[k] for k in before} == before
    # A GET that does change a class, to show both would have caught one.
    with recorded(saio.record_log) as io:
        changed = swift.request("GET", f"c1/{name}", headers={"X-DSS-Object-Class": "28"})
    assert changed.status_code == 200
    assert [e for e in io if e.op == "reclassify"] != []
    assert changed.headers["X-Timestamp"] != stamp


def test_large_object_manifest_ranges_refer_to_the_whole_object(swift: Swift) -> None:
    name = new_name()
    segment = payload(600_000)
    for i in (1, 2):
        assert swift.request("PUT", f"c1/{name}-seg{i}", data=segment).status_code == 201
    manifest = [{"path": f"c1/{name}-seg{i}"} for i in (1, 2)]
    # Sectors 2000-2099 lie far beyond the manifest's own few hundred bytes, inside the
    # 1.2 MB object it describes.
    resp = swift.request(
        "PUT",
        f"c1/{name}",
        params={"multipart-manifest": "put"},
        json=manifest,
        headers={"X-DSS-Range-Class": "2000-100-29"},
    )
    assert resp.status_code == 201, resp.text
    assert classes_of(swift, name) == {
        "X-Dss-Object-Class": "0",
        "X-Dss-Range-Class": "2000-100-29",
    }
    assert swift.request("GET", f"c1/{name}").content == segment * 2
    bad = swift.request(
        "PUT",
        f"c1/{name}-bad",
        params={"multipart-manifest": "put"},
        json=manifest,
        headers={"X-DSS-Range-Class": "2400-100-29"},
    )
    assert bad.status_code == 400 and "object has 2344" in bad.text


def _archive(members: list[tuple[str, bytes, dict[str, str]]]) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name, data, pax in members:
            info = tarfile.TarInfo(name)
            info.size, info.pax_headers = len(data), pax
            tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


def test_an_archive_extraction_classifies_by_user_metadata(swift: Swift, saio: object) -> None:
    """Swift's bulk middleware hands each extracted object the request's user metadata and
    each member's `user.meta.*` xattrs, and nothing else: the metadata form of the class
    headers reaches dss, the X-DSS-* form is dropped before it."""
    d = new_name()
    xattr = "SCHILY.xattr.user.meta."
    archive = _archive([
        (f"{d}/a", payload(5000), {}),
        (f"{d}/b", payload(5000), {f"{xattr}dss-object-class": "27"}),
        (f"{d}/c", payload(5000), {f"{xattr}dss-range-class": "0-2-28"}),
    ])  # fmt: skip
    with recorded(saio.record_log) as rec:
        resp = swift.request("PUT", "c1", params={"extract-archive": "tar"}, data=archive,
                             headers={"X-Object-Meta-Dss-Object-Class": "25",
                                      "Accept": "application/json"})  # fmt: skip
    # Bulk answers 200 at once and the outcome in the body.
    assert resp.json()["Number Files Created"] == 3, resp.text
    assert classes_of(swift, f"{d}/a") == {"X-Dss-Object-Class": "25"}
    assert classes_of(swift, f"{d}/b") == {"X-Dss-Object-Class": "27"}
    assert classes_of(swift, f"{d}/c") == {
        "X-Dss-Object-Class": "25",
        "X-Dss-Range-Class": "0-2-28",
    }
    writes = sorted({e.cls for e in rec if e.op == "write"})
    assert writes == [25, 27, 28], writes
    refused = swift.request("PUT", "c1", params={"extract-archive": "tar"}, data=archive,
                            headers={"X-Object-Meta-Dss-Object-Class": "300",
                                     "Accept": "application/json"})  # fmt: skip
    # A member's own class wins over the request's: b is stored, a and c are refused.
    assert refused.json()["Errors"] == [[f"c1/{d}/a", "400 Bad Request"],
                                        [f"c1/{d}/c", "400 Bad Request"]]  # fmt: skip
    dropped = swift.request("PUT", "c1", params={"extract-archive": "tar"},
                            data=_archive([(f"{d}/e", payload(100), {})]),
                            headers={"X-DSS-Object-Class": "25",
                                     "Accept": "application/json"})  # fmt: skip
    assert dropped.json()["Number Files Created"] == 1, dropped.text
    assert classes_of(swift, f"{d}/e") == {"X-Dss-Object-Class": "0"}


def test_a_dynamic_large_object_manifest_takes_ranges_of_the_object_it_stands_for(
    swift: Swift,
) -> None:
    """Its size is what its segments add up to when it is read, so a PUT of the manifest
    takes its ranges as they are, as a POST to it always did; a plain empty object still
    refuses ranges past its end."""
    name, segment = new_name(), payload(10_000)
    for i in (1, 2):
        assert swift.request("PUT", f"c1/{name}-segs/{i}", data=segment).status_code == 201
    ranges = {"X-DSS-Range-Class": "0-30-26"}  # 15,360 bytes: past one segment
    resp = swift.request(
        "PUT", f"c1/{name}", data=b"", headers={"X-Object-Manifest": f"c1/{name}-segs/", **ranges}
    )
    assert resp.status_code == 201, resp.text
    assert classes_of(swift, name) == {"X-Dss-Object-Class": "0", "X-Dss-Range-Class": "0-30-26"}
    assert swift.request("GET", f"c1/{name}").content == segment * 2
    plain = swift.request("PUT", f"c1/{name}-plain", data=b"", headers=ranges)
    assert plain.status_code == 400 and "object has 0" in plain.text
