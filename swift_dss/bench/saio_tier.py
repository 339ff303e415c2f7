"""The cost of the tier under Swift: the all-in-one cluster on dss-tier mounts against the
same cluster on plain directories, measured side by side.

Both clusters run the dss pipeline and object server with dssio on `auto`, so the only
difference is the device: ours is a dss-tier mount in mode ssd (every class pinned on the
SSD directory, device models off, so no class is ever bypassed or written back and the
figure is the tier's data path alone), the baseline a directory on a tmpfs. Both clusters
are up at once and the rounds alternate between them, as in `dss bench overhead`.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from pathlib import Path

from swift_dss.bench.overhead import SIZES, Target, _request, batch, run_round
from swift_dss.bench.report import Figure
from swift_dss.deploy.saio import Saio, SaioConfig

GOAL = 0.85


def measure(
    ours: Target,
    baseline: Target,
    rounds: int,
    progress: Callable[[str], None] = lambda _msg: None,
) -> list[Figure]:
    figures = []
    for label, size in SIZES.items():
        count = batch(size)
        data = bytes(range(256)) * (size // 256)
        for op in ("put", "get"):
            times: dict[str, list[float]] = {"ours": [], "baseline": []}
            for r in range(rounds):
                # Alternate who goes first so neither always runs on a warmer machine.
                order = (ours, baseline) if r % 2 == 0 else (baseline, ours)
                for target in order:
                    key = "ours" if target is ours else "baseline"
                    times[key].append(run_round(target, op, size, count, data))
                if (r + 1) % 5 == 0 or r + 1 == rounds:
                    progress(f"{op} {label}: round {r + 1}/{rounds}")
            unit = "ops/s" if size < 1 << 20 else "MB/s"
            scale = count if unit == "ops/s" else count * size / 1e6
            figures.append(
                Figure(
                    f"{op.upper()} {label}",
                    scale / statistics.median(times["ours"]),
                    scale / statistics.median(times["baseline"]),
                    unit,
                    goal=GOAL,
                )
            )
    return figures


def run(out: Path, rounds: int = 15, progress: Callable[[str], None] = print) -> list[Figure]:
    clusters = {
        "ours": Saio(
            SaioConfig(
                dir=out / "tier",
                port=0,
                tier_mode="ssd",
                tier_ssd_model="none",
                tier_hdd_model="none",
            )
        ),
        "baseline": Saio(SaioConfig(dir=out / "plain", port=0, tier_mode=None)),
    }
    try:
        for c in clusters.values():
            c.up()
        targets = {k: Target.connect(k, c) for k, c in clusters.items()}
        for t in targets.values():
            conn = t.conn()
            _request(conn, "PUT", f"{t.path}/bench", {"X-Auth-Token": t.token}, b"")
            conn.close()
        # One warm-up round each fills caches and creates the objects the GETs read.
        for t in targets.values():
            for size in SIZES.values():
                run_round(t, "put", size, batch(size), bytes(size))
        return measure(targets["ours"], targets["baseline"], rounds, progress)
    finally:
        for c in clusters.values():
            c.down()
