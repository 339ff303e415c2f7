"""Link rates on the testbed's veth pairs, with tc's token bucket filter (tbf).

Each node hangs off the bridge by a veth pair: the root-side end (a bridge port) and the
node's `eth0` in its namespace. A qdisc shapes what leaves an interface, so a link is shaped
at both ends: the root-side end's egress is what flows into the node, `eth0`'s egress what
flows out of it. Traffic between two nodes thus passes the sender's uplink and the
receiver's downlink, as through a switch with a rate per port.

Why tbf with these numbers (no netem here, so rates only):

- rate: the link's rate over K (time dilation), in bit/s.
- overhead 24: Ethernet's per-frame cost that tc does not see (preamble and delimiter 8,
  FCS 4, inter-frame gap 12 bytes). TCP over 1500-byte frames then gets 1448 of every
  1538 bytes on the wire: 117.7 MB/s on 1 Gbit/s, the paper's measured 117 MB/s. tbf adds
  it once per packet it is handed, and a segmentation-offloaded packet carries up to 44
  frames, so bulk TCP gets 1448 of 1514 bytes instead: 119.5 MB/s, 1.6% above the real
  link (`dss bench links` measures it). Turning offload off would charge every frame, at
  the CPU cost of segmenting every packet in software on this 2-core machine.
- burst: max(1 ms of the rate, a minimum), so that the timer's granularity does not cap
  the rate (10 Gbit/s: 1.25 MB). A full bucket lets one burst through at the machine's
  speed, and a full queue holds the set latency *plus* the burst, so the minimum decides
  how deep a slow link's queue is. Two minimums (`MIN_BURSTS`):
  - "frames" (the default): four full Ethernet frames, 6 KB, 0.5 ms at 100 Mbit/s. tbf
    then splits each segmentation-offloaded packet (veths pass up to 64 KiB) into its
    frames in software, which at the testbed's scaled rates (tens of MB/s) costs the
    bridge little, and charges the overhead above per frame, as the wire does.
  - "gso": 128 KiB, one whole 64 KiB offloaded packet with headroom for a second, so that
    none is split; it is 10.5 ms by itself at 100 Mbit/s, over three default queues. Records
    made before the burst was a setting were measured with it.
- latency: the queue holds this long of the rate beyond the burst, then drops. A testbed
  sets it as the emulated link's queue times K (TestbedSettings.link_queue_ms, 3 ms by
  default: 6 ms at the caching experiment's K = 2), so that it holds the bytes the
  emulated queue would. TCP between namespaces has an RTT of tens of microseconds, so a
  few milliseconds of queue keep the link busy.
"""

from __future__ import annotations

import json
import math
import re
import subprocess
from dataclasses import dataclass

from swift_dss.sizes import exact, shown

ETHERNET_OVERHEAD = 24
#: A full Ethernet frame as tbf charges it: 1500 bytes of IP, the 14-byte header, and the
#: overhead above.
FRAME = 1514 + ETHERNET_OVERHEAD
#: tbf's smallest bucket, by the name a testbed's `link_burst` setting gives it.
MIN_BURSTS = {"frames": 4 * FRAME, "gso": 128 * 1024}
DEFAULT_BURST = "frames"
BURST_SECONDS = 0.001
#: The queue of a link shaped outside a testbed (real milliseconds).
QUEUE_MS = 20
#: tbf's kernel interface carries rates as 64-bit bytes/s; below one kbit/s a 1500-byte
#: frame would take 12 s, which no test or bench means.
MIN_RATE = 1000
#: The most those 64 bits carry, in bit/s.
MAX_RATE = 8 * (2**64 - 1)

_RATE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(bit|kbit|mbit|gbit)\s*$", re.IGNORECASE)
_UNITS = {"bit": 1, "kbit": 10**3, "mbit": 10**6, "gbit": 10**9}


class ShapingError(Exception):
    """A rate that cannot be set, or a tc command that failed, with a one-line reason."""


