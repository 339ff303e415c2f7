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
over 1500-byte Ethernet frames carries 1448 of every 1538 bytes on a real wire (0.94); tbf
charges the 24 bytes of per-frame overhead once per segmentation-offloaded packet, not once
per frame, so a shaped veth that delivers its rate measures 1448/1514, 0.956: 1.6% more
payload than the real link.
"""

from __future__ import annotations

import contextlib
import socket
import statistics
import time
from collections.abc import Callable
from pathlib import Path

from swift_dss.bench.report import Figure
from swift_dss.deploy.netns import Network
from swift_dss.experiment.scale import TESTBED_DEFAULT
from swift_dss.experiment.targets import CACHING_TESTBED, TRAFFIC_TESTBED, TestbedDefaults
from swift_dss.testbed import netexec, shaping
from swift_dss.testbed.settings import TestbedSettings

PORT = 5201
SECONDS = 3.0
FACTORS = (1, 10)
NODES = 4
#: A link delivering its rate measures 0.94-0.96 (above); the goal leaves room for the
#: run's own ramp-up and a loaded machine.
GOAL = 0.85
_CHUNK = 1 << 20


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


def send(address: str, port: int, seconds: float) -> int:
    """Send to ADDRESS:PORT for SECONDS (once it listens); return the bytes sent."""
    deadline = time.monotonic() + 10
    while True:
        try:
            conn = socket.create_connection((address, port), timeout=10)
            break
        except ConnectionRefusedError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)
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
        out.append((f"{name} K={settings.dilation:g} x{settings.rate_scale:g}", settings))
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


def run(out: Path, rounds: int = 1, progress: Callable[[str], None] = print) -> list[Figure]:
    out.mkdir(parents=True, exist_ok=True)
    net = Network.for_dir(out)
    net.remove()  # what a crashed run of this bench left
    figures: list[Figure] = []
    try:
        net.make_testbed(TestbedSettings(), NODES)
        for label, settings in settings_measured():
            figures += measure(net, label, settings, rounds, SECONDS, progress)
    finally:
        with contextlib.suppress(Exception):
            left = net.remove()
            if left:
                progress(f"left behind: {left}")
    return figures
