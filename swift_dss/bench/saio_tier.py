"""The cost of the tier under Swift: the all-in-one cluster on dss-tier mounts against the
same cluster on plain directories, measured side by side.

Both clusters run the dss pipeline and object server with dssio on `auto`, so the only
difference is the device: ours is a dss-tier mount in mode ssd (every class pinned on the
SSD directory, device models off, so no class is ever bypassed or written back and the
figure is the tier's data path alone), the baseline a directory on a tmpfs. Both object
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
    return compare(
        SaioConfig(
            dir=out / "tier",
            port=0,
            tier_mode="ssd",
            tier_ssd_model="none",
            tier_hdd_model="none",
        ),
        # The same object-server settings as the tier cluster gets for its mounts: the
        # figure is the tier's cost, not that of a configuration.
        SaioConfig(
            dir=out / "plain", port=0, tier_mode=None, object_options=dict(TIER_OBJECT_OPTIONS)
        ),
        rounds,
        goal=0.85,
        progress=progress,
    )
