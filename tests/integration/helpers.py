"""Small helpers shared by the integration tests: an authenticated session and the record log."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import boto3
import requests
from botocore.config import Config
from swiftclient.client import get_auth


@dataclass
class Swift:
    """A requests session holding a tempauth token for the test account."""

    storage_url: str
    token: str
    session: requests.Session = field(default_factory=requests.Session)

    @classmethod
    def connect(cls, cluster: object) -> Swift:
        url, token = get_auth(cluster.auth_url, cluster.user, cluster.key)
        return cls(url, token)

    @classmethod
    def with_container(cls, cluster: object, container: str) -> Swift:
        """A session for ``cluster`` whose account holds ``container``."""
        s = cls.connect(cluster)
        assert s.request("PUT", container).status_code in (201, 202)
        return s

    def url(self, path: str) -> str:
        return f"{self.storage_url}/{path.lstrip('/')}"

    def request(self, method: str, path: str, **kwargs: object) -> requests.Response:
        headers = {"X-Auth-Token": self.token, **(kwargs.pop("headers", None) or {})}
        return self.session.request(method, self.url(path), headers=headers, timeout=60, **kwargs)


@dataclass
class RecordedIO:
    op: str
    offset: int
    length: int
    cls: int
    path: str


@contextmanager
def recorded(log: Path) -> Iterator[list[RecordedIO]]:
    """Collects the dssio record backend's entries appended while the block runs."""
    start = log.stat().st_size if log.exists() else 0
    entries: list[RecordedIO] = []
    yield entries
    with open(log, "rb") as f:
        f.seek(start)
        for line in f.read().splitlines():
            rec = json.loads(line)
            entries.append(
                RecordedIO(
                    rec["op"], rec["offset"], rec["length"], rec["class"], rec.get("path", "")
                )
            )


def byte_classes(entries: list[RecordedIO], op: str, size: int) -> list[int | None]:
    """The class each byte got from the recorded ``op`` I/Os (None: never touched)."""
    out: list[int | None] = [None] * size
    for e in entries:
        if e.op != op:
            continue
        for i in range(e.offset, min(e.offset + e.length, size)):
            out[i] = e.cls
    return out


def payload(size: int, seed: int = 0) -> bytes:
    return (bytes(range(256)) * (size // 256 + 1))[:size] if seed == 0 else os.urandom(size)


def s3_client(cluster: object) -> object:
    """A plain boto3 S3 client (path-style SigV4) for a cluster's s3api."""
    return boto3.client(
        "s3",
        endpoint_url=cluster.proxy_url,
        aws_access_key_id=cluster.s3_access_key,
        aws_secret_access_key=cluster.s3_secret_key,
        region_name="us-east-1",
        config=Config(signature_version="s3v4", s3={"addressing_style": "path"}),
    )
