"""dss answers every user as stock Swift does, whatever the ACLs; class changes ride on
their request's permissions; the middleware's StatsD counters reach a real UDP socket."""

from __future__ import annotations

import hashlib
import hmac
import itertools
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from swift_dss.formats import encode_object

from .cluster_pair import ANONYMOUS, USERS, Pair, cluster_pair

pytestmark = pytest.mark.integration

ADMIN = "test:tester"
ALL_USERS = [*USERS, ANONYMOUS]
#: Containers of AUTH_test: readable by some, writable by some, and private.
CONTAINERS = {
    "c-read": {"X-Container-Read": "test:reader,test2:tester2"},
    "c-write": {"X-Container-Write": "test:writer,test2:tester2"},
    "c-plain": {},
}
_names = itertools.count()


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pair]:
    with cluster_pair(Path(tmp_path_factory.mktemp("acl"))) as p:
        for name, headers in CONTAINERS.items():
            for resp in p.both(ADMIN, "PUT", name, headers=headers):
                assert resp.status_code in (201, 202), resp.text
        yield p


def fresh_object(pair: Pair, container: str) -> str:
    """An object the admin put in both clusters, class 25 on the dss one."""
    path = f"{container}/o{next(_names)}"
    stock, dss = pair.both(
        ADMIN,
        "PUT",
        path,
        data=b"x" * 3000,
        headers={"X-Object-Meta-Stars": "5", "X-DSS-Object-Class": "25"},
    )
    assert stock.status_code == dss.status_code == 201, dss.text
    return path


def stored_class(pair: Pair, path: str) -> str | None:
    resp = pair.dss.request(ADMIN, "HEAD", path)
    return resp.headers.get("X-DSS-Object-Class") if resp.status_code == 200 else None


# -- requests without class headers: the same status as stock Swift ---------------------

PLAIN = {
    "PUT": lambda p: ("PUT", p + "-new", {"data": b"new"}),
    "POST": lambda p: ("POST", p, {"headers": {"X-Object-Meta-Color": "blue"}}),
    "GET": lambda p: ("GET", p, {}),
    "HEAD": lambda p: ("HEAD", p, {}),
    "COPY": lambda p: ("COPY", p, {"headers": {"Destination": p + "-copy"}}),
    "PUT-copy-from": lambda p: (
        "PUT",
        p + "-copy2",
        {"headers": {"X-Copy-From": p}},
    ),
    "DELETE": lambda p: ("DELETE", p, {}),
}


@pytest.mark.parametrize("container", CONTAINERS)
@pytest.mark.parametrize("user", ALL_USERS)
@pytest.mark.parametrize("op", PLAIN)
def test_plain_requests_answer_as_stock(pair: Pair, op: str, user: str, container: str) -> None:
    path = fresh_object(pair, container)
    method, target, kwargs = PLAIN[op](path)
    stock, dss = pair.both(user, method, target, **kwargs)
    assert dss.status_code == stock.status_code, (op, user, container, dss.text)
    if method == "GET" and stock.status_code == 200:
        assert dss.content == stock.content
    if op == "POST" and stock.status_code == 202:
        # The user metadata changed as on stock Swift, and the classes stayed.
        head = pair.dss.request(ADMIN, "HEAD", path).headers
        assert head["X-Object-Meta-Color"] == "blue" and "X-Object-Meta-Stars" not in head
        assert head["X-DSS-Object-Class"] == "25"


def test_write_only_user_posts_metadata(pair: Pair) -> None:
    path = fresh_object(pair, "c-write")
    # The writer may not read: stock Swift refuses its HEAD and accepts its POST.
    assert pair.dss.request("test:writer", "HEAD", path).status_code == 403
    resp = pair.dss.request("test:writer", "POST", path, headers={"X-Object-Meta-Color": "blue"})
    assert resp.status_code == 202, resp.text
    assert stored_class(pair, path) == "25"


# -- class headers: allowed exactly when the request carrying them is --------------------

WITH_CLASSES = {
    "PUT": lambda p: ("PUT", p, {"data": b"y" * 2000}),
    "POST": lambda p: ("POST", p, {}),
    "POST+meta": lambda p: ("POST", p, {"headers": {"X-Object-Meta-Color": "red"}}),
    "COPY": lambda p: ("COPY", p, {"headers": {"Destination": p}}),
}


