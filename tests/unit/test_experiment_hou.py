"""The study's shapes computed from sweep results: ratios of the right cells, read up,
flat or down, and nothing where a cell is missing."""

from __future__ import annotations

from typing import Any

import pytest

from swift_dss.experiment import hou
from swift_dss.experiment.hou import KIB, MIB


def row(op: str, size: int, p: int, mbps: float, lat: float = 10.0, cpu: float = 5.0) -> dict:
    return {"op": op, "size": size, "parallelism": p, "mbps": mbps, "lat_mean_ms": lat,
            "cpu_pct": cpu}  # fmt: skip


def by_what(comparison: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {r["what"]: r for r in comparison["shapes"]}


def test_direction_reads_ratios_around_one() -> None:
    assert hou.direction(1.2) == "up"
    assert hou.direction(1.1) == "flat"
    assert hou.direction(0.9) == "flat"
    assert hou.direction(0.8) == "down"
    assert hou.direction(None) == "-"


def test_peak_gain_takes_the_best_parallelism_over_parallelism_one() -> None:
    doc = {"rows": [row("put", KIB, 1, 0.5), row("put", KIB, 16, 6.0), row("put", KIB, 64, 4.0)]}
    got = by_what(hou.compare({"baseline": doc}))["1 KiB PUT: peak bandwidth over parallelism 1's"]
    assert got["ours"] == pytest.approx(12.0)
    assert got["same_shape"] is True  # up, as the study's 27


def test_latency_ratio_and_a_shape_the_study_did_not_see() -> None:
    doc = {"rows": [row("put", 4 * KIB, 1, 1, lat=10), row("put", 4 * KIB, 16, 1, lat=40),
                    row("put", 4 * KIB, 64, 1, lat=160)]}  # fmt: skip
    got = by_what(hou.compare({"baseline": doc}))
    flat = got["4 KiB PUT latency, parallelism 16 over 1"]
    assert flat["ours"] == pytest.approx(4.0)
    assert flat["same_shape"] is False  # the study's latency stayed flat up to 16
    assert got["4 KiB PUT latency, parallelism 64 over 16"]["same_shape"] is True


def test_long_distance_ratios_need_both_cases() -> None:
    near = {"rows": [row("put", 4 * MIB, 4, 100.0), row("get", 4 * MIB, 8, 50.0)]}
    far = {"rows": [row("put", 4 * MIB, 16, 60.0), row("get", 4 * MIB, 64, 49.0)]}
    got = by_what(hou.compare({"baseline": near, "long-distance": far}))
    put = got["4 MiB PUT peak bandwidth, long distance over baseline"]
    assert put["ours"] == pytest.approx(0.6) and put["same_shape"] is False
    get = got["4 MiB GET peak bandwidth, long distance over baseline"]
    assert get["ours"] == pytest.approx(0.98) and get["same_shape"] is True
    alone = by_what(hou.compare({"baseline": near}))
    assert alone["4 MiB PUT peak bandwidth, long distance over baseline"]["ours"] is None


def test_missing_cells_and_failed_cells_give_no_ratio() -> None:
    doc = {"rows": [row("get", KIB, 4, 2.0), row("put", 16 * MIB, 4, 1, lat=float("nan")),
                    row("put", 16 * MIB, 64, 1, lat=100)]}  # fmt: skip
    comparison = hou.compare({"baseline": doc})
    got = by_what(comparison)
    assert got["1 KiB GET: peak bandwidth over parallelism 1's"]["ours"] is None
    assert got["16 MiB PUT latency, parallelism 64 over 4"]["ours"] is None
    assert comparison["measured"] == 0
    assert comparison["fig6"]["ours"] is None
    assert "0 of 0 measured" in "\n".join(hou.markdown(comparison))


def test_fig6_best_combination_of_four_mib_in_flight() -> None:
    doc = {"rows": [row("put", 64 * KIB, 64, 20.0), row("put", 256 * KIB, 16, 40.0),
                    row("put", MIB, 4, 30.0), row("put", 4 * MIB, 1, 10.0)]}  # fmt: skip
    fig6 = hou.compare({"baseline": doc})["fig6"]["ours"]
    assert fig6 == {"best": "256 KiB x 16", "best_over_worst": 4.0}
    assert "ours is 256 KiB x 16, 4 times the worst" in "\n".join(
        hou.markdown(hou.compare({"baseline": doc}))
    )
