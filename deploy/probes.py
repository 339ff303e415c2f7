"""Whether a cluster's processes answer yet: free and busy ports, TCP and HTTP probes."""

from __future__ import annotations

import contextlib
import socket
import urllib.error
import urllib.request


def port_in_use(port: int) -> bool:
    # SO_REUSEADDR like Swift's own listener, so that TIME_WAIT leftovers do not count.
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return True
    return False


def free_ports(count: int) -> list[int]:
    """COUNT distinct ports nobody listens on (all held open until all are picked)."""
    with contextlib.ExitStack() as stack:
        socks = [stack.enter_context(socket.socket()) for _ in range(count)]
        for sock in socks:
            sock.bind(("127.0.0.1", 0))
        return [sock.getsockname()[1] for sock in socks]


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
