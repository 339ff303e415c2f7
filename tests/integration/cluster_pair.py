"""Two all-in-one clusters side by side, stock Swift and Swift with dss, with the same
tempauth users, and the means to send both the same request as the same user."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import requests

from swift_dss.deploy.saio import Saio, SaioConfig

#: "account:user" -> (key, groups). test:tester administers AUTH_test; the others of account
#: test reach its containers only through ACLs; test2:tester2 administers another account.
USERS = {
    "test:tester": ("testing", ".admin"),
    "test:reader": ("reading", ""),
    "test:writer": ("writing", ""),
    "test:nobody": ("nothing", ""),
    "test2:tester2": ("testing2", ".admin"),
}
ANONYMOUS = "anonymous"


@dataclass
class Cluster:
    saio: Saio
    tokens: dict[str, str] = field(default_factory=dict)
    session: requests.Session = field(default_factory=requests.Session)

    def token(self, user: str) -> str | None:
        if user == ANONYMOUS:
            return None
        if user not in self.tokens:
            key = USERS[user][0]
            resp = self.session.get(
                self.saio.auth_url, headers={"X-Auth-User": user, "X-Auth-Key": key}, timeout=30
            )
            assert resp.status_code == 200, resp.text
            self.tokens[user] = resp.headers["X-Auth-Token"]
        return self.tokens[user]

    def request(
        self, user: str, method: str, path: str, account: str = "AUTH_test", **kwargs: object
    ) -> requests.Response:
        headers = dict(kwargs.pop("headers", None) or {})
        token = self.token(user)
        if token:
            headers["X-Auth-Token"] = token
        url = f"{self.saio.proxy_url}/v1/{account}/{path.lstrip('/')}".rstrip("/")
        return self.session.request(method, url, headers=headers, timeout=60, **kwargs)


@dataclass
class Pair:
    stock: Cluster
    dss: Cluster
    statsd: socket.socket

    def both(self, user: str, method: str, path: str, **kwargs: object) -> tuple:
        """The same request to both clusters: (stock response, dss response)."""
        body = kwargs.pop("data", None)
        return (
            self.stock.request(user, method, path, data=body, **dict(kwargs)),
            self.dss.request(user, method, path, data=body, **dict(kwargs)),
        )


@contextmanager
def cluster_pair(base: Path) -> Iterator[Pair]:
    """Both clusters up (plain devices: the middleware is what is compared), the dss one
    sending its middleware's StatsD metrics to a UDP socket on loopback."""
    users = {name: f"{key} {groups}".strip() for name, (key, groups) in USERS.items()}
    statsd = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    statsd.bind(("127.0.0.1", 0))
    dss_options = {
        "log_statsd_host": "127.0.0.1",
        "log_statsd_port": str(statsd.getsockname()[1]),
        "max_ranges": "256",
    }
    started: list[Saio] = []
    try:
        for name, dss in (("stock", False), ("dss", True)):
            cfg = SaioConfig(
                dir=base / name,
                port=0,
                dss=dss,
                tier_mode=None,
                tempauth_users=users,
                dss_options=dss_options if dss else {},
            )
            cluster = Saio(cfg)
            started.append(cluster)
            cluster.up()
        yield Pair(Cluster(started[0]), Cluster(started[1]), statsd)
    finally:
        statsd.close()
        for cluster in started:
            cluster.down()
