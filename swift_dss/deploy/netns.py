"""Network namespaces joined by a bridge: the network of the local multi-node cluster.

    root namespace                      namespace NS_PREFIX-s1 ...
    bridge BRIDGE 198.18.0.1/24 ──veth── eth0 198.18.0.11/24
                                ──veth── eth0 198.18.0.12/24 ...
                                ──veth── eth0 198.18.0.2/24   NS_PREFIX-proxy (testbed)
                                ──veth── eth0 198.18.0.3/24   NS_PREFIX-client (testbed)

Everything is made with `ip` (iproute2); the testbed's links are shaped with `tc`
(swift_dss.testbed.shaping). Names carry a tag derived from the cluster's
directory, so that `down` finds leftovers of a crashed run by name alone.
"""

from __future__ import annotations

import hashlib
import ipaddress
import subprocess
from dataclasses import dataclass
from pathlib import Path

from swift_dss.testbed import congestion, shaping, tcp_timers
from swift_dss.testbed.settings import ROLES, TestbedSettings
from swift_dss.testbed.shaping import Link

#: RFC 2544's benchmarking range: nothing outside our own namespaces uses it.
SUBNET = ipaddress.ip_network("198.18.0.0/24")
BRIDGE_ADDRESS = SUBNET.network_address + 1
#: Storage node N (1-based) gets 198.18.0.(10 + N).
FIRST_NODE_HOST = 10
#: The testbed's proxy and client nodes, by role: their address's last byte.
ROLE_HOSTS = {"proxy": 2, "client": 3}


class NetnsError(Exception):
    """A namespace, link or address that could not be made, with the command's reason."""


def ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(["ip", *args], capture_output=True, text=True, check=False)
    if check and proc.returncode != 0:
        reason = (proc.stderr or proc.stdout).strip().splitlines()
        raise NetnsError(f"ip {' '.join(args)}: {reason[-1] if reason else proc.returncode}")
    return proc


