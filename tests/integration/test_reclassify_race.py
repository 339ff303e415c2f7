"""Reclassification racing new uploads of the same object, on a real all-in-one cluster.

The middleware reads the object (HEAD) before it stores new classes (POST), to fit them to
the object's size and to re-send the metadata a POST would drop. A PUT between the two must
not get the metadata of the object it replaced: the object's metadata and data always
belong to the same upload.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator

import pytest

from swift_dss.deploy.saio import Saio, SaioConfig
from swift_dss.formats import encode_object

from .helpers import Swift

pytestmark = pytest.mark.integration

UPLOADS = 120
RECLASSIFICATIONS = 120


@pytest.fixture(scope="module")
def saio(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Saio]:
    """An all-in-one cluster of its own: requests racing on one object meet Swift's own
    503 now and then (a file replaced between its listing and its opening), and a proxy
    that has seen ten errors stops asking the only object server for a minute."""
    cluster = Saio(
        SaioConfig(
            dir=tmp_path_factory.mktemp("race") / "saio",
            port=0,
            dss_options={"allowed_classes": "0,11-31", "reserved_classes": "1-10"},
            proxy_options={"error_suppression_limit": "1000000"},
        )
    )
    cluster.up()
    try:
        yield cluster
    finally:
        cluster.down()


@pytest.fixture(scope="module")
def swift(saio: Saio) -> Swift:
    return Swift.with_container(saio, "race")


def _body(version: int) -> bytes:
    # Sizes differ between uploads, so classes fitted to one upload's size are wrong for
    # the next one.
    return f"v{version:06d};".encode() * (1 + version % 7) * 512


def _version_of(body: bytes) -> str:
    return body[1:7].decode()


def _reclassify(swift: Swift, path: str, via: str, cls: int) -> int:
    if via == "post":
        resp = swift.request("POST", path, headers={"X-DSS-Object-Class": str(cls)})
    elif via == "get":
        resp = swift.request("GET", path, headers={"X-DSS-Object-Class": str(cls)})
    else:
        resp = swift.request(
            "PUT", path, data=encode_object(cls), headers={"X-DSS-Class-File": "True"}
        )
    return resp.status_code


@pytest.mark.parametrize("via", ["post", "get", "class-file"])
def test_metadata_stays_with_its_upload_while_classes_change(
    saio: Saio, swift: Swift, via: str
) -> None:
    path = f"race/obj-{uuid.uuid4().hex[:10]}"
    first = swift.request("PUT", path, data=_body(0), headers={"X-Object-Meta-Version": "000000"})
    assert first.status_code == 201, first.text
    done = threading.Event()
    problems: list[str] = []
    statuses: list[int] = []

    def upload() -> None:
        own = Swift.connect(saio)
        try:
            for version in range(1, UPLOADS + 1):
                resp = own.request(
                    "PUT",
                    path,
                    data=_body(version),
                    headers={"X-Object-Meta-Version": f"{version:06d}"},
                )
                if resp.status_code != 201:
                    problems.append(f"PUT {version}: {resp.status_code} {resp.text}")
        finally:
            done.set()

    def reclassify() -> None:
        own = Swift.connect(saio)
        for n in range(RECLASSIFICATIONS):
            statuses.append(_reclassify(own, path, via, 11 + n % 2))
            if done.is_set():
                break

    threads = [threading.Thread(target=upload), threading.Thread(target=reclassify)]
    for t in threads:
        t.start()
    mismatches, torn = [], []
    while not done.is_set():
        resp = swift.request("GET", path)
        if resp.status_code == 503:
            # Stock Swift's answer when an upload replaced the data file between its listing
            # and its opening, and there is no other replica to ask.
            continue
        assert resp.status_code == 200, resp.text
        meta, version = resp.headers.get("X-Object-Meta-Version"), _version_of(resp.content)
        if meta != version:
            mismatches.append((meta, version))
        if not version.isdigit() or resp.content != _body(int(version)):
            # A body that is no upload's whole: what a GET racing the removal of its file
            # would send if the tier served what the HDD held without the cached blocks.
            torn.append((version, resp.headers.get("Etag")))
    for t in threads:
        t.join(timeout=300)
    assert not problems, problems
    # Every reclassification took, or, after uploads kept replacing the object, answered
    # 409; 503 only as Swift answers a read that loses that race (see above).
    assert set(statuses) <= {200, 202, 409, 503}, statuses
    assert statuses.count(409) < len(statuses), statuses
    assert not mismatches, f"another upload's metadata on {len(mismatches)} reads: {mismatches[:5]}"
    assert not torn, f"{len(torn)} bodies that are no upload's: {torn[:5]}"
    final = swift.request("GET", path)
    assert final.headers["X-Object-Meta-Version"] == _version_of(final.content) == f"{UPLOADS:06d}"
