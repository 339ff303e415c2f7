"""The confidence intervals every side-by-side benchmark reports."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest

from swift_dss.bench.report import Figure, ratio_ci, write_report


def test_interval_holds_the_point_estimate_and_narrows_with_agreeing_rounds() -> None:
    ours = [0.90, 0.95, 0.93, 0.97, 0.91, 0.94, 0.96, 0.92]
    base = [1.0] * len(ours)
    low, high = ratio_ci(ours, base)
    point = statistics.median(ours)
    assert low <= point <= high
    assert low >= min(ours) and high <= max(ours)
    tight = ratio_ci([0.94] * 8, base)
    assert tight == pytest.approx((0.94, 0.94))
    assert high - low > 0.01


def test_rounds_are_resampled_in_pairs() -> None:
    # Each round's load moved both sides alike: the paired ratio is always exactly 0.5.
    base = [1.0, 3.0, 1.5, 9.0, 2.0, 4.0]
    ours = [b / 2 for b in base]
    assert ratio_ci(ours, base, stat=sum) == pytest.approx((0.5, 0.5))


def test_same_seed_same_interval() -> None:
    ours, base = [1.0, 2.0, 3.0, 4.0], [2.0, 2.5, 3.0, 1.0]
    assert ratio_ci(ours, base) == ratio_ci(ours, base)


@pytest.mark.parametrize("ours,base", [([], []), ([1.0], [1.0, 2.0])])
def test_unpaired_rounds_are_refused(ours: list[float], base: list[float]) -> None:
    with pytest.raises(ValueError, match="paired"):
        ratio_ci(ours, base)


def test_report_carries_the_interval(tmp_path: Path) -> None:
    figures = [
        Figure("GET", 95.0, 100.0, "ops/s", goal=0.97, ci=(0.9, 0.99)),
        Figure("x", 1, 1, "u"),
    ]
    path = write_report(tmp_path, "t", figures)
    data = json.loads(path.read_text())
    assert data[0]["ci"] == [0.9, 0.99] and data[0]["ratio"] == 0.95
    assert data[1]["ci"] is None
    assert (tmp_path / "bench.png").stat().st_size > 0


def test_resamples_with_nothing_to_divide_by_are_left_out() -> None:
    # CPU ticks: a round can show no CPU at all on one side.
    assert ratio_ci([1.0, 2.0], [0.0, 2.0], stat=sum) == pytest.approx((1.0, 1.5))
    low, high = ratio_ci([1.0], [0.0], stat=sum)
    assert low != low and high != high  # NaN: no interval to give


def test_chart_takes_a_ratio_outside_or_without_its_interval(tmp_path: Path) -> None:
    figures = [
        Figure("a", 1.0, 1.0, "u", ci=(1.0000001, 1.2)),
        Figure("b", 1.0, 2.0, "u", ci=(float("nan"), float("nan"))),
    ]
    write_report(tmp_path, "t", figures)
    assert (tmp_path / "bench.png").stat().st_size > 0
