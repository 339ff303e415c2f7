"""A Swift client that sends and reads data classes (python-swiftclient underneath)."""

from __future__ import annotations

import hashlib
import io
import os
import re
import stat
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, BinaryIO, Literal, TypeVar
from urllib.parse import quote

import requests
from swiftclient.client import Connection
from swiftclient.exceptions import ClientException

from swift_dss.addresses import address_error
from swift_dss.client.auth import DEFAULT_AUTH_URL as DEFAULT_AUTH_URL
from swift_dss.client.auth import DEFAULT_KEY as DEFAULT_KEY
from swift_dss.client.auth import DEFAULT_USER as DEFAULT_USER
from swift_dss.client.auth import SwiftAuth, connection_kwargs
from swift_dss.client.classes import Classes, as_classmap, class_file, class_headers
from swift_dss.client.classes import classes_from_headers as _classes_from_headers
from swift_dss.formats import CLASS_FILE, OBJECT_FILE, ClassMap

CHUNK = 64 * 1024

UploadVia = Literal["headers", "object-file"]
ReclassifyVia = Literal["post", "class-file", "get"]
Source = str | os.PathLike[str] | BinaryIO | IO[bytes]
T = TypeVar("T")


class DssError(Exception):
    """A request the client could not complete."""


class DssRequestError(DssError):
    """The server refused a request (4xx) or failed it (5xx)."""

    def __init__(self, what: str, status: int, reason: str, detail: str = "") -> None:
        self.what = what
        self.status = status
        self.reason = reason
        self.detail = detail
        text = f"{what}: {status} {reason}".rstrip()
        if detail and detail.lower() != reason.lower():
            text += f": {detail}"
        super().__init__(text)


@dataclass(frozen=True)
class Reply:
    """An answer as the server gave it, refusals included."""

    status: int
    reason: str
    headers: dict[str, str]  # names in lower case
    body: bytes


def _detail(body: bytes | str | None) -> str:
    """The first line of an error body, without HTML markup."""
    if not body:
        return ""
    text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
    text = re.sub(r"<[^>]+>", " ", text)
    for line in text.splitlines():
        line = " ".join(line.split())
        if line:
            return line[:300]
    return ""


class _UploadBody(io.RawIOBase):
    """A class file (``prefix``, possibly empty) followed by the data of ``data``.

    Read piece by piece, so the data is never held whole; the MD5 of the data part is
    computed on the way for checking the ETag the server returns. Seekable when ``data`` is,
    so that swiftclient can rewind it to retry.
    """

    def __init__(self, prefix: bytes, data: IO[bytes]) -> None:
        self._prefix = prefix
        self._data = data
        self._pos = 0
        try:
            self._data_start: int | None = data.tell() if data.seekable() else None
        except (AttributeError, OSError):
            self._data_start = None
        self._md5: Any = hashlib.md5(usedforsecurity=False)
        self.data_bytes = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return self._data_start is not None

    def tell(self) -> int:
        return self._pos

    def seek(self, pos: int, whence: int = io.SEEK_SET) -> int:
        if self._data_start is None or whence != io.SEEK_SET or pos < 0:
            raise io.UnsupportedOperation("only absolute seeks on a seekable source")
        data_pos = max(0, pos - len(self._prefix))
        self._data.seek(self._data_start + data_pos)
        self._pos = pos
        self.data_bytes = data_pos
        # A digest is only meaningful over the data read from its start.
        self._md5 = hashlib.md5(usedforsecurity=False) if data_pos == 0 else None
        return pos

    def read(self, size: int = -1) -> bytes:
        if size is None or size < 0:
            return b"".join(iter(lambda: self.read(CHUNK), b""))
        if self._pos < len(self._prefix):
            chunk = self._prefix[self._pos : self._pos + size]
        else:
            chunk = self._data.read(size)
            if self._md5 is not None:
                self._md5.update(chunk)
            self.data_bytes += len(chunk)
        self._pos += len(chunk)
        return chunk

    def readinto(self, buf: Any) -> int:
        chunk = self.read(len(buf))
        buf[: len(chunk)] = chunk
        return len(chunk)

    @property
    def data_md5(self) -> str | None:
        return self._md5.hexdigest() if self._md5 is not None else None


def _remaining_size(f: IO[bytes]) -> int | None:
    """Bytes left in ``f`` from its position, when that can be known without reading."""
    try:
        st = os.fstat(f.fileno())
    except (AttributeError, OSError, ValueError):
        st = None
    try:
        if st is not None:
            # A pipe or socket has no length until it ends.
            return max(0, st.st_size - f.tell()) if stat.S_ISREG(st.st_mode) else None
        if f.seekable():
            here = f.tell()
            end = f.seek(0, io.SEEK_END)
            f.seek(here)
            return end - here
    except (AttributeError, OSError, ValueError):
        pass
    return None


@contextmanager
def _open_source(source: Source) -> Iterator[IO[bytes]]:
    if isinstance(source, str | os.PathLike):
        with open(source, "rb") as f:
            yield f
    else:
        yield source  # the caller's file: theirs to close


