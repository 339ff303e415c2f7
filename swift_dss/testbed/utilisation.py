"""What the emulated testbed's nodes and links were busy with, per phase of a run, and
whether this machine's CPU rather than the emulated hardware set the pace.

A `Sample` is taken at every phase boundary: CPU seconds per node (its servers' processes
and workers, and its dss-tier daemon; the proxy node's proxy and memcached; the client's
load generator), the machine's busy and total CPU time from /proc/stat, and the bytes each
shaped link carried (the counters of its veth in the root namespace). Two samples make a
phase's `Usage`: each node's CPU as a share of one core, the machine's as a share of all
of them, and each link's bytes against what its rate allows in that time.

A phase is flagged CPU-bound when the machine's cores were nearly all busy, or when one
process used nearly a whole core: a Swift server process runs one event loop under one
interpreter lock and cannot use more, so a saturated worker caps its node long before
the machine is. Either way the emulated links and devices were not what the run
measured, and a larger time dilation factor (or more workers) is the remedy.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import subprocess
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from swift_dss.testbed import netexec, shaping
from swift_dss.testbed.shaping import Link

#: The machine counts as saturated above this share of all its cores: with every core that
#: busy, runnable processes queue for one and the queueing, not the emulated hardware,
#: shows in the latencies.
MACHINE_BOUND = 0.75
#: A process counts as saturated above this share of one core.
PROCESS_BOUND = 0.90
#: TCP counters each node's kernel keeps, by the name a phase's usage gives them: segments
#: sent again, and retransmission timeouts, each of which stalls its connection for at
#: least the minimum RTO (200 ms of real time; a lost SYN, 1 s).
TCP_COUNTERS = {"retransmits": ("Tcp", "RetransSegs"), "timeouts": ("TcpExt", "TCPTimeouts")}
#: A link counts as the bottleneck above this share of its rate (TCP and Ethernet framing
#: carry 1448 payload bytes of every 1538 on the wire, 0.94).
LINK_BOUND = 0.80


@dataclass(frozen=True)
class Sample:
    at: float  # time.monotonic()
    #: node -> pid -> CPU seconds so far
    nodes: Mapping[str, Mapping[int, float]]
    machine_busy_s: float
    machine_total_s: float
    #: link -> (bytes out of the node, bytes into it)
    links: Mapping[str, tuple[int, int]]
    #: node -> its TCP counters and its link's drops so far (`net_counters`)
    net: Mapping[str, Mapping[str, int]] = field(default_factory=dict)


@dataclass
class Usage:
    seconds: float
    cores: int
    #: node -> CPU as a share of one core (1.0 = one core busy all the phase)
    node_cores: dict[str, float]
    #: node -> its busiest process's CPU as a share of one core
    node_busiest: dict[str, float]
    machine: float  # busy share of all cores
    #: link -> its busier direction's bytes as a share of what its rate carries in the phase
    links: dict[str, float]
    cpu_bound: bool = False
    why: list[str] = field(default_factory=list)
    #: node -> what its TCP counters and its link's drops added in the phase
    net: dict[str, dict[str, int]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            **({"tcp": self.net} if self.net else {}),
            "seconds": round(self.seconds, 3),
            "cores": self.cores,
            "machine_cpu": round(self.machine, 3),
            "node_cpu_cores": {k: round(v, 3) for k, v in self.node_cores.items()},
            "busiest_process_cores": {k: round(v, 3) for k, v in self.node_busiest.items()},
            "links": {k: round(v, 6) for k, v in self.links.items()},
            "bottleneck": self.bottleneck(),
            "cpu_bound": self.cpu_bound,
            "why": self.why,
        }

    def bottleneck(self) -> str:
        """What set the pace: "cpu", a link's name, or "devices" (neither; the emulated
        devices, or too little load to fill anything)."""
        if self.cpu_bound:
            return "cpu"
        busiest = max(self.links.items(), key=lambda kv: kv[1], default=None)
        if busiest is not None and busiest[1] >= LINK_BOUND:
            return busiest[0]
        return "devices"


def machine_cpu(stat: str | None = None) -> tuple[float, float]:
    """(busy, total) CPU seconds of the machine since boot, from /proc/stat's "cpu" line."""
    text = stat if stat is not None else Path("/proc/stat").read_text()
    fields = [int(x) for x in text.splitlines()[0].split()[1:]]
    # user nice system idle iowait irq softirq steal (guest time is inside user already).
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    total = sum(fields[:8])
    tick = os.sysconf("SC_CLK_TCK")
    return (total - idle) / tick, total / tick


