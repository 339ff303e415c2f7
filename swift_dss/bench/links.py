"""`dss bench links`: the testbed's shaped links measured with bulk TCP transfers.

Brings up the testbed's network alone (the bridge, the client's, proxy's and four storage
nodes' namespaces, every veth shaped with tc; no Swift), then for each link sends as much
as TCP will for a few seconds between two namespaces, with Python sockets in `ip netns exec`
subprocesses, and compares what arrived with the rate set. A storage node's link is
measured from and to the client (10 Gbit/s, so the node's 1 Gbit/s is the bottleneck); the
client's and proxy's links from one to the other. Done at K = 1 (the paper's rates), at
K = 10 (a tenth of them, within what this machine moves through a veth), and at the rates
the caching and traffic experiments run at by default (byte rates scaled as the object
sizes, then dilated), reshaping the same links in between.

Every figure is measured / set, both in MB/s of TCP payload against the link's rate. TCP
over 1500-byte Ethernet frames carries 1448 of every 1538 bytes on a real wire (0.94). tbf
charges the 24 bytes of per-frame overhead once per packet it is handed: per frame where
its bucket is smaller than a segmentation-offloaded packet and it splits them (the default
"frames" burst at the experiments' rates), but once per offloaded packet where the bucket
holds one whole (a millisecond of 1 Gbit/s and more, or the "gso" burst), so there a
shaped veth that delivers its rate measures 1448/1514, 0.956: 1.6% more payload than the
real link. The experiments' rates are measured with both bursts.

Last, at the caching experiment's rates, how long a reply from a storage node waits in its
link's queue while bulk connections from the node fill it, under each TCP congestion
control the kernel has (cubic, bbr) side by side with the host's default: the queue a
busy node's responses wait in, which the senders' algorithm decides (docs/deployment.md).
"""

from __future__ import annotations

import contextlib
import socket
import statistics
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

from swift_dss.bench.report import Figure
from swift_dss.deploy.netns import Network
from swift_dss.experiment.scale import TESTBED_DEFAULT
from swift_dss.experiment.targets import CACHING_TESTBED, TRAFFIC_TESTBED, TestbedDefaults
from swift_dss.testbed import congestion, netexec, shaping
from swift_dss.testbed.settings import TestbedSettings

PORT = 5201
SECONDS = 3.0
FACTORS = (1, 10)
NODES = 4
#: A link delivering its rate measures 0.94-0.96 (above); the goal leaves room for the
#: run's own ramp-up and a loaded machine.
GOAL = 0.85
_CHUNK = 1 << 20
#: The queue measurement: bulk connections filling a storage node's link (a node serving
#: as many GETs at once), how long they run before and while replies are timed.
QUEUE_FLOWS = 8
QUEUE_SETTLE = 2.0
QUEUE_SECONDS = 5.0
#: The congestion controls whose queues are set side by side with the host's.
CONTROLS = ("cubic", "bbr")


def receive(address: str, port: int, timeout: float) -> dict[str, float]:
    """Accept one connection on ADDRESS:PORT and read it to the end: bytes and the seconds
    from the first byte to the last."""
    with socket.create_server((address, port)) as server:
        server.settimeout(timeout)
        conn, _ = server.accept()
    buf = bytearray(_CHUNK)
    total, first = 0, 0.0
    with conn:
        conn.settimeout(timeout)
        while n := conn.recv_into(buf):
            if not total:
                first = time.monotonic()
            total += n
    return {"bytes": total, "seconds": time.monotonic() - first}


def connect(address: str, port: int) -> socket.socket:
    """A connection to ADDRESS:PORT, once its listener (started alongside) is up."""
    deadline = time.monotonic() + 10
    while True:
        try:
            return socket.create_connection((address, port), timeout=10)
        except ConnectionRefusedError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def send(address: str, port: int, seconds: float) -> int:
    """Send to ADDRESS:PORT for SECONDS (once it listens); return the bytes sent."""
    conn = connect(address, port)
    data = bytes(_CHUNK)
    sent = 0
    with conn:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            conn.sendall(data)
            sent += len(data)
    return sent


