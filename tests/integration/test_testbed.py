"""The emulated testbed: its network (namespaces, tc-shaped veths) brought up and torn down
on its own, with rates checked in the kernel and by transfers; and the local cluster with
`--testbed`, proxy and client in namespaces of their own, serving a client's PUT and GET
from the client namespace."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from swift_dss.bench.links import transfer
from swift_dss.deploy.deploy_cli import deploy, describe
from swift_dss.deploy.local_cluster import LocalCluster
from swift_dss.deploy.netns import Network
from swift_dss.experiment import put_waits
from swift_dss.testbed import congestion, shaping, tcp_timers
from swift_dss.testbed.settings import TestbedSettings

pytestmark = pytest.mark.integration


def leftovers(net: Network) -> list[str]:
    """Namespaces, links and qdiscs of NET still in the kernel."""
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    qdiscs = subprocess.run(["tc", "qdisc", "show"], capture_output=True, text=True).stdout
    return [
        *net.namespaces(),
        *(line for line in links.splitlines() if net.tag in line),
        *(line for line in qdiscs.splitlines() if net.tag in line),
    ]


@pytest.fixture
def net(tmp_path: Path) -> Iterator[Network]:
    network = Network.for_dir(tmp_path)
    try:
        yield network
    finally:
        network.remove()


def test_links_are_shaped_and_torn_down(net: Network) -> None:
    settings = TestbedSettings(dilation=5, storage_rate="200mbit")
    links = net.make_testbed(settings, 2)
    assert [x.name for x in links] == ["client", "proxy", "s1", "s2"]
    for link in links:
        # Both ends carry a tbf at the dilated rate (tc reports bytes/s).
        assert shaping.qdisc_rates(link) == {
            "into": link.bytes_per_second,
            "out": link.bytes_per_second,
        }
    assert links[0].rate == 2 * 10**9 and links[2].rate == 40 * 10**6
    # s2 four times slower than s1: the same transfer from the client delivers clearly less.
    slow = net.link("s2", links[2].rate // 4)
    shaping.apply([slow])
    assert shaping.qdisc_rates(slow)["into"] == 10**6 * 10 // 8
    client = net.role_namespace("client")
    fast_rate = transfer(client, net.namespace(1), Network.address(1), 1.0)
    slow_rate = transfer(client, net.namespace(2), Network.address(2), 1.0)
    assert slow_rate < fast_rate / 2
    assert net.remove() == []
    assert leftovers(net) == []


#: A new connection's algorithm, read in the namespace it is made in.
SOCKET_CC = (
    "import socket; s = socket.socket(); "
    "print(s.getsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, 16).rstrip(b'\\0').decode())"
)


def test_every_node_connects_with_the_set_congestion_control(net: Network) -> None:
    host = congestion.host_default()
    name = next(cc for cc in ("cubic", "reno") if cc != host)
    net.make_testbed(TestbedSettings(tcp_congestion=name), 2)
    namespaces = net.namespaces()
    assert len(namespaces) == 4
    for ns in namespaces:
        out = subprocess.run(
            ["ip", "netns", "exec", ns, sys.executable, "-c", SOCKET_CC],
            capture_output=True, text=True, check=True,
        )  # fmt: skip
        assert out.stdout.strip() == name, ns
    # The host's own connections keep its default.
    assert congestion.host_default() == host


#: A connection made and used in the namespace, then the kernel's view of its sockets:
#: `ss` gives each one's current retransmission timeout as "rto:<ms>".
SOCKET_RTO = (
    "import socket, subprocess; l = socket.create_server(('127.0.0.1', 0)); "
    "c = socket.create_connection(l.getsockname()); a, _ = l.accept(); "
    "c.sendall(b'x'); a.recv(1); a.sendall(b'y'); c.recv(1); "
    "print(subprocess.run(['ss', '-tni', 'state', 'established'], capture_output=True, "
    "text=True, check=True).stdout)"
)


def test_every_nodes_tcp_waits_the_dilated_minimum_rto(net: Network) -> None:
    host = (tcp_timers.PROC / tcp_timers.KEY).read_text()
    net.make_testbed(TestbedSettings(dilation=8), 1)
    namespaces = net.namespaces()
    assert len(namespaces) == 3
    for ns in namespaces:
        assert tcp_timers.read(ns) == 1_600_000, ns
        out = subprocess.run(
            ["ip", "netns", "exec", ns, sys.executable, "-c", SOCKET_RTO],
            capture_output=True, text=True, check=True,
        ).stdout  # fmt: skip
        rtos = re.findall(r"\brto:(\d+)", out)
        # Both ends of the connection: Linux's 200 ms, eight times longer.
        assert len(rtos) == 2 and all(int(ms) >= 1600 for ms in rtos), out
    # The host's own connections keep theirs.
    assert (tcp_timers.PROC / tcp_timers.KEY).read_text() == host


def test_an_undilated_rto_leaves_the_kernels(net: Network) -> None:
    net.make_testbed(TestbedSettings(dilation=8, tcp_rto_min_ms=0), 1)
    assert {tcp_timers.read(ns) for ns in net.namespaces()} == {200_000}


def test_down_cleans_up_a_crashed_testbed(tmp_path: Path) -> None:
    """A testbed network whose cluster state is gone (a crash) goes with `down`'s search by
    name: nothing of it stays."""
    net = Network.for_dir(tmp_path)
    try:
        net.make_testbed(TestbedSettings(), 1)
        assert len(net.namespaces()) == 3
        cluster = LocalCluster(LocalCluster.config_type(dir=tmp_path, testbed=TestbedSettings()))
        cluster.down()
        assert leftovers(net) == []
    finally:
        net.remove()


@pytest.fixture(scope="module")
def testbed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    path = tmp_path_factory.mktemp("testbed") / "c"
    args = ["local-cluster", "up", "--dir", str(path), "--testbed", "--dilation", "2",
            "--tier-cache-size", "32MiB"]  # fmt: skip
    result = CliRunner().invoke(deploy, args)
    try:
        assert result.exit_code == 0, result.output
        yield LocalCluster.load(path)
    finally:
        if (path / "local-cluster.json").exists():
            LocalCluster.load(path).down()
        net = Network.for_dir(path)
        net.remove()
        assert leftovers(net) == []


def in_ns(namespace: str, *cmd: str) -> str:
    return subprocess.run(
        ["ip", "netns", "exec", namespace, *cmd], capture_output=True, text=True, check=True
    ).stdout


def test_proxy_and_client_have_namespaces_and_a_client_put_get_works(
    testbed: LocalCluster,
) -> None:
    st = testbed.status()
    assert st["up"]
    tb = st["testbed"]
    # K = 2: half the paper's rates, twice its timeouts, device models twice as slow.
    assert tb["links"]["s1"]["rate"] == "500mbit" and tb["links"]["proxy"]["rate"] == "5gbit"
    assert tb["tier_models"] == ["intel710:dilation=2", "st1000nm0011:dilation=2"]
    assert "dilation=2" in json.dumps(testbed.tier_stats("s1"))
    assert tb["rate_scale"] == 1.0
    text = describe(testbed)
    assert "K=2; client" in text and "s1 500mbit" in text and "byte rates" not in text
    proxy_ns, client_ns = tb["proxy_namespace"], tb["client_namespace"]
    # The proxy listens on its own namespace's address, and only there.
    port = testbed.proxy_port
    assert f"198.18.0.2:{port}" in in_ns(proxy_ns, "ss", "-Htln")
    assert f":{port}" not in subprocess.run(["ss", "-Htln"], capture_output=True, text=True).stdout
    assert "198.18.0.3/24" in in_ns(client_ns, "ip", "-o", "-4", "addr")
    conf = (testbed.dir / "proxy" / "etc" / "proxy-server.conf").read_text()
    assert "conn_timeout = 1\n" in conf and "node_timeout = 20\n" in conf
    assert "workers = 2\n" in conf
    # A client's work in the client namespace: a Python function, then curl.
    assert testbed.client_call("swift_dss.deploy.probes:tcp_answers", port, testbed.proxy_ip)

    def curl(*args: str) -> subprocess.CompletedProcess[str]:
        cmd = testbed.client_command(["curl", "-sS", "--max-time", "120", *args])
        return subprocess.run(cmd, capture_output=True, text=True, check=True)

    auth = curl("-i", "-H", f"X-Auth-User: {testbed.user}", "-H", f"X-Auth-Key: {testbed.key}",
                testbed.auth_url).stdout  # fmt: skip
    headers = dict(
        line.split(": ", 1) for line in auth.replace("\r", "").splitlines() if ": " in line
    )
    token, url = headers["X-Auth-Token"], headers["X-Storage-Url"]
    assert url.startswith("http://198.18.0.2:")
    h = ["-H", f"X-Auth-Token: {token}", "-w", "%{http_code}", "-o", "/dev/null"]
    assert curl(*h, "-X", "PUT", f"{url}/tb").stdout in ("201", "202")
    body = "hello from the client node\n" * 1000
    put = curl(*h, "-X", "PUT", "-H", "X-DSS-Object-Class: 25", "--data-binary", body,
               f"{url}/tb/obj")  # fmt: skip
    assert put.stdout == "201"
    got = curl("-H", f"X-Auth-Token: {token}", f"{url}/tb/obj")
    assert got.stdout == body
    listing = json.loads(curl("-H", f"X-Auth-Token: {token}", f"{url}/tb?format=json").stdout)
    assert [o["name"] for o in listing] == ["obj"]
    # The testbed times every PUT's steps: the proxy's line and one per replica, on one
    # clock, in the order a PUT crosses them.
    puts = put_waits.joined(testbed.dir)
    (timed,) = [p for p in puts if p.proxy["path"].endswith("/tb/obj")]
    assert len(timed.replicas) == 3 and timed.proxy["bytes"] == len(body)
    end = timed.proxy["start"] + timed.proxy["done"]
    for rep in timed.replicas:
        assert rep["bytes"] == len(body) and rep["txn"] == timed.proxy["txn"]
        # Every replica asked for the body (100-continue) before the proxy read the client's.
        assert (
            timed.proxy["start"]
            < rep["start"] + rep["ready"]
            < timed.proxy["start"] + timed.proxy["ready"]
        )
        assert 0 < rep["ready"] <= rep["body"] <= rep["body_end"] <= rep["done"]
        assert rep["start"] + rep["done"] <= end
        # Its container update, timed by the container server it reached, falls within it.
        update = timed.update_of(rep)
        assert update is not None and update["path"].endswith("/tb/obj")
        assert rep["start"] + rep["body_end"] < update["start"]
        assert update["start"] + update["done"] < rep["start"] + rep["done"]
