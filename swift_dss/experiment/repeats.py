"""A configuration run several times: its figures as means with 95% intervals, and the
headline ratios with theirs.

With three to ten repeats a bootstrap has too few distinct resamples to mean anything, so
the interval is Student's t over the repeats: mean +- t(0.975, n-1) s / sqrt(n). A ratio's
interval is taken over the per-repeat ratios, repeat i of one configuration against
repeat i of the other: the configurations of a repeat ran one after another in the same
stretch of the machine's load, so pairing them takes out what that load moved in both.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from typing import Any

from swift_dss.experiment import failures

#: t(0.975, df) for df = 1..30 (Student's t table); beyond, the normal 1.96 is within 2%.
_T975 = (
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
    2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
    2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
)  # fmt: skip

#: The figures that get a mean and an interval (each a number in every repeat's entry).
FIGURES = (
    "put_mbps",
    "get_mbps",
    "get_ttfb_ms",
    "put_latency_ms",
    "get_latency_ms",
    "put_p99_ms",
    "get_ttfb_p99_ms",
    "put_ops_per_s",
    "get_ops_per_s",
    "delete_ops_per_s",
    "failure_rate",
    "put_mbps_excl_vmdk",
    "get_mbps_excl_vmdk",
)


def t975(n: int) -> float:
    """The two-sided 95% Student t quantile for N observations (N - 1 degrees of freedom)."""
    if n < 2:
        raise ValueError("an interval needs at least two observations")
    return _T975[n - 2] if n - 1 <= len(_T975) else 1.96


def mean_ci(values: Sequence[float]) -> tuple[float, float, float] | None:
    """(mean, low, high) of VALUES at 95%; the interval collapses to the mean for one
    value; None for none."""
    vals = [float(v) for v in values if v is not None and not math.isnan(float(v))]
    if not vals:
        return None
    mean = statistics.fmean(vals)
    if len(vals) < 2:
        return mean, mean, mean
    half = t975(len(vals)) * statistics.stdev(vals) / math.sqrt(len(vals))
    return mean, mean - half, mean + half


def combine(entries: list[dict[str, Any]]) -> dict[str, Any]:
    """One configuration's repeats as one entry: the first repeat's fields, each figure
    replaced by its mean over the repeats, with "ci" (figure -> [low, high]) and "repeats"
    (each repeat's figures)."""
    if not entries:
        raise ValueError("no repeats to combine")
    out = dict(entries[0])
    out["repeats"] = [{k: e.get(k) for k in FIGURES} for e in entries]
    out["steady_uploads_per_run"] = [e.get("steady_uploads") for e in entries]
    out["ci"] = {}
    for key in FIGURES:
        got = mean_ci([e[key] for e in entries if e.get(key) is not None])
        if got is None:
            continue
        mean, low, high = got
        out[key] = round(mean, 5)
        out["ci"][key] = [round(low, 5), round(high, 5)]
    for key in ("failures_all_phases", "requests_all_phases", "put_failures", "get_failures"):
        if all(isinstance(e.get(key), int) for e in entries):
            out[key] = sum(e[key] for e in entries)
    out["failure_causes"] = failures.merged([e.get("failure_causes") or {} for e in entries])
    out["wall_s"] = round(sum(e.get("wall_s", 0) for e in entries), 1)
    out["cpu_bound_phases"] = sorted({p for e in entries for p in e.get("cpu_bound_phases", [])})
    return out


def ratio_ci(num: dict[str, Any], den: dict[str, Any], metric: str) -> list[float] | None:
    """95% interval of NUM's METRIC over DEN's, from their paired repeats; None with fewer
    than two pairs."""
    a = [r.get(metric) for r in num.get("repeats", [])]
    b = [r.get(metric) for r in den.get("repeats", [])]
    ratios = [x / y for x, y in zip(a, b, strict=False) if x is not None and y]
    if len(ratios) < 2:
        return None
    got = mean_ci(ratios)
    assert got is not None
    return [round(got[1], 4), round(got[2], 4)]
