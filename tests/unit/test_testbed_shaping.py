"""The testbed's topology and the tc command lines built for it (no tc is run here), its
settings and what they put into the generated Swift configs."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from swift_dss.deploy.generate import NodePaths, proxy_configs, storage_configs
from swift_dss.deploy.local_cluster import LocalCluster
from swift_dss.deploy.local_cluster_config import ClusterError, LocalClusterConfig
from swift_dss.deploy.netns import Network
from swift_dss.experiment.link_notes import queue_lines
from swift_dss.testbed import netexec, shaping
from swift_dss.testbed.settings import TestbedError, TestbedSettings
from swift_dss.testbed.shaping import Link, ShapingError


@pytest.mark.parametrize(
    ("text", "bits"),
    [("10gbit", 10**10), ("1gbit", 10**9), ("117mbit", 117 * 10**6), ("1.5Mbit", 1_500_000),
     (" 64kbit ", 64_000), ("8000bit", 8000)],
)  # fmt: skip
def test_rates_parse_in_tc_units(text: str, bits: int) -> None:
    assert shaping.parse_rate(text) == bits


@pytest.mark.parametrize("text", ["", "1", "1gb", "1 gbps", "-1gbit", "fast", "999bit", "0mbit"])
def test_bad_rates_are_refused(text: str) -> None:
    with pytest.raises(ShapingError, match="link rate"):
        shaping.parse_rate(text)


@pytest.mark.parametrize("text", ["9" * 400 + "gbit", "9" * 400 + ".5bit", "147573952590gbit"])
def test_rates_beyond_what_tc_takes_are_refused(text: str) -> None:
    # float() read hundreds of digits as infinity, and round() crashed on it.
    with pytest.raises(
        ShapingError, match=r"^link rate '[\w.]{1,20}\u2026?' is too large \(tc takes"
    ):
        shaping.parse_rate(text)
    assert shaping.parse_rate("147573952589gbit") == 147_573_952_589 * 10**9


def test_format_rate() -> None:
    assert shaping.format_rate(10**9) == "1gbit"
    assert shaping.format_rate(125 * 10**6) == "125mbit"
    assert shaping.format_rate(333_333_333) == "333.333mbit"


def test_burst_holds_a_few_frames_a_gso_packet_or_a_millisecond() -> None:
    assert shaping.burst_bytes(10**7) == 4 * 1538  # 1 ms would be 1,250 bytes
    assert shaping.burst_bytes(10**8) == 12_500  # 1 ms of 100 Mbit/s
    assert shaping.burst_bytes(10**8, "gso") == 128 * 1024
    for burst in shaping.MIN_BURSTS:
        assert shaping.burst_bytes(10**10, burst) == 1_250_000  # 1 ms of 10 Gbit/s


def test_a_link_is_shaped_at_both_ends() -> None:
    link = Link("s1", "dss-abc123-s1", "dssabc123s1", 10**9)
    into, out = shaping.commands(link)
    spec = ["tbf", "rate", "1000000000bit", "burst", "125000", "latency", "20ms",
            "overhead", "24"]  # fmt: skip
    assert into == ["tc", "qdisc", "replace", "dev", "dssabc123s1", "root", *spec]
    assert out == ["tc", "-n", "dss-abc123-s1", "qdisc", "replace", "dev", "eth0", "root", *spec]


def test_topology_of_the_paper_dilated() -> None:
    net = Network("abc123")
    links = net.testbed_links(TestbedSettings(dilation=10), 4)
    assert [(x.name, x.namespace, x.outer, x.rate) for x in links] == [
        ("client", "dss-abc123-client", "dssabc123c", 10**9),
        ("proxy", "dss-abc123-proxy", "dssabc123p", 10**9),
        ("s1", "dss-abc123-s1", "dssabc123s1", 10**8),
        ("s2", "dss-abc123-s2", "dssabc123s2", 10**8),
        ("s3", "dss-abc123-s3", "dssabc123s3", 10**8),
        ("s4", "dss-abc123-s4", "dssabc123s4", 10**8),
    ]
    # Every interface name fits the kernel's 15 characters, and none repeats.
    names = [x.outer for x in links]
    assert len(set(names)) == len(names) and max(map(len, names)) <= 15
    assert Network.role_address("proxy") == "198.18.0.2"
    assert Network.role_address("client") == "198.18.0.3"


def test_the_links_queue_is_the_emulated_ones_dilated() -> None:
    net = Network("abc123")
    default = net.testbed_links(TestbedSettings(dilation=2), 1)
    assert {x.queue_ms for x in default} == {6}
    longer = net.testbed_links(TestbedSettings(dilation=4, link_queue_ms=50), 1)
    assert {x.queue_ms for x in longer} == {200}
    into, out = shaping.commands(longer[-1])
    assert into[into.index("latency") + 1] == out[out.index("latency") + 1] == "200ms"


def test_a_full_queue_holds_the_set_queue_plus_the_burst() -> None:
    # 100 Mbit/s: 128 KiB of burst drain in 10.5 ms, as much again as a 10 ms queue; four
    # frames would take 0.5 ms, but a millisecond of the rate is more.
    assert shaping.full_queue_seconds(10**8, 10, "gso") == pytest.approx(0.01 + 131072 * 8 / 1e8)
    assert shaping.full_queue_seconds(10**8, 10) == pytest.approx(0.011)
    # 10 Mbit/s: four frames, 4.9 ms.
    assert shaping.full_queue_seconds(10**7, 10) == pytest.approx(0.01 + 6152 * 8 / 1e7)
    # 10 Gbit/s: a millisecond of burst, whichever minimum.
    assert shaping.full_queue_seconds(10**10, 10, "gso") == pytest.approx(0.011)
    # In emulated time the large burst's share does not depend on K, only on the scaled
    # rate; the small one is at most a millisecond of the real rate, 1/K ms emulated.
    for k in (2, 8):
        gso = TestbedSettings(dilation=k, rate_scale=0.1, link_burst="gso", link_queue_ms=10)
        assert gso.full_link_queue_ms("s1") == pytest.approx(20.49, abs=0.01)
        assert gso.full_link_queue_ms("client") == pytest.approx(11.05, abs=0.01)
        frames = TestbedSettings(dilation=k, rate_scale=0.1, link_queue_ms=10)
        assert frames.full_link_queue_ms("s1") == pytest.approx(10.5, abs=0.01)
        assert 10 < frames.full_link_queue_ms("client") <= 10.5
    assert TestbedSettings(dilation=4, link_queue_ms=10).full_link_queue_ms("s1") == pytest.approx(
        10.25
    )
    # The reports say so; a run that recorded no queue setting gets no line, and one that
    # recorded no burst had the large one.
    settings = dataclasses.asdict(TestbedSettings(dilation=8, rate_scale=0.1, link_queue_ms=10))
    (line,) = queue_lines(settings)
    assert "holds 10.5 ms" in line and "10.1 on the client's" in line and "frames" in line
    del settings["link_burst"]
    (line,) = queue_lines(settings)
    assert "holds 20.5 ms" in line and "11.0 on the client's" in line and "gso, 128 KiB" in line
    assert queue_lines({"dilation": 8}) == []


def test_the_links_burst_is_a_setting() -> None:
    net = Network("abc123")
    links = net.testbed_links(TestbedSettings(dilation=8, rate_scale=0.1, link_burst="gso"), 1)
    assert {x.burst for x in links} == {"gso"}
    into, _ = shaping.commands(links[-1])
    assert into[into.index("burst") + 1] == "131072"
    with pytest.raises(TestbedError, match="link_burst must be one of frames, gso, not 'tiny'"):
        TestbedSettings(link_burst="tiny").validate()


def test_settings_dilate_timeouts_and_models() -> None:
    tb = TestbedSettings(dilation=4, storage_rate="500mbit")
    assert tb.link_rate("s2") == 125 * 10**6
    assert tb.link_rate("client") == 2_500_000_000
    assert tb.proxy_options() == {
        "conn_timeout": "2",
        "node_timeout": "40",
        "client_timeout": "240",
        "recoverable_node_timeout": "40",
        "post_quorum_timeout": "2",
        "error_suppression_interval": "240",
        "recheck_account_existence": "240",
        "recheck_container_existence": "240",
        "error_suppression_limit": "10",
    }
    # A count, not a time: the dilation leaves it.
    assert (
        TestbedSettings(dilation=4, error_limit=0).proxy_options()["error_suppression_limit"] == "0"
    )
    assert tb.object_options() == {
        "conn_timeout": "2",
        "node_timeout": "40",
        "client_timeout": "240",
        "container_update_timeout": "4",
    }
    assert tb.models() == ("intel710:dilation=4", "st1000nm0011:dilation=4")
    # The paper's 32 workers' memcache pools (2 connections each) over our 2 workers.
    assert tb.memcache_options() == {
        "memcache_max_connections": "32",
        "connect_timeout": "1.2",
        "pool_timeout": "4",
        "io_timeout": "8",
    }
    assert TestbedSettings(proxy_workers=3).memcache_options()["memcache_max_connections"] == "22"


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"dilation": 0}, "dilation factor"),
        ({"storage_rate": "1gb"}, "link rate"),
        ({"proxy_workers": 0}, "proxy_workers"),
        ({"server_workers": 65}, "server_workers"),
        ({"conn_timeout": 0}, "conn_timeout"),
        ({"ssd_model": "intel710:dilation=3"}, "sets dilation"),
        ({"rate_scale": 0}, "rate_scale"),
        ({"rate_scale": 1.5}, "rate_scale"),
        ({"rate_scale": True}, "rate_scale"),
        ({"rate_scale": 0.1, "hdd_model": "hdd:rate_scale=0.5"}, "sets rate_scale"),
        ({"meta_memory": "lots"}, "metadata memory"),
        ({"meta_memory": "1.5GiB"}, "metadata memory"),
        ({"link_queue_ms": 0}, "link_queue_ms"),
        ({"link_queue_ms": 20_000}, "link_queue_ms"),
        ({"link_queue_ms": "long"}, "link_queue_ms"),
        ({"tcp_congestion": "CUBIC"}, "tcp_congestion"),
        ({"tcp_congestion": "cubic; reboot"}, "tcp_congestion"),
        ({"tcp_congestion": None}, "tcp_congestion"),
        ({"error_limit": -1}, "error_limit"),
        ({"error_limit": 10**10}, "error_limit"),
        ({"error_limit": "10"}, "error_limit"),
        ({"error_limit": True}, "error_limit"),
    ],
)
def test_bad_settings_are_refused(change: dict[str, object], reason: str) -> None:
    with pytest.raises(TestbedError, match=reason):
        TestbedSettings(**change).validate()  # type: ignore[arg-type]
    cfg = LocalClusterConfig(dir=Path("/tmp/x"), testbed=TestbedSettings(**change))  # type: ignore[arg-type]
    with pytest.raises(ClusterError, match=f"testbed: .*{reason}"):
        cfg.validate()


def test_rate_scale_multiplies_links_and_device_rates_before_dilation() -> None:
    tb = TestbedSettings(dilation=4, rate_scale=0.1, hdd_model="st1000nm0011:pagecache=64MiB")
    assert tb.link_rate("s1") == 25 * 10**6  # 1 Gbit/s x 0.1 / 4
    assert tb.link_rate("proxy") == 250 * 10**6
    assert tb.models() == (
        "intel710:rate_scale=0.1,dilation=4",
        "st1000nm0011:pagecache=64MiB,rate_scale=0.1,dilation=4",
    )
    # Timeouts are times, not rates: the dilation alone stretches them.
    assert tb.proxy_options() == TestbedSettings(dilation=4).proxy_options()
    # A real device has no model to scale.
    assert TestbedSettings(rate_scale=0.5, ssd_model="none").models()[0] == "none"


def test_settings_survive_the_state_file() -> None:
    cfg = LocalClusterConfig(dir=Path("/tmp/x"), testbed=TestbedSettings(dilation=3))
    back = LocalClusterConfig.from_json(cfg.to_json())
    assert back.testbed == TestbedSettings(dilation=3)
    assert back.tier_config().tier_hdd_model == "st1000nm0011:dilation=3"
    # The nodes' metadata memory is the testbed's, neither dilated nor rate-scaled.
    assert back.tier_config().tier_options().meta_memory == "24GiB"
    plain = LocalClusterConfig(dir=Path("/x"), tier_meta_memory="1GiB")
    assert plain.tier_config().tier_options().meta_memory == "1GiB"
    assert (
        LocalClusterConfig.from_json(LocalClusterConfig(dir=Path("/x")).to_json()).testbed is None
    )


def _cluster(testbed: TestbedSettings | None) -> LocalCluster:
    state = {"hash_prefix": "p", "hash_suffix": "s", "memcached_port": 11311, "proxy_port": 8090}
    return LocalCluster(LocalClusterConfig(dir=Path("/tmp/tb"), testbed=testbed), state)


def test_testbed_configs_carry_workers_timeouts_and_the_proxy_address() -> None:
    inv = _cluster(TestbedSettings(dilation=2, proxy_workers=3, server_workers=2)).inventory()
    paths = NodePaths("/etc/swift", "/srv/node")
    proxy = proxy_configs(inv, inv.proxies[0], paths)["proxy-server.conf"]
    assert "bind_ip = 198.18.0.2\n" in proxy
    assert "workers = 3\n" in proxy
    assert "conn_timeout = 1\n" in proxy and "node_timeout = 20\n" in proxy
    obj = storage_configs(inv, inv.storage[0], paths)["object-server.conf"]
    assert "workers = 2\n" in obj and "conn_timeout = 1\n" in obj
    # The paper's layout: three replicas, each storage node (one device) its own zone.
    assert inv.cluster.replicas == 3
    assert [n.zone for n in inv.storage] == [1, 2, 3, 4]


def test_without_the_testbed_the_configs_are_as_before() -> None:
    cluster = _cluster(None)
    inv = cluster.inventory()
    proxy = proxy_configs(inv, inv.proxies[0], NodePaths("/etc/swift", "/srv/node"))
    text = proxy["proxy-server.conf"]
    assert "bind_ip = 127.0.0.1\n" in text and "workers = 1\n" in text
    assert "conn_timeout" not in text
    assert cluster.proxy_url == "http://127.0.0.1:8090"
    assert cluster.links() == []
    with pytest.raises(ClusterError, match="--testbed"):
        cluster.client_command(["true"])


def test_client_commands_run_in_the_client_namespace() -> None:
    cluster = _cluster(TestbedSettings())
    ns = cluster.client_namespace
    assert ns == f"dss-{cluster.net.tag}-client"
    assert cluster.client_command(["curl", "x"]) == ["ip", "netns", "exec", ns, "curl", "x"]
    cmd = netexec.python_command(ns, "m:f", 1, "a")
    assert cmd[:4] == ["ip", "netns", "exec", ns]
    assert cmd[5:] == ["-m", "swift_dss.testbed.netexec", "m:f", '[1, "a"]']


def test_tcps_minimum_rto_is_dilated_or_left_to_the_kernel() -> None:
    assert TestbedSettings(dilation=8).rto_min_us() == 1_600_000
    assert TestbedSettings(dilation=2, tcp_rto_min_ms=50).rto_min_us() == 100_000
    assert TestbedSettings(dilation=8, tcp_rto_min_ms=0).rto_min_us() is None
    for bad in (-1, 10_001, True, "200"):
        with pytest.raises(TestbedError, match="tcp_rto_min_ms must be 0"):
            TestbedSettings(tcp_rto_min_ms=bad).validate()  # type: ignore[arg-type]
    # The reports say which: a run from before the setting had the kernel's.
    settings = dataclasses.asdict(TestbedSettings(dilation=8, rate_scale=0.1))
    (line,) = queue_lines(settings)
    assert "200 ms of emulated time (1600 ms real)" in line
    del settings["tcp_rto_min_ms"]
    (line,) = queue_lines(settings)
    assert "the kernel's 200 ms of real time, 25 ms of emulated time" in line