@dataclass(frozen=True)
class Network:
    tag: str

    @classmethod
    def for_dir(cls, dir: Path) -> Network:
        return cls(hashlib.sha1(str(Path(dir).absolute()).encode()).hexdigest()[:6])

    @property
    def bridge(self) -> str:
        return f"dssbr-{self.tag}"  # at most 15 characters, the kernel's limit

    @property
    def prefix(self) -> str:
        return f"dss-{self.tag}-"

    def namespace(self, node: int) -> str:
        return f"{self.prefix}s{node}"

    def veth(self, node: int) -> str:
        return f"dss{self.tag}s{node}"

    @staticmethod
    def address(node: int) -> str:
        return str(SUBNET.network_address + FIRST_NODE_HOST + node)

    @staticmethod
    def bridge_address() -> str:
        return str(BRIDGE_ADDRESS)

    # -- making

    def subnet_user(self) -> str | None:
        """The root-namespace link holding an address in SUBNET, if another cluster has one."""
        out = ip("-o", "-4", "addr", "show", "to", str(SUBNET)).stdout.split()
        return out[1] if out else None

    def make_bridge(self) -> None:
        user = self.subnet_user()
        if user is not None:
            raise NetnsError(
                f"{SUBNET} is already in use on {user} (another local cluster? "
                "`dss deploy local-cluster down --dir ITS_DIR`)"
            )
        ip("link", "add", self.bridge, "type", "bridge")
        ip("addr", "add", f"{BRIDGE_ADDRESS}/{SUBNET.prefixlen}", "dev", self.bridge)
        ip("link", "set", self.bridge, "up")

    def role_namespace(self, role: str) -> str:
        return f"{self.prefix}{role}"

    def role_veth(self, role: str) -> str:
        return f"dss{self.tag}{role[0]}"

    @staticmethod
    def role_address(role: str) -> str:
        return str(SUBNET.network_address + ROLE_HOSTS[role])

    def make_node(self, node: int) -> None:
        self._make_host(self.namespace(node), self.veth(node), self.address(node))

    def make_role(self, role: str) -> None:
        """The namespace of the testbed's proxy or client, on the bridge like a storage node."""
        self._make_host(self.role_namespace(role), self.role_veth(role), self.role_address(role))

    def link(
        self,
        name: str,
        rate: int,
        queue_ms: float = shaping.QUEUE_MS,
        burst: str = shaping.DEFAULT_BURST,
    ) -> Link:
        """The veth pair of NAME (a role, or storage node "sN") shaped to RATE bit/s with
        a queue of QUEUE_MS (real) milliseconds beyond a bucket of at least BURST."""
        if name in ROLE_HOSTS:
            ns, veth = self.role_namespace(name), self.role_veth(name)
        else:
            node = int(name[1:])
            ns, veth = self.namespace(node), self.veth(node)
        return Link(name, ns, veth, rate, queue_ms=queue_ms, burst=burst)

    def _make_host(self, ns: str, veth: str, address: str) -> None:
        ip("netns", "add", ns)
        ip("link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", ns)
        ip("link", "set", veth, "master", self.bridge)
        ip("link", "set", veth, "up")
        ip("-n", ns, "link", "set", "lo", "up")
        ip("-n", ns, "addr", "add", f"{address}/{SUBNET.prefixlen}", "dev", "eth0")
        ip("-n", ns, "link", "set", "eth0", "up")

    def testbed_links(self, settings: TestbedSettings, nodes: int) -> list[Link]:
        """Every link of a testbed of NODES storage nodes at SETTINGS' dilated rates."""
        names = [*ROLES, *(f"s{i}" for i in range(1, nodes + 1))]
        queue, burst = settings.link_queue(), settings.link_burst
        return [self.link(name, settings.link_rate(name), queue, burst) for name in names]

    def make_testbed(self, settings: TestbedSettings, nodes: int) -> list[Link]:
        """The bridge, the client's, proxy's and NODES storage nodes' namespaces, each link
        shaped; a caller with storage to set up per node makes the parts itself."""
        self.make_bridge()
        for role in ROLES:
            self.make_role(role)
        for node in range(1, nodes + 1):
            self.make_node(node)
        links = self.testbed_links(settings, nodes)
        shaping.apply(links)
        congestion.apply(self.namespaces(), settings.tcp_congestion)
        if (rto := settings.rto_min_us()) is not None:
            tcp_timers.apply(self.namespaces(), rto)
        return links

    def exec_prefix(self, node: int) -> list[str]:
        return ["ip", "netns", "exec", self.namespace(node)]

    # -- finding and removing

    def namespaces(self) -> list[str]:
        out = ip("netns", "list", check=False).stdout.splitlines()
        names = [line.split()[0] for line in out if line.strip()]
        return sorted(n for n in names if n.startswith(self.prefix))

    def bridge_exists(self) -> bool:
        return ip("link", "show", self.bridge, check=False).returncode == 0

    def veths(self) -> list[str]:
        """The root-side ends of this network's veth pairs."""
        out = ip("-o", "link", "show", check=False).stdout.splitlines()
        names = [line.split(":")[1].strip().split("@")[0] for line in out if ":" in line]
        return sorted(n for n in names if n.startswith(f"dss{self.tag}"))

    def remove(self) -> list[str]:
        """Delete every veth pair, namespace and the bridge of this network (the qdiscs go
        with their interfaces); return what is left."""
        for veth in self.veths():
            # The kernel dismantles a deleted namespace's devices later, in the background;
            # deleting one end of a pair removes both, and their qdiscs, before returning.
            ip("link", "delete", veth, check=False)
        for ns in self.namespaces():
            # Deleting the namespace deletes its end of the veth and with it the pair, and
            # the qdiscs of both ends.
            ip("netns", "delete", ns, check=False)
        if self.bridge_exists():
            ip("link", "delete", self.bridge, check=False)
        left = self.namespaces() + self.veths()
        if self.bridge_exists():
            left.append(self.bridge)
        return left