def parse_rate(text: str) -> int:
    """A rate in tc's notation ("10gbit", "1gbit", "117mbit") in bit/s."""
    m = _RATE.match(str(text))
    if not m:
        raise ShapingError(
            f"link rate {shown(text)} is not a number with a unit (bit, kbit, mbit, gbit), "
            "e.g. 1gbit"
        )
    number = exact(m.group(1), len(str(MAX_RATE)))
    bits = None if number is None else round(number * _UNITS[m.group(2).lower()])
    if bits is None or bits > MAX_RATE:
        raise ShapingError(
            f"link rate {shown(text)} is too large (tc takes at most 2^64 - 1 bytes/s)"
        )
    if bits < MIN_RATE:
        raise ShapingError(f"link rate {shown(text)} is below {MIN_RATE} bit/s")
    return bits


def format_rate(bits: float) -> str:
    for unit in ("gbit", "mbit", "kbit"):
        if bits >= _UNITS[unit]:
            return f"{bits / _UNITS[unit]:g}{unit}"
    return f"{bits:g}bit"


@dataclass(frozen=True)
class Link:
    """One node's veth pair and the rate it is shaped to (already dilated)."""

    name: str  # "client", "proxy", "s1", ...
    namespace: str
    outer: str  # the root-side end, a bridge port
    rate: int  # bit/s
    inner: str = "eth0"
    #: How long a queue the link keeps, in real milliseconds (already dilated).
    queue_ms: float = QUEUE_MS
    #: Its token bucket's minimum (a `MIN_BURSTS` name).
    burst: str = DEFAULT_BURST

    @property
    def bytes_per_second(self) -> int:
        return self.rate // 8


def burst_bytes(rate: int, burst: str = DEFAULT_BURST) -> int:
    return max(MIN_BURSTS[burst], math.ceil(rate / 8 * BURST_SECONDS))


def full_queue_seconds(rate: int, queue_ms: float, burst: str = DEFAULT_BURST) -> float:
    """How long a full queue of a link shaped by tbf(RATE, QUEUE_MS, BURST) takes to drain:
    tbf keeps the latency's bytes beyond the burst, so at a low rate a large burst is most
    of it (128 KiB is 10.5 ms at 100 Mbit/s)."""
    return queue_ms / 1000 + burst_bytes(rate, burst) * 8 / rate


def tbf(rate: int, queue_ms: float = QUEUE_MS, burst: str = DEFAULT_BURST) -> list[str]:
    """The qdisc spec that shapes an interface's egress to RATE bit/s, with a queue of
    QUEUE_MS milliseconds beyond a bucket of at least BURST's bytes."""
    return [
        "tbf",
        "rate",
        f"{rate}bit",
        "burst",
        str(burst_bytes(rate, burst)),
        "latency",
        f"{queue_ms:g}ms",
        "overhead",
        str(ETHERNET_OVERHEAD),
    ]


def commands(link: Link) -> list[list[str]]:
    """The tc command lines that shape LINK both ways: into the node, then out of it."""
    spec = tbf(link.rate, link.queue_ms, link.burst)
    return [
        ["tc", "qdisc", "replace", "dev", link.outer, "root", *spec],
        ["tc", "-n", link.namespace, "qdisc", "replace", "dev", link.inner, "root", *spec],
    ]


def _tc(cmd: list[str]) -> str:
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        reason = (proc.stderr or proc.stdout).strip().splitlines()
        raise ShapingError(f"{' '.join(cmd)}: {reason[-1] if reason else proc.returncode}")
    return proc.stdout


def apply(links: list[Link]) -> None:
    for link in links:
        for cmd in commands(link):
            _tc(cmd)


def root_qdiscs(link: Link) -> dict[str, dict | None]:
    """The root qdisc the kernel holds on each end of LINK ("into", "out of" the node),
    with its counters, from `tc -s -j qdisc show`; None where an end has none."""
    out: dict[str, dict | None] = {}
    for direction, prefix, dev in (
        ("into", ["tc"], link.outer),
        ("out", ["tc", "-n", link.namespace], link.inner),
    ):
        qdiscs = json.loads(_tc([*prefix, "-s", "-j", "qdisc", "show", "dev", dev]) or "[]")
        out[direction] = next((q for q in qdiscs if q.get("root")), None)
    return out


def qdisc_rates(link: Link) -> dict[str, int | None]:
    """The tbf rate (bytes/s) on each end of LINK; None where the root qdisc is not a tbf."""
    return {
        direction: int(q["options"]["rate"]) if q and q.get("kind") == "tbf" else None
        for direction, q in root_qdiscs(link).items()
    }
