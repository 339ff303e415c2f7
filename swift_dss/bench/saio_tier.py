"""The cost of the tier under Swift: the all-in-one cluster on dss-tier mounts against the
same cluster on plain directories, measured side by side.

Both clusters run the dss pipeline and object server with dssio on `auto`, so the only
difference is the device: ours is a dss-tier mount in mode ssd (every class pinned on the
SSD directory, device models off, so no class is ever bypassed or written back and the
figure is the tier's data path alone), the baseline a directory on a tmpfs. `run_hdd`
mounts in mode hdd instead, where the kernel serves object data from the HDD directory
itself (passthrough) and the daemon sees only the namespace and metadata. Both object
servers get the settings tier nodes get (swift_dss/deploy/object_tuning.py). Both clusters are up at
once and the rounds alternate between them, as in `dss bench overhead`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from swift_dss.bench.overhead import compare
from swift_dss.bench.report import Figure
from swift_dss.deploy.object_tuning import TIER_OBJECT_OPTIONS
from swift_dss.deploy.saio import SaioConfig


def run(out: Path, rounds: int = 15, progress: Callable[[str], None] = print) -> list[Figure]:
    return _against_plain("ssd", out, rounds, progress)


def run_hdd(out: Path, rounds: int = 15, progress: Callable[[str], None] = print) -> list[Figure]:
    """Mode hdd, where the kernel serves the objects' data itself (passthrough)."""
    return _against_plain("hdd", out, rounds, progress)


def _against_plain(
    mode: str, out: Path, rounds: int, progress: Callable[[str], None]
) -> list[Figure]:
    return compare(
        SaioConfig(
            dir=out / "tier",
            port=0,
            tier_mode=mode,
            tier_ssd_model="none",
            tier_hdd_model="none",
        ),
        # The same object-server settings as the tier cluster gets for its mounts: the
        # figure is the tier's cost, not that of a configuration.
        SaioConfig(
            dir=out / "plain", port=0, tier_mode=None, object_options=dict(TIER_OBJECT_OPTIONS)
        ),
        rounds,
        goal=0.95,
        progress=progress,
    )
