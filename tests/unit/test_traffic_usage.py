"""The traffic study's per-phase utilisation: the span all four streams share, and the
report's table of it."""

from __future__ import annotations

import pytest

from swift_dss.experiment import traffic
from swift_dss.experiment.traffic_report import usage_table


def test_a_phase_spans_the_time_every_stream_was_in_it() -> None:
    streams = [
        {"spans": {"put": [10.0, 250.0], "get": [251.0, 490.0]}},
        {"spans": {"put": [10.2, 262.0], "get": [262.5, 495.0]}},
        {"spans": {"put": [10.1, 249.0]}},  # this one's GET phase recorded nothing
    ]
    assert traffic.common_spans(streams) == {"put": (10.2, 249.0), "get": (262.5, 490.0)}
    # Streams that never overlapped in a phase give it no span; records without spans none.
    apart = [{"spans": {"get": [0.0, 5.0]}}, {"spans": {"get": [6.0, 9.0]}}]
    assert traffic.common_spans(apart) == {}
    assert traffic.common_spans([{}, {}]) == {}


def usage(machine: float, link: float, cpu_bound: bool = False) -> dict:
    return {
        "machine_cpu": machine,
        "busiest_process_cores": {"proxy": 0.5},
        "links": {"s1": link, "client": 0.1},
        "bottleneck": "s1" if link >= 0.8 else "devices",
        "cpu_bound": cpu_bound,
    }


def test_the_usage_table_gives_each_phase_then_the_whole_run() -> None:
    runs = [
        {"name": "none", "utilisation": {"run": usage(0.3, 0.4), "put": usage(0.4, 0.9)}},
        {"name": "+Files", "utilisation": {"run": usage(0.5, 0.5, cpu_bound=True)}},
        {"name": "+Video"},
    ]
    rows = usage_table({"runs": runs})[2:]
    assert rows == [
        "| none | PUT | 40% | proxy: 0.50 | s1: 90% | s1 |",
        "| none | whole run | 30% | proxy: 0.50 | s1: 40% | devices |",
        "| +Files | whole run | 50% | proxy: 0.50 | s1: 50% | **cpu** |",
    ]


def test_a_phase_is_sampled_about_twenty_times_within_bounds() -> None:
    opts = traffic.TrafficOptions(duration=240)
    from swift_dss.experiment import scale

    base = scale.paper_workload(scale.Scale())
    assert traffic.sample_every(traffic.stream_workload(base, "Files", opts, 0)) == 5.0
    short = traffic.TrafficOptions(duration=40)
    assert traffic.sample_every(traffic.stream_workload(base, "Files", short, 0)) == 2.0
    tiny = traffic.TrafficOptions(duration=3)
    assert traffic.sample_every(traffic.stream_workload(base, "Files", tiny, 0)) == 0.5


def test_what_the_storage_links_carried_counts_each_replica_once() -> None:
    from swift_dss.experiment.traffic_report import links_carried

    setup = {
        "scale": {"replicas": 3},
        "testbed": {"kind": "netns", "settings": {"storage_rate": "1gbit"}},
    }
    links = {"client": 0.9, "proxy": 0.9, "s1": 0.5, "s2": 0.5, "s3": 0.5, "s4": 0.5}
    run = {"utilisation": {"put": {"links": links}, "get": {"links": links}}}
    # Two links' worth of 1 Gbit/s (125 MB/s) at 1448 payload bytes per 1514-byte frame.
    both = 2 * 125 * 1448 / 1514
    assert links_carried(run, setup, "put") == pytest.approx(both / 3)
    assert links_carried(run, setup, "get") == pytest.approx(both)
    assert links_carried({}, setup, "put") is None
    assert links_carried(run, {"scale": {"replicas": 3}}, "put") is None  # all-in-one
