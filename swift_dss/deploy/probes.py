"""Whether a cluster's processes answer yet: free and busy ports, TCP and HTTP probes."""

from __future__ import annotations

import contextlib
import random
import socket
import urllib.error
import urllib.request
from pathlib import Path

#: Where the kernel takes the local ports of outgoing connections from.
EPHEMERAL_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")
#: The lowest port a cluster is given; below are the ports services usually claim.
LOWEST_PORT = 10_000


def port_in_use(port: int) -> bool:
    # SO_REUSEADDR like Swift's own listener, so that TIME_WAIT leftovers do not count.
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return True
    return False


def ephemeral_ports() -> range:
    """The kernel's range of local ports for outgoing connections."""
    try:
        lo, hi = (int(x) for x in EPHEMERAL_RANGE.read_text().split())
    except (OSError, ValueError):
        lo, hi = 32768, 60999  # Linux's default
    return range(lo, hi + 1)


def free_ports(count: int) -> list[int]:
    """COUNT distinct ports nobody uses (all held open until all are picked).

    They come from below the kernel's ephemeral range where it leaves room: a port from
    inside it, free now, can be given to any outgoing connection (a proxy's to its servers,
    say) before the server that is to listen on it has bound it.
    """
    below = range(LOWEST_PORT, ephemeral_ports().start)
    tries = random.sample(below, min(len(below), 20 * count))
    picked: list[int] = []
    with contextlib.ExitStack() as stack:
        for port in tries:
            sock = stack.enter_context(socket.socket())
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            picked.append(port)
            if len(picked) == count:
                return picked
        # No room below the range (a system that starts it low): the kernel picks.
        while len(picked) < count:
            sock = stack.enter_context(socket.socket())
            sock.bind(("127.0.0.1", 0))
            picked.append(sock.getsockname()[1])
        return picked


def rss_kib(pid: int) -> int:
    """Resident memory of PID in KiB (0 once it is gone)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


def tcp_answers(port: int, host: str = "127.0.0.1") -> bool:
    try:
        with socket.create_connection((host, port), timeout=1):
            return True
    except OSError:
        return False


def http(
    url: str, method: str = "GET", headers: dict[str, str] | None = None
) -> tuple[int, dict[str, str]]:
    """(status, headers) of one request; (0, {}) when nothing answers."""
    req = urllib.request.Request(url, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=5) as resp:
            return resp.status, dict(resp.headers)
    except urllib.error.HTTPError as err:
        return err.code, dict(err.headers)
    except (OSError, urllib.error.URLError):
        return 0, {}
