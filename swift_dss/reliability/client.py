"""``ClusterClient``: the project's Swift client logged in to a local cluster's proxy, and
the one kind of request it does not make, straight to a storage node's object server."""

from __future__ import annotations

from typing import Any

import requests
from swiftclient.client import Connection

from swift_dss.client.api import DssClient
from swift_dss.deploy.local_cluster import LocalCluster

#: Seconds any one request may take, to the proxy or to an object server.
TIMEOUT = 60.0


class _LocalConnection(Connection):
    """A swiftclient Connection that never goes through an environment proxy: the cluster's
    addresses (loopback, its namespaces' bridge) are reachable from this host only."""

    def http_connection(self, url: str | None = None) -> tuple[Any, Any]:
        parsed, conn = super().http_connection(url)
        conn.request_session.trust_env = False
        return parsed, conn


class ClusterClient(DssClient):
    """A DssClient on CLUSTER's proxy with the cluster's token (``login``, else a new one).

    No retries: a scenario counts every request the cluster failed, so none may be hidden
    by a second attempt.
    """

    def __init__(self, cluster: LocalCluster, login: tuple[str, str] | None = None) -> None:
        self.cluster = cluster
        self.login = login or cluster.get_token()
        url, token = self.login
        conn = _LocalConnection(preauthurl=url, preauthtoken=token, retries=0, timeout=TIMEOUT)
        super().__init__(url, connection=conn)
        # Object servers speak Swift's backend protocol (device and partition in the path,
        # the policy index in a header), which a client API rightly does not: these
        # requests go by hand.
        self.backend = requests.Session()
        self.backend.trust_env = False

    def thread_copy(self) -> ClusterClient:
        """The same login on connections of its own (neither swiftclient's Connection nor a
        requests Session is thread-safe)."""
        return ClusterClient(self.cluster, self.login)

    def close(self) -> None:
        super().close()
        self.backend.close()

    def direct(self, method: str, node: str, part: int, path: str) -> requests.Response:
        """METHOD on ACCOUNT/CONTAINER/OBJECT (``path``) straight to NODE's object server,
        past the proxy: what that one replica holds."""
        port = self.cluster.ports["object"]
        url = f"http://{self.cluster.node_ip(node)}:{port}/d1/{part}/{path}"
        headers = {"X-Backend-Storage-Policy-Index": "0"}
        return self.backend.request(method, url, headers=headers, timeout=TIMEOUT)

    def direct_head(self, node: str, part: int, path: str) -> requests.Response:
        return self.direct("HEAD", node, part, path)
