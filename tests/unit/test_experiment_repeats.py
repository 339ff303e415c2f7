"""Repeats of a configuration: means, Student t intervals, paired ratio intervals, and
figures of a dilated run read at the emulated testbed's speed."""

from __future__ import annotations

import pytest

from swift_dss.experiment import repeats
from swift_dss.experiment.summary import at_real_speed


def test_t_quantiles_and_interval() -> None:
    assert repeats.t975(2) == pytest.approx(12.706)
    assert repeats.t975(3) == pytest.approx(4.303)
    assert repeats.t975(100) == pytest.approx(1.96)
    with pytest.raises(ValueError):
        repeats.t975(1)
    mean, low, high = repeats.mean_ci([9.0, 10.0, 11.0])
    # s = 1, n = 3: half width 4.303 / sqrt(3).
    assert mean == 10.0
    assert (high - low) / 2 == pytest.approx(4.303 / 3**0.5)
    assert repeats.mean_ci([5.0]) == (5.0, 5.0, 5.0)
    assert repeats.mean_ci([]) is None


def entry(put: float, get: float, failures: int = 0) -> dict:
    return {"key": "x", "put_mbps": put, "get_mbps": get, "failures_all_phases": failures}


def test_combine_means_the_figures_and_keeps_each_repeat() -> None:
    got = repeats.combine([entry(10, 20, 1), entry(12, 22, 0), entry(14, 24, 2)])
    assert got["put_mbps"] == 12 and got["get_mbps"] == 22
    assert got["ci"]["put_mbps"][0] < 12 < got["ci"]["put_mbps"][1]
    assert [r["put_mbps"] for r in got["repeats"]] == [10, 12, 14]
    assert got["failures_all_phases"] == 3
    with pytest.raises(ValueError):
        repeats.combine([])


def test_ratio_interval_pairs_repeats_by_index() -> None:
    num = repeats.combine([entry(10, 1), entry(20, 1), entry(30, 1)])
    den = repeats.combine([entry(5, 1), entry(10, 1), entry(15, 1)])
    # Every pair's ratio is 2: the interval has no width, although each side varies.
    assert repeats.ratio_ci(num, den, "put_mbps") == [2.0, 2.0]
    assert repeats.ratio_ci(num, repeats.combine([entry(5, 1)]), "put_mbps") is None


def test_dilated_figures_are_read_at_testbed_speed() -> None:
    figs = {
        "put_mbps": 2.0,
        "get_ops_per_s": 10.0,
        "get_ttfb_ms": 400.0,
        "failure_rate": 0.1,
        "by_type": {"get VMDK": {"ops": 3, "rows": [{"mbps": 1.0, "ttfb_mean_ms": 80.0}]}},
    }
    got = at_real_speed(figs, 4)
    assert (got["put_mbps"], got["get_ops_per_s"], got["get_ttfb_ms"]) == (8.0, 40.0, 100.0)
    assert got["failure_rate"] == 0.1
    assert got["by_type"]["get VMDK"]["rows"] == [{"mbps": 4.0, "ttfb_mean_ms": 20.0}]
    assert got["by_type"]["get VMDK"]["ops"] == 3
    assert at_real_speed(figs, 1) is figs


def test_rate_scaled_bandwidths_are_read_at_the_full_object_sizes() -> None:
    figs = {"put_mbps": 2.0, "get_ops_per_s": 10.0, "get_ttfb_ms": 400.0}
    # A byte moved stands for ten of the full-size objects': bandwidth x K / 0.1; request
    # rates and times are the dilation's alone.
    got = at_real_speed(figs, 4, rate_scale=0.1)
    assert (got["put_mbps"], got["get_ops_per_s"], got["get_ttfb_ms"]) == (80.0, 40.0, 100.0)
    assert at_real_speed(figs, 1, rate_scale=0.5)["put_mbps"] == 4.0
