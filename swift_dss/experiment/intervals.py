"""Which 95% interval a configuration's figures and the headline ratios get: over whole
runs when a configuration ran several times (repeats.py), over a single run's own
requests otherwise (bootstrap.py)."""

from __future__ import annotations

from typing import Any

from swift_dss.experiment import bootstrap
from swift_dss.experiment.repeats import FIGURES, combine, ratio_ci


def single_or_combined(
    found: list[dict[str, Any]], samples: dict[str, Any] | None
) -> dict[str, Any] | None:
    """A configuration's entry: several runs combined, with Student t intervals over them
    (`repeats`); one run with per-request bootstrap intervals (`bootstrap`) when its
    requests were kept; None for no run."""
    if not found:
        return None
    entry = combine(found)
    entry["ci_from"] = "repeats" if len(found) > 1 else None
    if len(found) == 1 and samples:
        entry["ci"] = bootstrap.figure_cis(entry, samples, FIGURES)
        entry["ci_from"] = "requests"
    return entry


def headline_ci(
    keyed: dict[str, dict[str, Any]],
    num: str,
    den: str,
    metric: str,
    measured: float | None,
    samples: dict[str, dict[str, Any]],
) -> list[float] | None:
    """NUM's METRIC over DEN's, 95%: over paired repeats where both were repeated, else by
    resampling the same requests from both runs (`bootstrap.ratio_ci`)."""
    a, b = keyed.get(num, {}), keyed.get(den, {})
    paired = ratio_ci(a, b, metric)
    if paired is not None or not a or not b:
        return paired
    return bootstrap.ratio_ci(
        measured, samples.get(a["measured_as"], {}), samples.get(b["measured_as"], {}), metric
    )
