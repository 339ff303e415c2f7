"""Cache content by object type (the paper's Fig. 8) from `dss-tier dump --json`.

Classes map back to object types through the workload's classes (Files 25, Picture 26, ...,
large objects 31); the tier's own classes (file-system metadata, Swift's databases, data
the tier classified by size because it arrived unclassified) are slices of their own.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from swift_dss.experiment.scale import LARGE
from swift_dss.loadgen.workload import Workload

METADATA = "FS metadata"
DATABASES = "Swift DBs"
UNCLASSIFIED = "other unclassified"


def class_names(w: Workload) -> dict[int, str]:
    names: dict[int, str] = {}
    for t in w.types:
        if t.cls is not None:
            names[t.cls] = t.name
    if w.large_class is not None:
        names[w.large_class] = LARGE
    return names


def slice_of(cls: int, names: dict[int, str]) -> str:
    if cls in names:
        return names[cls]
    if cls in (1, 2, 3, 4):
        return METADATA
    if cls in (5, 6):
        return DATABASES
    return UNCLASSIFIED


def by_type(dumps: dict[str, dict[str, Any]], w: Workload) -> dict[str, int]:
    """Cached bytes per slice, summed over the devices' dumps."""
    names = class_names(w)
    out: dict[str, int] = defaultdict(int)
    for dump in dumps.values():
        for cls, c in (dump.get("classes") or {}).items():
            out[slice_of(int(cls), names)] += int(c.get("cached_bytes", 0))
    return dict(out)


def shares(content: dict[str, int]) -> dict[str, float]:
    total = sum(content.values())
    return {k: round(v / total, 4) for k, v in content.items()} if total else {}


def class_totals(stats: dict[str, dict[str, Any]]) -> dict[str, dict[str, int]]:
    """Per-class counters of `dss-tier stats --json`, summed over devices."""
    out: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for doc in stats.values():
        for cls, c in (doc.get("classes") or {}).items():
            for k, v in c.items():
                if isinstance(v, int | float):
                    out[cls][k] += v
    return {k: dict(v) for k, v in out.items()}


def device_totals(stats: dict[str, dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Per-device-kind (ssd, hdd) counters summed over the Swift devices."""
    out: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for doc in stats.values():
        for dev, d in (doc.get("devices") or {}).items():
            for k, v in d.items():
                if isinstance(v, int | float):
                    out[dev][k] += v
    return {k: dict(v) for k, v in out.items()}


def delta(after: dict[str, dict[str, float]], before: dict[str, dict[str, float]]) -> dict:
    return {
        dev: {k: round(v - before.get(dev, {}).get(k, 0), 3) for k, v in d.items()}
        for dev, d in after.items()
    }
