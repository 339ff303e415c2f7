"""What the local cluster adds when it emulates the paper's testbed (`testbed` settings):
the proxy's and the client's namespaces, the shaped links, and running work on the client
node. Without the settings the cluster has none of it and this changes nothing."""

from __future__ import annotations

from typing import Any

from swift_dss.deploy.local_cluster_config import ClusterError, LocalClusterConfig
from swift_dss.deploy.netns import Network
from swift_dss.testbed import congestion, netexec, shaping


class TestbedNodes:
    """The testbed's part of a local cluster (mixed into `LocalCluster`)."""

    __test__ = False  # not a test class, whatever pytest makes of the name

    cfg: LocalClusterConfig
    net: Network

    def links(self) -> list[shaping.Link]:
        """The testbed's shaped links (none without the testbed)."""
        if self.cfg.testbed is None:
            return []
        return self.net.testbed_links(self.cfg.testbed, self.cfg.nodes)

    @property
    def client_namespace(self) -> str:
        if self.cfg.testbed is None:
            raise ClusterError("only a testbed cluster has a client namespace (--testbed)")
        return self.net.role_namespace("client")

    def client_command(self, cmd: list[str]) -> list[str]:
        """CMD as it runs on the testbed's client node (`ip netns exec`), its traffic on the
        client's shaped link."""
        return netexec.command(self.client_namespace, cmd)

    def client_call(self, target: str, *args: Any, timeout: float = 300) -> Any:
        """TARGET ("module:function") called with ARGS in a subprocess on the client node;
        its JSON-able return value."""
        return netexec.call(self.client_namespace, target, *args, timeout=timeout)

    def _proxy_prefix(self) -> list[str]:
        """How the proxy and its memcached are launched: in the root namespace, or in the
        testbed's proxy namespace (memcached on that namespace's loopback)."""
        if self.cfg.testbed is None:
            return []
        return netexec.command(self.net.role_namespace("proxy"), [])

    def _testbed_status(self) -> dict[str, Any] | None:
        tb = self.cfg.testbed
        if tb is None:
            return None
        return {
            "dilation": tb.dilation,
            "rate_scale": tb.rate_scale,
            "proxy_namespace": self.net.role_namespace("proxy"),
            "client_namespace": self.net.role_namespace("client"),
            "client_ip": Network.role_address("client"),
            "links": {
                link.name: {"rate": shaping.format_rate(link.rate), "veth": link.outer}
                for link in self.links()
            },
            "workers": {"proxy": tb.proxy_workers, "servers": tb.server_workers},
            "tier_models": list(tb.models()),
            "tcp_congestion": congestion.effective(tb.tcp_congestion),
        }