def transfer(src_ns: str, dst_ns: str, dst_address: str, seconds: float) -> float:
    """Bytes per second that arrived in DST_NS from SRC_NS over one TCP connection."""
    receiver = netexec.spawn(dst_ns, "swift_dss.bench.links:receive", dst_address, PORT, 60)
    sender = netexec.spawn(src_ns, "swift_dss.bench.links:send", dst_address, PORT, seconds)
    try:
        netexec.result(sender, seconds + 60)
        got = netexec.result(receiver, 60)
    finally:
        for proc in (sender, receiver):
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    return got["bytes"] / got["seconds"]


def paths(net: Network, nodes: int) -> list[tuple[str, str, str, str]]:
    """(name, source namespace, destination namespace, destination address) per transfer:
    one each way over every link."""
    client, proxy = net.role_namespace("client"), net.role_namespace("proxy")
    out = [
        ("client>proxy", client, proxy, Network.role_address("proxy")),
        ("proxy>client", proxy, client, Network.role_address("client")),
    ]
    for i in range(1, nodes + 1):
        ns, addr = net.namespace(i), Network.address(i)
        out += [
            (f"client>s{i}", client, ns, addr),
            (f"s{i}>client", ns, client, Network.role_address("client")),
        ]
    return out


def experiment_settings(defaults: TestbedDefaults) -> TestbedSettings:
    """The link rates an experiment runs at when its options leave them unsaid."""
    scale = defaults.rate_scale(TESTBED_DEFAULT.size_scale)
    return TestbedSettings(dilation=defaults.dilation, rate_scale=scale)


def settings_measured() -> list[tuple[str, TestbedSettings]]:
    """(label, settings) of each shaping the bench measures, in order."""
    out = [(f"K={k:g}", TestbedSettings(dilation=k)) for k in FACTORS]
    for name, defaults in (("caching", CACHING_TESTBED), ("traffic", TRAFFIC_TESTBED)):
        settings = experiment_settings(defaults)
        label = f"{name} K={settings.dilation:g} x{settings.rate_scale:g}"
        for burst in shaping.MIN_BURSTS:
            out.append((f"{label} burst {burst}", replace(settings, link_burst=burst)))
    return out


def bottleneck(settings: TestbedSettings, name: str) -> int:
    """The lower of the sender's and the receiver's rate (bit/s) of transfer NAME."""
    src, dst = name.split(">")
    return min(settings.link_rate(src), settings.link_rate(dst))


def measure(
    net: Network,
    label: str,
    settings: TestbedSettings,
    rounds: int,
    seconds: float,
    progress: Callable[[str], None],
) -> list[Figure]:
    shaping.apply(net.testbed_links(settings, NODES))
    figures = []
    for name, src, dst, addr in paths(net, NODES):
        rates = [transfer(src, dst, addr, seconds) for _ in range(rounds)]
        measured = statistics.median(rates) / 1e6
        set_mbs = bottleneck(settings, name) / 8 / 1e6
        progress(f"{label} {name}: {measured:.2f} MB/s of {set_mbs:.2f} set")
        figures.append(Figure(f"{label} {name}", measured, set_mbs, "MB/s", goal=GOAL))
    return figures


def sink(address: str, port: int, flows: int, timeout: float) -> int:
    """Accept FLOWS connections on ADDRESS:PORT and read each to its end; the bytes read."""
    with socket.create_server((address, port), backlog=flows) as server:
        server.settimeout(timeout)
        conns = [server.accept()[0] for _ in range(flows)]
    with ThreadPoolExecutor(flows) as pool:
        return sum(pool.map(lambda c: _drain(c, timeout), conns))


def _drain(conn: socket.socket, timeout: float) -> int:
    buf, total = bytearray(_CHUNK), 0
    with conn:
        conn.settimeout(timeout)
        while n := conn.recv_into(buf):
            total += n
    return total


def answer_while_sending(
    address: str, port: int, flows: int, seconds: float, own: str, echo_port: int
) -> int:
    """Answer every byte received on OWN:ECHO_PORT with one byte, while FLOWS connections
    send to ADDRESS:PORT for SECONDS; the bytes they sent."""
    server = socket.create_server((own, echo_port))
    server.settimeout(seconds + 10)

    def echo() -> None:
        with contextlib.suppress(OSError), server.accept()[0] as conn:
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            while conn.recv(1):
                conn.sendall(b"r")

    with server, ThreadPoolExecutor(flows + 1) as pool:
        pool.submit(echo)
        return sum(pool.map(lambda _: send(address, port, seconds), range(flows)))


