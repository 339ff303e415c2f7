"""How a request goes on the wire: Swift (tempauth token) or S3 (AWS Signature V4).

The S3 signer is written here rather than taken from botocore: botocore signs an
``AWSRequest`` object per call and costs tens of microseconds of Python per request, which
would make the client, not the server, the thing measured at small sizes. The signature is
checked against botocore's in the unit tests. Bodies are sent as ``UNSIGNED-PAYLOAD`` (they
stream and are never hashed whole), which S3 and Swift's s3api accept.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import json
from dataclasses import dataclass, field
from urllib.parse import quote, urlsplit

from swift_dss.client.auth import SwiftAuth, login

#: Defaults: the all-in-one cluster's credentials (docs/loadgen.md, "Target and credentials").
DEFAULT_USER = "test:tester"
DEFAULT_KEY = "testing"
CLASS_HEADER = "X-DSS-Object-Class"


class AuthError(RuntimeError):
    pass


@dataclass(frozen=True)
class Credentials:
    """Who the requests come from.

    S3: ``user`` and ``key`` are the access key and the secret key. Swift: ``swift`` holds the
    options of the ``swift`` CLI (tempauth, Keystone or a token); without it, ``user``,
    ``key`` and ``auth_url`` are a tempauth v1 login.
    """

    user: str = DEFAULT_USER
    key: str = DEFAULT_KEY
    region: str = "us-east-1"
    auth_url: str | None = None  # Swift: default ENDPOINT/auth/v1.0
    swift: SwiftAuth | None = None

    def swift_auth(self) -> SwiftAuth:
        if self.swift is not None:
            return self.swift
        return SwiftAuth(auth=self.auth_url, user=self.user, key=self.key, auth_version="1")


@dataclass
class Wire:
    """One request as curl needs it."""

    method: str
    url: str
    headers: list[str]


class Protocol:
    name = ""

    def object(self, method: str, container: str, name: str, cls: int | None) -> Wire:
        raise NotImplementedError

    def container(self, method: str, container: str) -> Wire:
        raise NotImplementedError

    def to_json(self) -> dict[str, str]:
        raise NotImplementedError


@dataclass
class Swift(Protocol):
    storage_url: str
    token: str
    name: str = "swift"

    @classmethod
    def login(cls, endpoint: str, creds: Credentials, timeout: float = 30) -> Swift:
        """Log in with swiftclient (any auth version), or take a given token and URL."""
        from swiftclient.exceptions import ClientException

        default_auth_url = endpoint.rstrip("/") + "/auth/v1.0"
        auth = creds.swift_auth()
        try:
            url, token = login(auth, default_auth_url, timeout)
        except (ClientException, OSError) as err:
            where = auth.auth or auth.os_auth_url or default_auth_url
            raise AuthError(f"login at {where}: {err}") from err
        if not url or not token:
            raise AuthError("the login answered without a storage URL or token")
        return cls(url.rstrip("/"), token)

    def object(self, method: str, container: str, name: str, cls: int | None) -> Wire:
        headers = [f"X-Auth-Token: {self.token}", "Expect:"]
        if method == "PUT":
            headers.append("Content-Type: application/octet-stream")
            if cls is not None:
                headers.append(f"{CLASS_HEADER}: {cls}")
        return Wire(method, f"{self.storage_url}/{container}/{quote(name)}", headers)

    def container(self, method: str, container: str) -> Wire:
        return Wire(method, f"{self.storage_url}/{container}", [f"X-Auth-Token: {self.token}"])

    def to_json(self) -> dict[str, str]:
        return {"kind": "swift", "storage_url": self.storage_url, "token": self.token}


@dataclass
class S3(Protocol):
    endpoint: str
    access_key: str
    secret_key: str
    region: str = "us-east-1"
    name: str = "s3"
    _keys: dict[str, bytes] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        parts = urlsplit(self.endpoint)
        self.endpoint = self.endpoint.rstrip("/")
        self._host = parts.netloc
        self._base = parts.path.rstrip("/")

    def _signing_key(self, day: str) -> bytes:
        key = self._keys.get(day)
        if key is None:
            k = f"AWS4{self.secret_key}".encode()
            for part in (day, self.region, "s3", "aws4_request"):
                k = hmac.new(k, part.encode(), hashlib.sha256).digest()
            key = self._keys[day] = k
        return key

    def sign(
        self, method: str, path: str, extra: dict[str, str], now: dt.datetime | None = None
    ) -> list[str]:
        """Headers (as curl lines) for a path-style request with ``extra`` signed too."""
        now = now or dt.datetime.now(dt.UTC)
        amz_date = now.strftime("%Y%m%dT%H%M%SZ")
        day = amz_date[:8]
        headers = {
            "host": self._host,
            "x-amz-content-sha256": "UNSIGNED-PAYLOAD",
            "x-amz-date": amz_date,
            **{k.lower(): v for k, v in extra.items()},
        }
        names = sorted(headers)
        signed = ";".join(names)
        canonical = "\n".join(
            [
                method,
                quote(path, safe="/~"),
                "",
                "".join(f"{n}:{headers[n].strip()}\n" for n in names),
                signed,
                "UNSIGNED-PAYLOAD",
            ]
        )
        scope = f"{day}/{self.region}/s3/aws4_request"
        to_sign = "\n".join(
            ["AWS4-HMAC-SHA256", amz_date, scope, hashlib.sha256(canonical.encode()).hexdigest()]
        )
        sig = hmac.new(self._signing_key(day), to_sign.encode(), hashlib.sha256).hexdigest()
        auth = (
            f"AWS4-HMAC-SHA256 Credential={self.access_key}/{scope}, "
            f"SignedHeaders={signed}, Signature={sig}"
        )
        lines = [f"{n}: {headers[n]}" for n in names if n != "host"]
        return [*lines, f"Authorization: {auth}", "Expect:"]

    def object(self, method: str, container: str, name: str, cls: int | None) -> Wire:
        path = f"{self._base}/{container}/{name}"
        extra = {}
        if method == "PUT":
            extra["content-type"] = "application/octet-stream"
            if cls is not None:
                extra[CLASS_HEADER] = str(cls)
        return Wire(method, self.endpoint + quote(path, safe="/~"), self.sign(method, path, extra))

    def container(self, method: str, container: str) -> Wire:
        path = f"{self._base}/{container}"
        return Wire(method, self.endpoint + path, self.sign(method, path, {}))

    def to_json(self) -> dict[str, str]:
        return {
            "kind": "s3",
            "endpoint": self.endpoint,
            "access_key": self.access_key,
            "secret_key": self.secret_key,
            "region": self.region,
        }


def connect(endpoint: str, protocol: str, creds: Credentials | None = None) -> Protocol:
    creds = creds or Credentials()
    if protocol == "swift":
        return Swift.login(endpoint, creds)
    if protocol == "s3":
        return S3(endpoint, creds.user, creds.key, creds.region)
    raise ValueError(f"unknown protocol {protocol!r} (swift or s3)")


def from_json(d: dict[str, str]) -> Protocol:
    """The same target in another process, without logging in again."""
    d = dict(d)
    kind = d.pop("kind")
    if kind == "swift":
        return Swift(d["storage_url"], d["token"])
    return S3(d["endpoint"], d["access_key"], d["secret_key"], d["region"])


def dumps(p: Protocol) -> str:
    return json.dumps(p.to_json())
