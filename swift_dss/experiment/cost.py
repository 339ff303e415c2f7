"""Cost efficiency in US$/GB/IOPS (the paper's Fig. 9).

A configuration's price per GB of stored data is what its devices cost per GB the data
needs: HDD only 0.15, SSD only 3.95, a cache of p (a fraction of the working set) in
front of the HDD 0.15 + p x 3.95. Dividing by the measured IOPS (successful requests per
second of the phase) gives $/GB/IOPS: lower is better. Each value is then divided by the
HDD-only value of the same phase, as the paper normalises its figure.
"""

from __future__ import annotations

from swift_dss.experiment.paper import HDD_PRICE_PER_GB, SSD_PRICE_PER_GB


def price_per_gb(mode: str, cache_fraction: float | None) -> float:
    if mode == "hdd":
        return HDD_PRICE_PER_GB
    if mode == "ssd":
        return SSD_PRICE_PER_GB
    return HDD_PRICE_PER_GB + (cache_fraction or 0.0) * SSD_PRICE_PER_GB


def dollars_per_gb_per_iops(price: float, iops: float) -> float | None:
    return price / iops if iops > 0 else None


def normalised(entries: dict[str, dict], base_key: str, phases: tuple[str, ...]) -> None:
    """Adds ``cost_norm_<phase>`` to every entry: its $/GB/IOPS over BASE_KEY's."""
    base = entries.get(base_key, {})
    for entry in entries.values():
        for phase in phases:
            mine, ref = entry.get(f"cost_{phase}"), base.get(f"cost_{phase}")
            entry[f"cost_norm_{phase}"] = round(mine / ref, 3) if mine is not None and ref else None