def _raw_request(
    url: str,
    token: str,
    method: str,
    container: str,
    name: str | None,
    headers: dict[str, bytes],
    body: bytes | None,
    *,
    http_conn: tuple[Any, Any],
    service_token: str | None = None,
) -> Reply:
    """One request in the form of swiftclient's own functions (storage URL and token first,
    the connection last), so that ``Connection._retry`` can log in and reconnect for it."""
    parsed, conn = http_conn
    path = f"{parsed.path}/{quote(container)}"
    if name is not None:
        path += f"/{quote(name)}"
    send: dict[str, str | bytes] = {"X-Auth-Token": token}
    if service_token:
        send["X-Service-Token"] = service_token
    send.update(headers)
    resp = conn.request(method, path, body, send)
    headers_in = {k.lower(): v for k, v in resp.headers.items()}
    return Reply(resp.status_code, resp.reason or "", headers_in, resp.content)


def _check_address(container: str, name: str | None) -> None:
    if error := address_error(container, name):
        raise ValueError(error)


class DssClient:
    """Object storage operations with classes, over one swiftclient Connection.

    ``auth`` carries the options of the ``swift`` CLI (see auth.py). Without it:
    ``auth_url``, ``user`` and ``key`` make a tempauth login (what is left out comes from
    ``ST_AUTH``, ``ST_USER``, ``ST_KEY``); with none of them, the environment's options as
    the CLI reads them (``ST_*``, ``OS_*``). Failing all, the all-in-one cluster's tempauth
    account. Bad options raise AuthOptionError (a ValueError).
    """

    def __init__(
        self,
        auth_url: str | None = None,
        user: str | None = None,
        key: str | None = None,
        *,
        auth: SwiftAuth | None = None,
        retries: int = 3,
        timeout: float | None = 60.0,
        connection: Connection | None = None,
    ) -> None:
        if auth is None:
            auth = SwiftAuth.from_env()
            if auth_url or user or key:
                # The positional form is a tempauth login, whatever OS_* the shell holds.
                auth = SwiftAuth(auth=auth_url or auth.auth, user=user or auth.user,
                                 key=key or auth.key, auth_version="1")  # fmt: skip
        if connection is None:
            kwargs = connection_kwargs(auth)
            connection = Connection(
                **kwargs, retries=retries, starting_backoff=0.5, max_backoff=4, timeout=timeout
            )
        self.conn = connection
        self.auth_url = connection.authurl or connection.url or DEFAULT_AUTH_URL
        self.user = connection.user

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> DssClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _error(self, what: str, e: Exception) -> DssError:
        if isinstance(e, ClientException):
            if e.http_status is None:
                return DssError(f"{what}: {e.msg}")
            detail = _detail(e.http_response_content)
            return DssRequestError(what, e.http_status, e.http_reason or "", detail)
        return DssError(f"{what}: cannot reach {self.auth_url}: {e}")

    def _call(self, what: str, func: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        try:
            return func(*args, **kwargs)
        except (ClientException, requests.exceptions.RequestException) as e:
            raise self._error(what, e) from None

    def request(
        self,
        method: str,
        container: str,
        name: str | None = None,
        *,
        headers: dict[str, str] | None = None,
        body: bytes | None = None,
    ) -> Reply:
        """``method`` on ``container`` or ``container/name``, answered whatever the status.

        For callers that judge the answer themselves: a refusal they expect, a body they
        compare byte for byte. Header values go out as given, each character one byte
        (Latin-1, as HTTP has it) rather than swiftclient's UTF-8, so that any byte sequence
        can be sent. Raises DssError only when no answer arrives (a 401 is an answer too: it
        brings no new login).
        """
        _check_address(container, name)
        what = f"{method} {container}" if name is None else f"{method} {container}/{name}"
        raw = {k: v.encode("latin-1") for k, v in (headers or {}).items()}
        # swiftclient wraps its own calls in _retry; it has no public way to make an
        # arbitrary one that logs in, reuses the connection and retries like the others.
        return self._call(
            what, self.conn._retry, None, _raw_request, method, container, name, raw, body
        )

    def ensure_container(self, container: str, headers: dict[str, str] | None = None) -> None:
        """Create ``container`` unless it exists."""
        _check_address(container, None)
        try:
            self.conn.head_container(container)
            return
        except ClientException as e:
            if e.http_status != 404:
                raise self._error(f"HEAD {container}", e) from None
        except requests.exceptions.RequestException as e:
            raise self._error(f"HEAD {container}", e) from None
        self._call(f"PUT {container}", self.conn.put_container, container, headers=headers)

    def upload(
        self,
        container: str,
        name: str,
        source: Source,
        classes: Classes = None,
        via: UploadVia = "headers",
        headers: dict[str, str] | None = None,
        *,
        content_type: str | None = None,
        cls_bytes: int = 1,
    ) -> str:
        """Store ``source`` (a path or a binary file object) as ``container/name``.

        ``via="headers"`` sends the classes as X-DSS-* headers; ``via="object-file"`` sends
        the body as a class file followed by the data (X-DSS-Object-File). The data is
        streamed. Returns the ETag, checked against the MD5 of the data sent.
        """
        _check_address(container, name)
        cmap = as_classmap(classes)
        send = dict(headers or {})
        what = f"PUT {container}/{name}"
        with _open_source(source) as f:
            size = _remaining_size(f)
            if cmap is not None and size is not None:
                cmap.check_size(size)
            prefix = b""
            if via == "headers":
                if cmap is not None:
                    send.update(class_headers(cmap))
            elif via == "object-file":
                if cmap is None:
                    raise ValueError("an object file needs classes")
                prefix, extra = class_file(cmap, cls_bytes)
                send.update(extra)
                send[OBJECT_FILE] = "True"
            else:
                raise ValueError(f"via must be 'headers' or 'object-file', not {via!r}")
            body = _UploadBody(prefix, f)
            etag = self._call(
                what,
                self.conn.put_object,
                container,
                name,
                contents=body,
                content_length=None if size is None else len(prefix) + size,
                content_type=content_type,
                headers=send,
                chunk_size=CHUNK,
            )
        sent = body.data_md5
        if etag and sent and etag.strip('"') != sent:
            raise DssError(f"{what}: server ETag {etag} is not the MD5 {sent} of the data sent")
        return etag

    def download(
        self,
        container: str,
        name: str,
        dest: str | os.PathLike[str] | IO[bytes] | None,
        classes: Classes = None,
    ) -> ClassMap:
        """Fetch ``container/name`` into ``dest`` and return the classes the server reports.

        ``dest`` is a path (written whole or not at all), a binary file object, or None to
        discard the data. ``classes`` reclassify the object on the way (out of band, GET).
        """
        _check_address(container, name)
        cmap = as_classmap(classes)
        send = class_headers(cmap) if cmap is not None else {}
        what = f"GET {container}/{name}"
        headers, chunks = self._call(
            what, self.conn.get_object, container, name, resp_chunk_size=CHUNK, headers=send
        )
        md5 = hashlib.md5(usedforsecurity=False)
        try:
            if dest is None:
                for chunk in chunks:
                    md5.update(chunk)
            elif isinstance(dest, str | os.PathLike):
                self._write_atomically(Path(dest), chunks, md5)
            else:
                for chunk in chunks:
                    md5.update(chunk)
                    dest.write(chunk)
        except requests.exceptions.RequestException as e:
            raise DssError(f"{what}: transfer failed: {e}") from None
        etag = headers.get("etag", "").strip('"')
        whole = "x-object-manifest" not in headers and "x-static-large-object" not in headers
        if whole and re.fullmatch(r"[0-9a-f]{32}", etag) and etag != md5.hexdigest():
            raise DssError(f"{what}: data MD5 {md5.hexdigest()} is not the ETag {etag}")
        return _classes_from_headers(headers)

    @staticmethod
    def _write_atomically(dest: Path, chunks: Iterator[bytes], md5: Any) -> None:
        try:
            fd, tmp = tempfile.mkstemp(
                dir=dest.parent or ".", prefix=f".{dest.name}.", suffix=".part"
            )
        except OSError as e:
            # Named by the file asked for: the temporary one is ours, not the caller's.
            raise DssError(f"cannot write {dest}: {e.strerror or e}") from None
        try:
            with os.fdopen(fd, "wb") as out:
                for chunk in chunks:
                    md5.update(chunk)
                    out.write(chunk)
            os.replace(tmp, dest)
        except OSError as e:
            Path(tmp).unlink(missing_ok=True)
            raise DssError(f"cannot write {dest}: {e.strerror or e}") from None
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def classes(self, container: str, name: str) -> ClassMap:
        """The object's current classes (HEAD)."""
        _check_address(container, name)
        headers = self._call(f"HEAD {container}/{name}", self.conn.head_object, container, name)
        return _classes_from_headers(headers)

    def reclassify(
        self,
        container: str,
        name: str,
        classes: Classes,
        via: ReclassifyVia = "post",
        *,
        cls_bytes: int = 1,
    ) -> None:
        """Change the classes of a stored object without touching its data.

        ``via``: ``post`` (headers on a POST), ``class-file`` (a PUT of a class file with
        X-DSS-Class-File) or ``get`` (headers on a GET whose body is discarded).
        """
        _check_address(container, name)
        cmap = as_classmap(classes)
        if cmap is None:
            raise ValueError("reclassify needs classes")
        if via == "post":
            self._call(
                f"POST {container}/{name}",
                self.conn.post_object,
                container,
                name,
                headers=class_headers(cmap),
            )
        elif via == "class-file":
            body, extra = class_file(cmap, cls_bytes)
            self._call(
                f"PUT {container}/{name} (class file)",
                self.conn.put_object,
                container,
                name,
                contents=body,
                content_length=len(body),
                headers={CLASS_FILE: "True", **extra},
            )
        elif via == "get":
            self.download(container, name, None, classes=cmap)
        else:
            raise ValueError(f"via must be 'post', 'class-file' or 'get', not {via!r}")