def reply_times(address: str, port: int, settle: float, seconds: float) -> list[float]:
    """Milliseconds each one-byte request to ADDRESS:PORT waited for its reply, over one
    connection, every 20 ms for SECONDS once the senders have had SETTLE seconds."""
    conn = connect(address, port)
    times = []
    with conn:
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        time.sleep(settle)
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            start = time.monotonic()
            conn.sendall(b"q")
            conn.recv(1)
            times.append((time.monotonic() - start) * 1000)
            time.sleep(0.02)
    return times


def queue_delay(net: Network, settings: TestbedSettings, seconds: float) -> float:
    """Median milliseconds (the emulated testbed's) a reply from storage node 1 waits in
    its link's queue while QUEUE_FLOWS bulk connections from it fill that link."""
    node, client = net.namespace(1), net.role_namespace("client")
    node_addr, client_addr = Network.address(1), Network.role_address("client")
    receiver = netexec.spawn(
        client, "swift_dss.bench.links:sink", client_addr, PORT, QUEUE_FLOWS, seconds + 60
    )
    sender = netexec.spawn(
        node, "swift_dss.bench.links:answer_while_sending",
        client_addr, PORT, QUEUE_FLOWS, seconds + QUEUE_SETTLE, node_addr, PORT + 1,
    )  # fmt: skip
    try:
        times = netexec.call(
            client, "swift_dss.bench.links:reply_times", node_addr, PORT + 1, QUEUE_SETTLE,
            seconds, timeout=seconds + 60,
        )  # fmt: skip
        netexec.result(sender, seconds + 60)
        netexec.result(receiver, 60)
    finally:
        for proc in (sender, receiver):
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    return statistics.median(times) / settings.dilation


def measure_queues(net: Network, seconds: float, progress: Callable[[str], None]) -> list[Figure]:
    """The caching experiment's storage link under load, its queue filled by each
    congestion control this kernel has of CONTROLS, against the host's default; then by
    the host's with each burst, against what a full queue holds (`full_link_queue_ms`)."""
    base = experiment_settings(CACHING_TESTBED)
    host = congestion.host_default()
    have = congestion.available()
    label = f"caching s1>client queue delay, {QUEUE_FLOWS} flows"

    def delay(settings: TestbedSettings, cc: str) -> float:
        shaping.apply(net.testbed_links(settings, NODES))
        congestion.apply(net.namespaces(), cc)
        ms = queue_delay(net, settings, seconds)
        progress(
            f"caching s1>client, {QUEUE_FLOWS} flows, TCP {cc}, burst {settings.link_burst}: "
            f"a reply waits {ms:.1f} ms (a full queue holds "
            f"{settings.full_link_queue_ms('s1'):.1f} ms)"
        )
        return ms

    controls = [host, *(c for c in CONTROLS if c in have and c != host)]
    delays = {cc: delay(base, cc) for cc in controls}
    figures = [
        Figure(f"{label}, TCP {name} / {host} (the host's)", ms, delays[host], "ms")
        for name, ms in delays.items()
        if name != host
    ]
    for burst in shaping.MIN_BURSTS:
        settings = replace(base, link_burst=burst)
        ms = delays[host] if burst == base.link_burst else delay(settings, host)
        full = settings.full_link_queue_ms("s1")
        figures.append(Figure(f"{label}, burst {burst} / its full queue", ms, full, "ms"))
    return figures


def run(out: Path, rounds: int = 1, progress: Callable[[str], None] = print) -> list[Figure]:
    out.mkdir(parents=True, exist_ok=True)
    net = Network.for_dir(out)
    net.remove()  # what a crashed run of this bench left
    figures: list[Figure] = []
    try:
        net.make_testbed(TestbedSettings(), NODES)
        for label, settings in settings_measured():
            figures += measure(net, label, settings, rounds, SECONDS, progress)
        figures += measure_queues(net, QUEUE_SECONDS, progress)
    finally:
        with contextlib.suppress(Exception):
            left = net.remove()
            if left:
                progress(f"left behind: {left}")
    return figures
