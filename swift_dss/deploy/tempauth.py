"""The test account that tempauth keeps in every cluster's proxy, and the URLs to reach it."""

from __future__ import annotations

from swift_dss.deploy.probes import http

#: tempauth users of the all-in-one cluster, "account:user" -> "key [group ...]".
DEFAULT_USERS = {"test:tester": "testing .admin"}


def tempauth_options(users: dict[str, str]) -> dict[str, str]:
    """The ``user_<account>_<user>`` options of a ``[filter:tempauth]`` section."""
    out = {}
    for name, value in users.items():
        account, sep, user = name.partition(":")
        if not sep or not account or not user or "_" in account:
            raise ValueError(f"tempauth user {name!r} is not ACCOUNT:USER (no _ in ACCOUNT)")
        out[f"user_{account}_{user}"] = value
    return out


class TempauthAccount:
    """What a cluster with a proxy on 127.0.0.1 offers its clients; the cluster names its
    proxy's URL and the error it raises."""

    user = "test:tester"
    key = "testing"
    account = "AUTH_test"
    _error: type[Exception] = Exception

    @property
    def proxy_url(self) -> str:
        raise NotImplementedError

    @property
    def auth_url(self) -> str:
        return f"{self.proxy_url}/auth/v1.0"

    @property
    def account_url(self) -> str:
        return f"{self.proxy_url}/v1/{self.account}"

    def get_token(self) -> tuple[str, str]:
        """(storage URL, token) from tempauth."""
        status, headers = http(
            self.auth_url, headers={"X-Auth-User": self.user, "X-Auth-Key": self.key}
        )
        if status != 200 or "X-Auth-Token" not in headers:
            raise self._error(f"tempauth at {self.auth_url} answered {status or 'nothing'}")
        return headers.get("X-Storage-Url", self.account_url), headers["X-Auth-Token"]

    def _proxy_serves(self) -> bool:
        """tempauth issues a token and the account answers (backends and memcached work)."""
        try:
            url, token = self.get_token()
        except self._error:
            return False
        return 200 <= http(url, "HEAD", {"X-Auth-Token": token})[0] < 300
