"""Per-phase utilisation of the emulated testbed: CPU per node, links against their rates,
and the CPU-bound flag, from samples built by hand."""

from __future__ import annotations

import os
import time

import pytest

from swift_dss.testbed import utilisation as u


def sample(at: float, nodes: dict, busy: float, total: float, links: dict) -> u.Sample:
    return u.Sample(at, nodes, busy, total, links)


RATES = {"s1": 8_000_000, "client": 80_000_000}  # 1 MB/s and 10 MB/s


def test_cpu_shares_and_link_utilisation_over_a_phase() -> None:
    a = sample(10.0, {"s1": {1: 5.0, 2: 1.0}, "proxy": {3: 0.0}}, 100, 400, {"s1": (0, 0)})
    b = sample(
        20.0,
        {"s1": {1: 8.0, 2: 2.0}, "proxy": {3: 4.0}},
        100 + 8,  # 8 of 20 core-seconds busy
        400 + 20,
        {"s1": (5_000_000, 9_000_000)},
    )
    got = u.usage(a, b, RATES, cores=2)
    assert got.node_cores == pytest.approx({"s1": 0.4, "proxy": 0.4})
    assert got.node_busiest == pytest.approx({"s1": 0.3, "proxy": 0.4})
    assert got.machine == pytest.approx(0.4)
    # The busier direction: 9 MB in 10 s on a 1 MB/s link.
    assert got.links["s1"] == pytest.approx(0.9)
    assert not got.cpu_bound
    assert got.bottleneck() == "s1"


def test_a_busy_machine_or_a_saturated_process_is_cpu_bound() -> None:
    a = sample(0.0, {"s1": {1: 0.0}}, 0, 0, {})
    busy = sample(10.0, {"s1": {1: 2.0}}, 16, 20, {})
    got = u.usage(a, busy, {}, cores=2)
    assert got.cpu_bound and got.bottleneck() == "cpu"
    assert "80%" in got.why[0]
    one_core = sample(10.0, {"s1": {1: 9.5}}, 10, 20, {})
    got = u.usage(a, one_core, {}, cores=2)
    assert got.cpu_bound
    assert got.why == ["a process of s1 used 0.95 of a core"]
    idle = sample(10.0, {"s1": {1: 1.0}}, 2, 20, {})
    assert u.usage(a, idle, {}, cores=2).bottleneck() == "devices"


def test_processes_that_come_or_go_within_the_phase_are_left_out() -> None:
    a = sample(0.0, {"s1": {1: 1.0, 2: 100.0}}, 0, 0, {})
    b = sample(10.0, {"s1": {1: 2.0, 3: 50.0}}, 1, 20, {})
    assert u.usage(a, b, {}, cores=2).node_cores["s1"] == pytest.approx(0.1)


def test_phases_pair_each_sample_with_the_next() -> None:
    s = [
        ("put", sample(0.0, {}, 0, 0, {})),
        ("get", sample(10.0, {}, 18, 20, {})),
        ("end", sample(20.0, {}, 20, 40, {})),
    ]
    got = u.phases(s, {}, cores=2)
    assert list(got) == ["put", "get"]
    assert got["put"]["cpu_bound"] and not got["get"]["cpu_bound"]
    assert u.cpu_bound_phases(got, ("put", "get", "delete")) == ["put"]


def test_machine_cpu_reads_proc_stat() -> None:
    tick = os.sysconf("SC_CLK_TCK")
    busy, total = u.machine_cpu("cpu  10 0 10 70 10 0 0 0 0 0\ncpu0 1 2 3\n")
    assert (busy * tick, total * tick) == pytest.approx((20, 100))
    busy, total = u.machine_cpu()
    assert 0 <= busy <= total


def test_own_process_and_loopback_are_readable() -> None:
    cpu = u.process_cpu_s([os.getpid(), 2**22 + 1])
    assert list(cpu) == [os.getpid()] and cpu[os.getpid()] > 0
    out, into = u.link_bytes("lo")
    assert out >= 0 and into >= 0


SNMP = """Ip: Forwarding DefaultTTL InReceives
Ip: 1 64 1000
Tcp: RtoAlgorithm RtoMin ActiveOpens RetransSegs InErrs
Tcp: 1 200 40 17 0
TcpExt: SyncookiesSent TCPTimeouts TCPLossProbes
TcpExt: 0 3 9
"""


def test_tcp_counters_are_read_by_group_and_name() -> None:
    assert u.parse_tcp_counters(SNMP) == {"retransmits": 17, "timeouts": 3}
    # A kernel without a counter leaves it out rather than reading another's value.
    assert u.parse_tcp_counters(SNMP.replace("TCPTimeouts", "TCPOther")) == {"retransmits": 17}
    assert u.parse_tcp_counters("") == {}


def test_a_phase_counts_what_its_tcp_counters_and_drops_added() -> None:
    start = {"s1": {"retransmits": 10, "timeouts": 1, "drops_out": 5, "drops_in": 0}}
    end = {"s1": {"retransmits": 25, "timeouts": 3, "drops_out": 9, "drops_in": 0}}
    a = u.Sample(0.0, {}, 0, 0, {}, start)
    b = u.Sample(10.0, {}, 0, 10, {}, {**end, "s2": {"retransmits": 4}})
    got = u.usage(a, b, RATES, cores=2)
    # s2 was not sampled at the start: what it added is not known.
    assert got.net == {"s1": {"retransmits": 15, "timeouts": 2, "drops_out": 4, "drops_in": 0}}
    assert got.to_json()["tcp"] == got.net
    # Samples without the counters (the all-in-one cluster) record none.
    bare = u.usage(u.Sample(0.0, {}, 0, 0, {}), u.Sample(1.0, {}, 0, 1, {}), RATES, 2)
    assert "tcp" not in bare.to_json()


def test_windows_use_only_the_samples_inside_each_span() -> None:
    # One sample a second; the link carries 1 MB/s until t=5, then 0.25 MB/s.
    taken = []
    for t in range(11):
        carried = 1_000_000 * min(t, 5) + 250_000 * max(t - 5, 0)
        taken.append((100.0 + t, sample(float(t), {}, 0, t, {"s1": (carried, 0)})))
    got = u.windows(taken, {"put": (100.0, 105.0), "get": (105.5, 110.0)}, RATES, cores=2)
    assert got["put"]["links"]["s1"] == pytest.approx(1.0)
    # GET's span starts between samples: its first is at 106, not the 105 of PUT's end.
    assert got["get"]["links"]["s1"] == pytest.approx(0.25)
    assert got["get"]["seconds"] == pytest.approx(4.0)
    # A span with one sample or none cannot be measured and is left out.
    assert "short" not in u.windows(taken, {"short": (103.5, 104.2)}, RATES, cores=2)


def test_sampler_samples_until_its_block_ends_and_survives_a_failed_sample() -> None:
    calls = []

    def take() -> u.Sample:
        calls.append(1)
        if len(calls) == 2:
            raise OSError("a link went away")
        return sample(float(len(calls)), {}, 0, 0, {})

    with u.Sampler(take, every=0.01) as sampler:
        while len(calls) < 5:
            time.sleep(0.001)
    ended = len(calls)
    assert [s.at for _, s in sampler.taken][:3] == [1.0, 3.0, 4.0]
    walls = [at for at, _ in sampler.taken]
    assert walls == sorted(walls)
    assert len(calls) == ended  # the thread has stopped
