"""Network namespaces joined by a bridge: the network of the local multi-node cluster.

    root namespace                      namespace NS_PREFIX-s1 ...
    bridge BRIDGE 198.18.0.1/24 ──veth── eth0 198.18.0.11/24
                                ──veth── eth0 198.18.0.12/24 ...

Everything is made with `ip` (iproute2). Names carry a tag derived from the cluster's
directory, so that `down` finds leftovers of a crashed run by name alone.
"""

from __future__ import annotations

import hashlib
import ipaddress
import subprocess
from dataclasses import dataclass
from pathlib import Path

#: RFC 2544's benchmarking range: nothing outside our own namespaces uses it.
SUBNET = ipaddress.ip_network("198.18.0.0/24")
BRIDGE_ADDRESS = SUBNET.network_address + 1
#: Storage node N (1-based) gets 198.18.0.(10 + N).
FIRST_NODE_HOST = 10


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

    def make_node(self, node: int) -> None:
        ns, veth = self.namespace(node), self.veth(node)
        ip("netns", "add", ns)
        ip("link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", ns)
        ip("link", "set", veth, "master", self.bridge)
        ip("link", "set", veth, "up")
        ip("-n", ns, "link", "set", "lo", "up")
        ip("-n", ns, "addr", "add", f"{self.address(node)}/{SUBNET.prefixlen}", "dev", "eth0")
        ip("-n", ns, "link", "set", "eth0", "up")

    def exec_prefix(self, node: int) -> list[str]:
        return ["ip", "netns", "exec", self.namespace(node)]

    # -- finding and removing

    def namespaces(self) -> list[str]:
        out = ip("netns", "list", check=False).stdout.splitlines()
        names = [line.split()[0] for line in out if line.strip()]
        return sorted(n for n in names if n.startswith(self.prefix))

    def bridge_exists(self) -> bool:
        return ip("link", "show", self.bridge, check=False).returncode == 0

    def remove(self) -> list[str]:
        """Delete every namespace and the bridge of this network; return what is left."""
        for ns in self.namespaces():
            # Deleting the namespace deletes its end of the veth and with it the pair.
            ip("netns", "delete", ns, check=False)
        if self.bridge_exists():
            ip("link", "delete", self.bridge, check=False)
        left = self.namespaces()
        if self.bridge_exists():
            left.append(self.bridge)
        return left
