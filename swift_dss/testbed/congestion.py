"""TCP congestion control on the testbed's nodes: which algorithm each namespace's
connections use.

Why it is a setting: how full a saturated link's queue runs, and so how long a new
response's first byte waits behind it, depends on the senders' algorithm. CUBIC (Linux's
default since 2.6.19, the paper's 3.2.1 kernel's, and Debian 12's) grows its window until
the queue drops a packet, so a busy link's queue stays near full; BBR paces at the path's
measured rate and keeps the queue to a few packets. A new namespace takes the host's
default, so left to it the testbed's queues depend on how its host was set up: the
default is the paper's CUBIC, which a fresh Debian 12 runs too, whatever the host's.

A namespace other than the first may only take an algorithm on the kernel's allowed list
(`tcp_allowed_congestion_control`, which also lets unprivileged sockets choose it), so
`apply` adds the chosen one to that list when it is missing. It is left there: the list
only widens what sockets may ask for, and another testbed may be using it.
"""

from __future__ import annotations

import re
from pathlib import Path

from swift_dss.testbed import netexec

PROC = Path("/proc/sys/net/ipv4")
#: The kernel's names: "cubic", "bbr", "reno", "htcp"... (TCP_CA_NAME_MAX is 16).
NAME = re.compile(r"^[a-z0-9_]{1,15}$")
#: The setting's value for "leave each namespace with the host's default".
HOST_DEFAULT = ""
#: The testbed's default: the paper's Linux 3.2.1 ran it, and so does Debian 12.
PAPER = "cubic"


class CongestionError(Exception):
    """An algorithm that cannot be set, with a one-line reason."""


def name_error(name: object) -> str | None:
    """Why NAME cannot be a testbed's algorithm by its form alone (None: it can)."""
    if name == HOST_DEFAULT:
        return None
    if not isinstance(name, str) or not NAME.match(name):
        return (
            f"tcp_congestion {name!r} is not a congestion control name (lower-case letters, "
            "digits and _, e.g. cubic), or empty for the host's default"
        )
    return None


def _read(key: str, proc: Path) -> list[str]:
    return (proc / key).read_text().split()


def available(proc: Path = PROC) -> list[str]:
    """The algorithms this kernel has (built in or loaded)."""
    return _read("tcp_available_congestion_control", proc)


def host_default(proc: Path = PROC) -> str:
    return _read("tcp_congestion_control", proc)[0]


def check(name: str, proc: Path = PROC) -> None:
    """Refuse NAME unless this kernel has it (the empty name, the host's, always is)."""
    if reason := name_error(name):
        raise CongestionError(reason)
    if name != HOST_DEFAULT and name not in (have := available(proc)):
        raise CongestionError(
            f"TCP congestion control {name!r} is not available on this host "
            f"(it has {', '.join(have)}; a module may add one: modprobe tcp_{name})"
        )


def effective(name: str, proc: Path = PROC) -> str:
    """The algorithm a testbed set to NAME runs: NAME, or the host's default."""
    return name or host_default(proc)


def allow(name: str, proc: Path = PROC) -> None:
    """Put NAME on the kernel's allowed list, so a namespace may take it as its default."""
    allowed = _read("tcp_allowed_congestion_control", proc)
    if name not in allowed:
        (proc / "tcp_allowed_congestion_control").write_text(" ".join([*allowed, name]))


def apply(namespaces: list[str], name: str) -> None:
    """Make NAME the default algorithm of every one of NAMESPACES (nothing for the host's)."""
    if name == HOST_DEFAULT:
        return
    check(name)
    allow(name)
    for ns in namespaces:
        if reason := netexec.write(ns, str(PROC / "tcp_congestion_control"), name):
            raise CongestionError(f"TCP congestion control {name} in {ns}: {reason}")