@pytest.mark.parametrize("container", CONTAINERS)
@pytest.mark.parametrize("user", ALL_USERS)
@pytest.mark.parametrize("op", WITH_CLASSES)
def test_class_change_rides_on_its_request(pair: Pair, op: str, user: str, container: str) -> None:
    path = fresh_object(pair, container)
    method, target, kwargs = WITH_CLASSES[op](path)
    stock = pair.stock.request(user, method, target, **kwargs)
    headers = {**kwargs.pop("headers", {}), "X-DSS-Object-Class": "28"}
    dss = pair.dss.request(user, method, target, headers=headers, **kwargs)
    assert dss.status_code == stock.status_code, (op, user, container, dss.text)
    want = "28" if stock.ok else "25"
    assert stored_class(pair, path) == want


@pytest.mark.parametrize("how", ["COPY", "X-Copy-From"])
@pytest.mark.parametrize("user", ALL_USERS)
def test_copy_with_classes_classifies_the_copy_alone(pair: Pair, user: str, how: str) -> None:
    # From a container some users may only read to one they may only write: the classes
    # are the copy's, and reading the source changes nothing about it.
    source = fresh_object(pair, "c-read")
    copy = f"c-write/o{next(_names)}"
    if how == "COPY":
        method, path, headers = "COPY", source, {"Destination": copy}
    else:
        method, path, headers = "PUT", copy, {"X-Copy-From": source}
    stock = pair.stock.request(user, method, path, headers=headers)
    dss = pair.dss.request(user, method, path, headers={**headers, "X-DSS-Object-Class": "28"})
    assert dss.status_code == stock.status_code, (user, dss.text)
    assert stored_class(pair, source) == "25"
    assert stored_class(pair, copy) == ("28" if stock.ok else None)


@pytest.mark.parametrize("container", CONTAINERS)
@pytest.mark.parametrize("user", ALL_USERS)
def test_a_malformed_flag_is_refused_after_the_write_check(
    pair: Pair, user: str, container: str
) -> None:
    path = fresh_object(pair, container)
    stock = pair.stock.request(user, "PUT", path, data=b"z")
    dss = pair.dss.request(user, "PUT", path, data=b"z", headers={"X-DSS-Object-File": "maybe"})
    assert dss.status_code == (400 if stock.ok else stock.status_code), dss.text
    assert stored_class(pair, path) == "25"


@pytest.mark.parametrize("container", CONTAINERS)
@pytest.mark.parametrize("user", ALL_USERS)
def test_class_file_put_rides_on_the_put(pair: Pair, user: str, container: str) -> None:
    path = fresh_object(pair, container)
    stock = pair.stock.request(user, "PUT", path + "-probe", data=b"z")
    dss = pair.dss.request(
        user, "PUT", path, data=encode_object(29), headers={"X-DSS-Class-File": "True"}
    )
    if stock.ok:
        assert dss.status_code == 202, dss.text
    else:
        assert dss.status_code == stock.status_code
    assert stored_class(pair, path) == ("29" if stock.ok else "25")


@pytest.mark.parametrize("container", CONTAINERS)
@pytest.mark.parametrize("user", ALL_USERS)
def test_reclassifying_get_needs_read_and_write(pair: Pair, user: str, container: str) -> None:
    path = fresh_object(pair, container)
    read = pair.stock.request(user, "GET", path)
    write = pair.stock.request(user, "POST", path)
    same = pair.dss.request(user, "GET", path, headers={"X-DSS-Object-Class": "25"})
    assert same.status_code == read.status_code  # the stored classes: no change to make
    dss = pair.dss.request(user, "GET", path, headers={"X-DSS-Object-Class": "27"})
    if read.ok and write.ok:
        assert dss.status_code == 200 and dss.content == b"x" * 3000
    elif read.ok:
        assert dss.status_code == 403 and "needs write access" in dss.text
    else:
        assert dss.status_code == read.status_code
    assert stored_class(pair, path) == ("27" if read.ok and write.ok else "25")


def test_write_only_user_learns_nothing_of_the_size(pair: Pair) -> None:
    path = fresh_object(pair, "c-write")  # 3000 bytes: 6 sectors
    beyond = {"X-DSS-Range-Class": "4-100-26"}
    resp = pair.dss.request("test:writer", "POST", path, headers=beyond)
    assert resp.status_code == 202, resp.text
    assert "6" not in resp.text
    head = pair.dss.request(ADMIN, "HEAD", path).headers
    assert head["X-DSS-Range-Class"] == "4-2-26"  # what lies inside the object
    # Whoever may read the object is told instead.
    resp = pair.dss.request(ADMIN, "POST", path, headers=beyond)
    assert resp.status_code == 400 and "object has 6" in resp.text


# -- temporary URLs -----------------------------------------------------------------------

TEMPURL_KEY = "tempurl-secret"