def process_cpu_s(pids: Iterable[int]) -> dict[int, float]:
    """pid -> user plus system CPU seconds, of the live processes among PIDS."""
    tick = os.sysconf("SC_CLK_TCK")
    out = {}
    for pid in pids:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue  # gone since it was listed
        fields = stat.rsplit(")", 1)[1].split()
        out[pid] = (int(fields[11]) + int(fields[12])) / tick
    return out


def link_bytes(veth: str) -> tuple[int, int]:
    """(bytes out of the node, bytes into it) over the root namespace's end of its veth,
    which sends what the node receives and receives what it sends."""
    stats = Path("/sys/class/net") / veth / "statistics"
    rx = int((stats / "rx_bytes").read_text())
    tx = int((stats / "tx_bytes").read_text())
    return rx, tx


def parse_tcp_counters(text: str) -> dict[str, int]:
    """TCP_COUNTERS from the text of /proc/net/snmp and /proc/net/netstat, where each
    group is a line of names followed by a line of values, both led by "Group:"."""
    names: dict[str, list[str]] = {}
    got = {}
    for line in text.splitlines():
        group, _, rest = line.partition(":")
        if group not in names:
            names[group] = rest.split()
            continue
        table = dict(zip(names.pop(group), rest.split(), strict=False))
        for key, (g, name) in TCP_COUNTERS.items():
            if g == group and name in table:
                got[key] = int(table[name])
    return got


def net_counters(link: Link) -> dict[str, int]:
    """The TCP counters of LINK's node and the drops of its link's queues, both ways (0
    where tc cannot say: a sample must not end the run it measures)."""
    cmd = netexec.command(link.namespace, ["cat", "/proc/net/snmp", "/proc/net/netstat"])
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    try:
        qdiscs = shaping.root_qdiscs(link)
    except (shaping.ShapingError, ValueError):
        qdiscs = {}
    drops = {d: int((qdiscs.get(d) or {}).get("drops", 0)) for d in ("out", "into")}
    return {
        **(parse_tcp_counters(proc.stdout) if proc.returncode == 0 else {}),
        "drops_out": drops["out"],
        "drops_in": drops["into"],
    }


def sample(
    nodes: Mapping[str, Iterable[int]], veths: Mapping[str, str], links: Iterable[Link] = ()
) -> Sample:
    """NODES: node -> its pids; VETHS: link name -> the root namespace end of its veth;
    LINKS: the shaped links whose nodes' TCP counters and drops are sampled too."""
    busy, total = machine_cpu()
    return Sample(
        at=time.monotonic(),
        nodes={name: process_cpu_s(pids) for name, pids in nodes.items()},
        machine_busy_s=busy,
        machine_total_s=total,
        links={name: link_bytes(veth) for name, veth in veths.items()},
        net={link.name: net_counters(link) for link in links},
    )


