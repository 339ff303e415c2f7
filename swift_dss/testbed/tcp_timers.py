"""TCP's retransmission timer on the testbed's nodes, dilated with the rest.

Why: time dilation makes every emulated second K real ones, and the testbed stretches
every timeout it sets by K, but the kernel's TCP keeps its own clock. Its smallest
retransmission timeout (RTO) is 200 ms of real time, 200 / K ms of the emulated testbed's:
at K = 8 a segment a full queue dropped is sent again after 25 emulated ms, where the
paper's kernel waited 200. A lost segment then costs the emulated run an eighth of what
it cost the paper's.

Linux keeps that minimum per network namespace (`tcp_rto_min_us`, since 6.11), so each
node's namespace gets the emulated minimum times K. What is left undilated: the first
RTO of a connection request (1 s, which no sysctl sets), the delayed-ACK timer (40 ms at
least) and the largest RTO (120 s, the sysctl's ceiling).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from swift_dss.testbed import netexec

PROC = Path("/proc/sys/net/ipv4")
KEY = "tcp_rto_min_us"
#: Linux's minimum RTO (TCP_RTO_MIN), in ms: the paper's kernel's too.
LINUX_RTO_MIN_MS = 200.0


class TimerError(Exception):
    """A timer that cannot be set, with a one-line reason."""


def supported(proc: Path = PROC) -> bool:
    return (proc / KEY).exists()


def apply(namespaces: list[str], rto_min_us: int, proc: Path = PROC) -> None:
    """Make RTO_MIN_US the minimum retransmission timeout of every one of NAMESPACES."""
    if not supported(proc):
        raise TimerError(
            f"this kernel has no {KEY} (Linux 6.11 and later): the testbed cannot dilate "
            "TCP's retransmission timeout; set tcp_rto_min_ms to 0 to leave it"
        )
    for ns in namespaces:
        if reason := netexec.write(ns, str(proc / KEY), str(rto_min_us)):
            raise TimerError(f"{KEY} {rto_min_us} in {ns}: {reason}")


def read(namespace: str, proc: Path = PROC) -> int:
    """NAMESPACE's minimum retransmission timeout, in microseconds."""
    cmd = netexec.command(namespace, ["cat", str(proc / KEY)])
    return int(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout)