def signed(method: str, path: str) -> dict[str, str]:
    """tempurl's query for METHOD on AUTH_test/PATH, valid for ten minutes."""
    expires = int(time.time()) + 600
    text = f"{method}\n{expires}\n/v1/AUTH_test/{path}".encode()
    sig = hmac.new(TEMPURL_KEY.encode(), text, hashlib.sha256).hexdigest()
    return {"temp_url_sig": sig, "temp_url_expires": str(expires)}


@pytest.fixture(scope="module")
def tempurl_container(pair: Pair) -> str:
    for resp in pair.both(
        ADMIN, "PUT", "c-temp", headers={"X-Container-Meta-Temp-URL-Key": TEMPURL_KEY}
    ):
        assert resp.status_code in (201, 202), resp.text
    return "c-temp"


def test_a_temporary_url_changes_classes_only_with_a_signature_for_a_write(
    pair: Pair, tempurl_container: str
) -> None:
    """tempurl checks the signature's method once and then lets any method through, so
    dss holds a GET link to what it grants: reading, not changing classes."""
    path = fresh_object(pair, tempurl_container)
    get, post = signed("GET", path), signed("POST", path)
    for stock, dss in [
        pair.both(ANONYMOUS, "GET", path, params=get),
        pair.both(ANONYMOUS, "HEAD", path, params=get),
        pair.both(ANONYMOUS, "GET", path, params=post),
    ]:
        assert dss.status_code == stock.status_code, dss.text
    same = pair.dss.request(
        ANONYMOUS, "GET", path, params=get, headers={"X-DSS-Object-Class": "25"}
    )
    assert same.status_code == 200 and same.content == b"x" * 3000
    change = {"X-DSS-Object-Class": "27"}
    refused = pair.dss.request(ANONYMOUS, "GET", path, params=get, headers=change)
    assert refused.status_code == 403 and "needs write access" in refused.text
    assert stored_class(pair, path) == "25"
    posted = pair.dss.request(ANONYMOUS, "POST", path, params=post, headers=change)
    assert posted.status_code == 202, posted.text
    assert stored_class(pair, path) == "27"
    put = signed("PUT", path)
    new = pair.dss.request(ANONYMOUS, "PUT", path, params=put, data=b"y" * 10,
                           headers={"X-DSS-Object-Class": "28"})  # fmt: skip
    assert new.status_code == 201 and stored_class(pair, path) == "28"
    refile = pair.dss.request(ANONYMOUS, "PUT", path, params=put, data=encode_object(29),
                              headers={"X-DSS-Class-File": "true"})  # fmt: skip
    assert refile.status_code == 202 and stored_class(pair, path) == "29"


# -- StatsD -------------------------------------------------------------------------------


def received(sock: socket.socket) -> list[str]:
    sock.settimeout(0)
    out = []
    while True:
        try:
            out.append(sock.recv(65536).decode())
        except BlockingIOError:
            return out


def wait_for(sock: socket.socket, metric: str, count: int) -> list[str]:
    """The metrics received until ``count`` of ``metric`` came (a timeout fails the test)."""
    sock.settimeout(30)
    got: list[str] = []
    while sum(m == metric for m in got) < count:
        got.append(sock.recv(65536).decode())
    return got


def test_statsd_counters(pair: Pair) -> None:
    received(pair.statsd)
    path = fresh_object(pair, "c-plain")  # one classified PUT
    wait_for(pair.statsd, "dss.classes_set:1|c", 1)
    cases = [
        ({"X-DSS-Object-Class": "x"}, 400),
        ({"X-DSS-Object-Class": "3"}, 403),
        ({"X-DSS-Range-Class": ",".join(f"{i * 2}-1-{11 + i % 2}" for i in range(300))}, 413),
    ]
    for headers, status in cases:
        resp = pair.dss.request(ADMIN, "PUT", path + "-bad", data=b"q" * 100, headers=headers)
        assert resp.status_code == status, resp.text
        wait_for(pair.statsd, f"dss.refused.{status}:1|c", 1)
    resp = pair.dss.request(ADMIN, "POST", path, headers={"X-DSS-Object-Class": "26"})
    assert resp.status_code == 202
    wait_for(pair.statsd, "dss.reclassified:1|c", 1)
    # Requests without classes, and refusals by tempauth, count nothing.
    assert pair.dss.request(ADMIN, "PUT", path + "-plain", data=b"p").status_code == 201
    nobody = pair.dss.request("test:nobody", "PUT", path, headers={"X-DSS-Object-Class": "3"})
    assert nobody.status_code == 403
    resp = pair.dss.request(ADMIN, "GET", path, headers={"X-DSS-Object-Class": "27"})
    assert resp.status_code == 200
    assert [m for m in wait_for(pair.statsd, "dss.reclassified:1|c", 1)] == ["dss.reclassified:1|c"]