def usage(before: Sample, after: Sample, rates: Mapping[str, int], cores: int) -> Usage:
    """The phase between two samples; RATES: link name -> its (dilated) rate in bit/s."""
    seconds = max(after.at - before.at, 1e-9)
    node_cores, busiest = {}, {}
    for name, pids in before.nodes.items():
        # A process that started or ended within the phase is left out: its share of the
        # phase is not known.
        used = [
            max(0.0, after.nodes[name][pid] - cpu) / seconds
            for pid, cpu in pids.items()
            if pid in after.nodes.get(name, {})
        ]
        node_cores[name] = sum(used)
        busiest[name] = max(used, default=0.0)
    total = after.machine_total_s - before.machine_total_s
    machine = (after.machine_busy_s - before.machine_busy_s) / total if total > 0 else 0.0
    links = {}
    for name, (out0, in0) in before.links.items():
        if name not in after.links or not rates.get(name):
            continue
        out1, in1 = after.links[name]
        links[name] = max(out1 - out0, in1 - in0) * 8 / (rates[name] * seconds)
    net = {
        name: {k: v - before.net[name].get(k, 0) for k, v in counters.items()}
        for name, counters in after.net.items()
        if name in before.net
    }
    u = Usage(seconds, cores, node_cores, busiest, machine, links, net=net)
    if machine >= MACHINE_BOUND:
        u.why.append(f"the machine's {cores} cores were {machine:.0%} busy")
    for name, used in busiest.items():
        if used >= PROCESS_BOUND:
            u.why.append(f"a process of {name} used {used:.2f} of a core")
    u.cpu_bound = bool(u.why)
    return u


def phases(
    samples: list[tuple[str, Sample]], rates: Mapping[str, int], cores: int | None = None
) -> dict[str, dict[str, Any]]:
    """Phase name -> its usage, from samples taken before each phase and one at the end
    (named as `(phase name, sample)`; the last name is not a phase)."""
    cores = cores or os.cpu_count() or 1
    return {
        name: usage(before, after, rates, cores).to_json()
        for (name, before), (_, after) in itertools.pairwise(samples)
    }


class Sampler:
    """Samples every EVERY seconds in a thread of its own while in use, each with the wall
    clock's time, for runs whose phases are not started from this process (the traffic
    study's streams run on the client node): `windows` then picks each phase's samples."""

    def __init__(self, take: Callable[[], Sample], every: float) -> None:
        self.take, self.every = take, every
        self.taken: list[tuple[float, Sample]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="utilisation", daemon=True)

    def _loop(self) -> None:
        while True:
            # A failed sample is a gap, not the end of the run it measures.
            with contextlib.suppress(OSError, subprocess.SubprocessError, ValueError, KeyError):
                self.taken.append((time.time(), self.take()))
            if self._stop.wait(self.every):
                return

    def __enter__(self) -> Sampler:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        self._thread.join()


def windows(
    taken: list[tuple[float, Sample]],
    spans: Mapping[str, tuple[float, float]],
    rates: Mapping[str, int],
    cores: int | None = None,
) -> dict[str, dict[str, Any]]:
    """Phase name -> its usage between the first sample at or after its span's start and
    the last at or before its end (wall-clock seconds), so that no other phase's load is
    in it; a phase whose span holds fewer than two samples is left out."""
    cores = cores or os.cpu_count() or 1
    out = {}
    for name, (start, end) in spans.items():
        inside = [s for at, s in taken if start <= at <= end]
        if len(inside) >= 2:
            out[name] = usage(inside[0], inside[-1], rates, cores).to_json()
    return out


def cells(u: Mapping[str, Any]) -> str:
    """A report's table cells for one phase's usage (as `Usage.to_json` wrote it): machine
    CPU, the busiest process, the busiest link, and the bottleneck."""
    busiest = max(u["busiest_process_cores"].items(), key=lambda kv: kv[1], default=None)
    link = max(u["links"].items(), key=lambda kv: kv[1], default=None)
    return (
        f"{100 * u['machine_cpu']:.0f}% | "
        f"{f'{busiest[0]}: {busiest[1]:.2f}' if busiest else '-'} | "
        f"{f'{link[0]}: {100 * link[1]:.0f}%' if link else '-'} | "
        f"{'**cpu**' if u['cpu_bound'] else u['bottleneck']}"
    )


#: The header of a table of `cells`, after the caller's own leading columns.
CELLS_HEADER = (
    "machine CPU | busiest process (node: share of a core) | "
    "busiest link (share of its rate) | bottleneck |"
)


def cpu_bound_phases(by_phase: Mapping[str, Mapping[str, Any]], only: Iterable[str]) -> list[str]:
    """The phases among ONLY whose usage says the CPU was the bottleneck."""
    return [p for p in only if by_phase.get(p, {}).get("cpu_bound")]
