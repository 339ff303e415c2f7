"""DssClient's wire behaviour, against a small local stand-in for a dss-enabled Swift proxy.

The stand-in speaks tempauth v1 and the dss contract of docs/protocol.md (headers,
object files, class files, reclassification), parsing with swift_dss.formats, and records
what each request looked like so the tests can check bodies, lengths and streaming.
"""

from __future__ import annotations

import hashlib
import io
import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from swift_dss.client.api import CHUNK, DssClient, DssError, DssRequestError
from swift_dss.formats import (
    ClassError,
    ClassMap,
    classmap_from_headers,
    classmap_to_headers,
    read_classfile,
)
from tests.unit.serving import serving

PREFIX = "/v1/AUTH_test/"
NOT_FOUND = b"<html><h1>Not Found</h1><p>The resource could not be found.</p></html>"


@dataclass
class Stored:
    data: bytes
    classes: ClassMap


@dataclass
class Request:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class State:
    objects: dict[str, Stored] = field(default_factory=dict)
    containers: set[str] = field(default_factory=set)
    requests: list[Request] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, *args: Any) -> None:
        pass

    def _body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            out = bytearray()
            while True:
                size = int(self.rfile.readline().split(b";")[0], 16)
                if not size:
                    self.rfile.readline()
                    return bytes(out)
                out += self.rfile.read(size)
                self.rfile.readline()
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def _send(self, status: int, body: bytes = b"", headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        if "Content-Length" not in (headers or {}):
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _handle(self) -> None:
        state = self.server.state
        body = self._body()
        hdr = {k.lower(): v for k, v in self.headers.items()}
        with state.lock:
            state.requests.append(Request(self.command, self.path, hdr, body))
        if self.path == "/auth/v1.0":
            if hdr.get("x-auth-key") != "testing":
                return self._send(401, b"<html><h1>Unauthorized</h1></html>")
            url = f"http://127.0.0.1:{self.server.server_address[1]}{PREFIX.rstrip('/')}"
            return self._send(200, headers={"X-Storage-Url": url, "X-Auth-Token": "tok"})
        if hdr.get("x-auth-token") != "tok" or not self.path.startswith(PREFIX):
            return self._send(401)
        container, _, obj = self.path[len(PREFIX) :].partition("/")
        if not obj:
            if self.command == "PUT":
                state.containers.add(container)
                return self._send(201)
            return self._send(204 if container in state.containers else 404)
        try:
            self._object(state, f"{container}/{obj}", hdr, body)
        except ClassError as e:
            self._send(e.http_status, str(e).encode())

    def _object(self, state: State, key: str, hdr: dict[str, str], body: bytes) -> None:
        given = classmap_from_headers(hdr.get("x-dss-object-class"), hdr.get("x-dss-range-class"))
        if hdr.get("x-dss-object-file") == "True" or hdr.get("x-dss-class-file") == "True":
            stream = io.BytesIO(body)
            cf = read_classfile(stream.read)
            ranges = cf.classmap.ranges
            default = cf.classmap.default if given is None else given.default
            given = ClassMap.build(default, ranges)
            body = stream.read()
        current = state.objects.get(key)
        if self.command == "PUT" and hdr.get("x-dss-class-file") == "True":
            if current is None:
                return self._send(404)
            current.classes = given or ClassMap()
            return self._send(201)
        if self.command == "PUT":
            state.objects[key] = Stored(body, given or ClassMap())
            return self._send(201, headers={"ETag": hashlib.md5(body).hexdigest()})
        if current is None:
            return self._send(
                404, b"<html><h1>Not Found</h1><p>The resource could not be found.</p></html>"
            )
        if given is not None:
            given.check_size(len(current.data))
            current.classes = given
        out = {
            **classmap_to_headers(current.classes),
            "ETag": hashlib.md5(current.data).hexdigest(),
            "Content-Length": str(len(current.data)),
        }
        if self.command == "POST":
            return self._send(202)
        self._send(200, current.data, out)

    do_GET = do_PUT = do_POST = do_HEAD = _handle


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.state = State()

    @property
    def auth_url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/auth/v1.0"


@pytest.fixture(scope="module")
def _running() -> Iterator[_Server]:
    with serving(_Server()) as srv:
        yield srv


@pytest.fixture
def server(_running: _Server) -> _Server:
    _running.state = State()
    return _running


@pytest.fixture
def client(server: _Server) -> Iterator[DssClient]:
    with DssClient(server.auth_url, "test:tester", "testing", retries=0) as c:
        c.ensure_container("c")
        yield c


def _puts(server: _Server) -> list[Request]:
    return [r for r in server.state.requests if r.method == "PUT" and r.path.count("/") > 3]


def test_headers_upload_round_trip(client: DssClient, server: _Server, tmp_path: Path) -> None:
    src = tmp_path / "src"
    data = os.urandom(5000)
    src.write_bytes(data)
    cmap = ClassMap.build(25, [(0, 2, 26)])
    etag = client.upload("c", "o", src, cmap)
    assert etag == hashlib.md5(data).hexdigest()
    (put,) = _puts(server)
    assert put.headers["x-dss-object-class"] == "25"
    assert put.headers["x-dss-range-class"] == "0-2-26"
    assert put.headers["content-length"] == str(len(data))
    dest = tmp_path / "dest"
    assert client.download("c", "o", dest) == cmap
    assert dest.read_bytes() == data
    assert client.classes("c", "o") == cmap
    assert not list(tmp_path.glob(".dest.*"))


@pytest.mark.parametrize(
    "classes",
    [ClassMap(27), ClassMap.build(0, [(0, 1, 25), (4, 4, 26)]), ClassMap.build(28, [(1, 1, 29)])],
)
def test_object_file_upload(
    client: DssClient, server: _Server, tmp_path: Path, classes: ClassMap
) -> None:
    data = os.urandom(7 * 512 + 100)
    etag = client.upload("c", "o", io.BytesIO(data), classes, via="object-file")
    assert etag == hashlib.md5(data).hexdigest()
    (put,) = _puts(server)
    assert put.headers["x-dss-object-file"] == "True"
    cf = read_classfile(io.BytesIO(put.body).read)
    assert put.body[cf.size :] == data
    assert put.headers["content-length"] == str(cf.size + len(data))
    assert client.classes("c", "o") == classes
    # Only a map with both ranges and a default needs the header beside the file.
    assert ("x-dss-object-class" in put.headers) == bool(classes.ranges and classes.default)


class _Recording(io.RawIOBase):
    """A source that is not a file on disk and records the reads made of it."""

    def __init__(self, size: int) -> None:
        self.left = size
        self.reads: list[int] = []
        self.md5 = hashlib.md5()

    def readable(self) -> bool:
        return True

    def read(self, n: int = -1) -> bytes:
        self.reads.append(n)
        chunk = os.urandom(min(self.left, n if n >= 0 else self.left))
        self.left -= len(chunk)
        self.md5.update(chunk)
        return chunk


def test_unknown_length_streams_chunked(client: DssClient, server: _Server) -> None:
    src = _Recording(10 * CHUNK + 7)
    etag = client.upload("c", "big", src, 26, via="object-file")
    assert etag == src.md5.hexdigest()
    assert max(src.reads) <= CHUNK
    (put,) = _puts(server)
    assert put.headers.get("transfer-encoding") == "chunked"
    assert server.state.objects["c/big"].classes == ClassMap(26)


def test_reads_are_bounded_for_files(client: DssClient, tmp_path: Path) -> None:
    src = tmp_path / "f"
    src.write_bytes(os.urandom(4 * CHUNK))
    reads: list[int] = []
    with open(src, "rb") as f:
        real = f.read

        def read(n: int = -1) -> bytes:
            reads.append(n)
            return real(n)

        f.read = read  # type: ignore[method-assign]
        client.upload("c", "f", f, 25, via="object-file")
    assert reads and all(0 <= n <= CHUNK for n in reads)


@pytest.mark.parametrize("via", ["post", "class-file", "get"])
def test_reclassify_routes(client: DssClient, server: _Server, via: str) -> None:
    data = os.urandom(4096)
    client.upload("c", "o", io.BytesIO(data), 25)
    new = ClassMap.build(27, [(0, 4, 28)])
    client.reclassify("c", "o", new, via=via)  # type: ignore[arg-type]
    assert client.classes("c", "o") == new
    assert server.state.objects["c/o"].data == data
    last = server.state.requests[-2]  # the reclassification, before the HEAD
    expected = {"post": "POST", "class-file": "PUT", "get": "GET"}[via]
    assert last.method == expected
    if via == "class-file":
        assert last.headers["x-dss-class-file"] == "True"


def test_download_to_file_object_and_discard(client: DssClient) -> None:
    data = os.urandom(70_000)
    client.upload("c", "o", io.BytesIO(data), 30)
    out = io.BytesIO()
    assert client.download("c", "o", out) == ClassMap(30)
    assert out.getvalue() == data
    assert client.download("c", "o", None) == ClassMap(30)


def test_server_reason_in_errors(client: DssClient, tmp_path: Path) -> None:
    client.upload("c", "o", io.BytesIO(b"x" * 512), 25)
    with pytest.raises(DssRequestError) as err:
        client.reclassify("c", "o", ClassMap.build(0, [(0, 8, 26)]))
    assert err.value.status == 400
    assert "ends at sector 8" in str(err.value)
    with pytest.raises(DssRequestError) as err:
        client.download("c", "missing", None)
    assert err.value.status == 404
    assert "could not be found" in str(err.value)
    assert "<" not in str(err.value)
    with pytest.raises(DssRequestError) as err:
        client.reclassify("c", "missing", 25, via="class-file")
    assert err.value.status == 404


def test_client_side_checks(client: DssClient) -> None:
    with pytest.raises(ClassError, match="ends at sector"):
        client.upload("c", "o", io.BytesIO(b"x"), ClassMap.build(0, [(0, 2, 25)]))
    with pytest.raises(ValueError, match="needs classes"):
        client.upload("c", "o", io.BytesIO(b"x"), None, via="object-file")
    with pytest.raises(ValueError):
        client.upload("c", "o", io.BytesIO(b"x"), 300)
    with pytest.raises(TypeError):
        client.upload("c", "o", io.BytesIO(b"x"), "25")  # type: ignore[arg-type]


def test_bad_credentials(server: _Server) -> None:
    with (
        DssClient(server.auth_url, "test:tester", "wrong", retries=0) as c,
        pytest.raises(DssRequestError, match="401"),
    ):
        c.classes("c", "o")


def test_unreachable() -> None:
    with (
        DssClient("http://127.0.0.1:9/auth/v1.0", retries=0) as c,
        pytest.raises(DssError, match=r"cannot reach|refused"),
    ):
        c.classes("c", "o")


@pytest.mark.parametrize(
    ("call", "said"),
    [
        (lambda c: c.classes("c", "../o"), "'..' segment"),
        (lambda c: c.upload("c", "a/./b", io.BytesIO(b"x")), "'.' segment"),
        (lambda c: c.download("c", "", io.BytesIO()), "may not be empty"),
        (lambda c: c.reclassify("..", "o", 25), "would be resolved away"),
        (lambda c: c.ensure_container("a/b"), "not a container name"),
        (lambda c: c.request("HEAD", "c", ".."), "'..' segment"),
    ],
)
def test_names_a_request_cannot_address_are_refused_before_it(call: Any, said: str) -> None:
    # Nothing listens on port 9: a request would fail otherwise.
    with DssClient("http://127.0.0.1:9/auth/v1.0", retries=0) as c, pytest.raises(ValueError) as e:
        call(c)
    assert said in str(e.value)


def test_environment_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ST_AUTH", "http://example.invalid/auth/v1.0")
    monkeypatch.setenv("ST_USER", "a:b")
    c = DssClient()
    assert (c.auth_url, c.user) == ("http://example.invalid/auth/v1.0", "a:b")
    monkeypatch.delenv("ST_AUTH")
    assert DssClient().auth_url == "http://127.0.0.1:8080/auth/v1.0"


def test_cli_against_stand_in(server: _Server, tmp_path: Path) -> None:
    from click.testing import CliRunner

    from swift_dss.cli import main

    auth = ["-A", server.auth_url]
    src = tmp_path / "movie.mkv"
    data = os.urandom(2000)
    src.write_bytes(data)
    runner = CliRunner()
    r = runner.invoke(main, ["upload", *auth, "c", str(src), "--auto", "--name", "m.mkv"])
    assert r.exit_code == 0, r.output
    assert r.output.splitlines() == [
        f"c/m.mkv: X-DSS-Object-Class: 28 (etag {hashlib.md5(data).hexdigest()})",
        "  auto: video (extension .mkv) -> USER4 (28)",
    ]
    r = runner.invoke(main, ["download", *auth, "c", "m.mkv", "-o", "-"])
    assert r.exit_code == 0, r.stderr
    assert r.stdout_bytes == data
    assert r.stderr.strip() == "X-DSS-Object-Class: 28"
    r = runner.invoke(main, ["reclassify", *auth, "c", "m.mkv", "--range-class", "0-1-30"])
    assert r.exit_code == 0, r.output
    r = runner.invoke(main, ["classes", *auth, "--json", "c", "m.mkv"])
    assert r.exit_code == 0, r.output
    assert r.output.strip() == (
        '{"object_class": 0, "range_class": "0-1-30",'
        ' "ranges": [{"offset": 0, "length": 1, "class": 30}]}'
    )
    r = runner.invoke(main, ["classes", *auth, "c", "missing"])
    assert r.exit_code == 1
    assert r.output.strip() == "Error: HEAD c/missing: 404 Not Found"


def test_request_answers_whatever_the_status(client: DssClient, server: _Server) -> None:
    data = os.urandom(600)
    put = client.request("PUT", "c", "o", headers={"X-DSS-Object-Class": "25"}, body=data)
    assert put.status == 201
    got = client.request("GET", "c", "o")
    assert (got.status, got.body) == (200, data)
    assert got.headers["x-dss-object-class"] == "25"
    assert got.headers["etag"] == hashlib.md5(data).hexdigest()
    # Refusals come back as answers, reason and body included, never as exceptions.
    refused = client.request("POST", "c", "o", headers={"X-DSS-Range-Class": "0-9-25"})
    assert refused.status == 400
    assert b"ends at sector 9" in refused.body
    missing = client.request("HEAD", "c", "missing")
    assert (missing.status, missing.reason, missing.body) == (404, "Not Found", b"")
    assert client.request("PUT", "d").status == 201
    assert "d" in server.state.containers
    assert server.state.objects["c/o"].classes == ClassMap(25)


def test_request_sends_header_bytes_as_given(client: DssClient, server: _Server) -> None:
    # The UTF-8 bytes of Arabic-Indic "25", given one character per byte: they must reach
    # the server unchanged, not encoded a second time.
    value = "\u0662\u0665".encode().decode("latin-1")
    reply = client.request("PUT", "c", "o", headers={"X-Object-Meta-Note": value}, body=b"")
    assert reply.status == 201
    assert server.state.requests[-1].headers["x-object-meta-note"] == value


def test_request_with_a_token_from_elsewhere(client: DssClient, server: _Server) -> None:
    from swiftclient.client import Connection

    url = f"http://127.0.0.1:{server.server_address[1]}{PREFIX.rstrip('/')}"
    logins = sum(r.path == "/auth/v1.0" for r in server.state.requests)
    conn = Connection(preauthurl=url, preauthtoken="tok", retries=0)
    with DssClient(url, connection=conn) as c:
        assert c.request("HEAD", "c").status == 204
        assert c.request("GET", "c", "missing").status == 404
    assert sum(r.path == "/auth/v1.0" for r in server.state.requests) == logins
    with DssClient(url, connection=Connection(preauthurl=url, preauthtoken="old")) as c:
        assert c.request("HEAD", "c").status == 401


def test_request_without_an_answer_raises() -> None:
    with (
        DssClient("http://127.0.0.1:9/auth/v1.0", retries=0) as c,
        pytest.raises(DssError, match=r"GET c/o: cannot reach"),
    ):
        c.request("GET", "c", "o")


def _cli(*args: str, **env: str) -> Any:
    from click.testing import CliRunner

    from swift_dss.cli import main

    return CliRunner().invoke(main, list(args), env=env)


def _logins(server: _Server) -> int:
    return sum(r.path == "/auth/v1.0" for r in server.state.requests)


@pytest.fixture
def no_auth_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("ST_AUTH", "ST_USER", "ST_KEY", "ST_AUTH_VERSION", "OS_AUTH_TOKEN",
                "OS_STORAGE_URL", "OS_AUTH_URL", "OS_USERNAME", "OS_PASSWORD"):  # fmt: skip
        monkeypatch.delenv(var, raising=False)


def test_cli_logs_in_with_swift_flags_and_variables(server: _Server, no_auth_env: None) -> None:
    bad = _cli("reclassify", "-A", server.auth_url, "-U", "test:tester", "-K", "wrong",
                      "c", "o", "--class", "25")  # fmt: skip
    assert bad.exit_code == 1
    assert bad.output.strip().splitlines()[-1].startswith("Error: POST c/o: 401")
    r = _cli("classes", "-U", "test:tester", "c", "missing", ST_AUTH=server.auth_url,
             ST_KEY="testing")  # fmt: skip
    assert r.output.strip() == "Error: HEAD c/missing: 404 Not Found"
    # The flag beats the variable.
    r = _cli("classes", "-K", "wrong", "c", "missing", ST_AUTH=server.auth_url, ST_KEY="testing")
    assert "401" in r.output


def test_cli_with_a_token_and_storage_url_does_not_log_in(
    server: _Server, no_auth_env: None
) -> None:
    url = f"http://127.0.0.1:{server.server_address[1]}{PREFIX.rstrip('/')}"
    before = _logins(server)
    r = _cli("classes", "--os-auth-token", "tok", "--os-storage-url", url, "c", "missing")
    assert r.output.strip() == "Error: HEAD c/missing: 404 Not Found"
    r = _cli("classes", "c", "missing", OS_AUTH_TOKEN="stale", OS_STORAGE_URL=url)
    assert r.exit_code == 1 and "401" in r.output
    assert _logins(server) == before


def test_cli_refuses_a_bad_auth_version(no_auth_env: None) -> None:
    r = _cli("classes", "-V", "7", "c", "o")
    assert r.exit_code == 2
    last = r.output.strip().splitlines()[-1]
    assert last == "Error: --auth-version must be 1, 2 or 3, not '7'"


def test_api_takes_the_cli_auth_options(
    server: _Server, no_auth_env: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    from swift_dss.client.auth import SwiftAuth

    url = f"http://127.0.0.1:{server.server_address[1]}{PREFIX.rstrip('/')}"
    before = _logins(server)
    with DssClient(auth=SwiftAuth(os_auth_token="tok", os_storage_url=url), retries=0) as c:
        assert c.request("HEAD", "nothere").status == 404  # 404, not 401
    assert _logins(server) == before
    # The positional form stays a tempauth login whatever Keystone variables are set.
    monkeypatch.setenv("OS_IDENTITY_API_VERSION", "3")
    monkeypatch.setenv("OS_AUTH_URL", "http://127.0.0.1:9/v3")
    with DssClient(server.auth_url, "test:tester", "testing", retries=0) as c:
        assert c.request("HEAD", "nothere").status == 404  # 404, not 401
    assert _logins(server) == before + 1


@pytest.mark.parametrize("dest", ["/proc/nope", "/nonexistent-dir/x"])
def test_a_download_that_cannot_be_written_names_the_file_asked_for(dest: str) -> None:
    with pytest.raises(DssError, match=f"cannot write {dest}: ") as err:
        DssClient._write_atomically(Path(dest), iter([b"data"]), hashlib.md5())
    assert ".part" not in str(err.value)
