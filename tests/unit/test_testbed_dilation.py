"""Time dilation's arithmetic: rates divided by K, timeouts multiplied, model strings given
dss-tier's dilation parameter, factors outside 1..1000 refused."""

from __future__ import annotations

import math

import pytest

from swift_dss.testbed.dilation import Dilation, DilationError


def test_rates_are_divided_and_timeouts_multiplied() -> None:
    k = Dilation(10)
    assert k.rate(10**9) == 10**8
    assert k.rate(10 * 10**9) == 10**9
    assert k.timeout(0.5) == pytest.approx(5.0)
    assert k.timeout(10) == pytest.approx(100.0)
    # Measurements come back to the real testbed's scale.
    assert k.real_seconds(3.0) == pytest.approx(0.3)
    assert k.real_rate(12.0) == pytest.approx(120.0)


def test_factor_one_changes_nothing() -> None:
    k = Dilation()
    assert k.rate(10**9) == 10**9
    assert k.timeout(0.5) == 0.5
    assert k.model("intel710") == "intel710"


def test_rates_round_to_whole_bits() -> None:
    assert Dilation(3).rate(10**9) == 333_333_333
    assert Dilation(1000).rate(1) == 8  # never below a byte a second


@pytest.mark.parametrize(
    ("spec", "dilated"),
    [
        ("intel710", "intel710:dilation=4"),
        ("st1000nm0011", "st1000nm0011:dilation=4"),
        ("intel710:read_mbps=300", "intel710:read_mbps=300,dilation=4"),
        ("hdd:rpm=5400,seek_ms=12", "hdd:rpm=5400,seek_ms=12,dilation=4"),
        ("intel710:", "intel710:dilation=4"),
        ("none", "none"),  # a real device: nothing to slow down
    ],
)
def test_model_strings_get_the_dilation_parameter(spec: str, dilated: str) -> None:
    assert Dilation(4).model(spec) == dilated


@pytest.mark.parametrize("spec", ["intel710:dilation=2", ":read_mbps=1", ""])
def test_bad_model_strings_are_refused(spec: str) -> None:
    with pytest.raises(DilationError):
        Dilation(4).model(spec)


@pytest.mark.parametrize("k", [0, 0.5, 2.5, 2.0, -1, 1001, math.inf, math.nan, True, "10", None])
def test_invalid_factors_are_refused(k: object) -> None:
    with pytest.raises(DilationError, match="dilation factor"):
        Dilation(k)  # type: ignore[arg-type]


def test_non_positive_rate_is_refused() -> None:
    with pytest.raises(DilationError):
        Dilation(2).rate(0)
