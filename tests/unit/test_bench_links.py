"""The shapings `dss bench links` measures: the experiments' default link rates."""

from __future__ import annotations

from swift_dss.bench.links import bottleneck, settings_measured
from swift_dss.experiment.targets import CACHING_TESTBED, TRAFFIC_TESTBED


def test_the_bench_measures_each_experiments_default_rates() -> None:
    measured = dict(settings_measured())
    caching = measured[f"caching K={CACHING_TESTBED.dilation} x0.1 burst frames"]
    traffic = measured[f"traffic K={TRAFFIC_TESTBED.dilation} x0.1 burst frames"]
    # Each with both bursts, the rates the same.
    gso = measured[f"caching K={CACHING_TESTBED.dilation} x0.1 burst gso"]
    assert (caching.link_burst, gso.link_burst) == ("frames", "gso")
    assert gso.link_rate("s1") == caching.link_rate("s1")
    # 1 Gbit/s and 10 Gbit/s scaled as the objects (x0.1), then divided by K.
    assert caching.link_rate("s1") == 10**8 // CACHING_TESTBED.dilation
    assert caching.link_rate("proxy") == 10**9 // CACHING_TESTBED.dilation
    assert traffic.link_rate("s4") == 10**8 // TRAFFIC_TESTBED.dilation


def test_a_storage_nodes_transfer_is_bound_by_its_own_link() -> None:
    for _, settings in settings_measured():
        assert bottleneck(settings, "client>s2") == settings.link_rate("s2")
        assert bottleneck(settings, "s2>client") == settings.link_rate("s2")
        assert bottleneck(settings, "client>proxy") == settings.link_rate("proxy")


def test_every_shaping_has_its_own_label() -> None:
    labels = [label for label, _ in settings_measured()]
    assert len(labels) == len(set(labels)) == 6
