"""`dss-tier fsck`: check an unmounted cache, or repair it (every dirty block written to
the HDD, the cache emptied)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from swift_dss.tierctl.binary import resolve


def fsck(
    ssd: Path, hdd: Path, repair: bool = False, binary: str | Path | None = None
) -> subprocess.CompletedProcess[str]:
    """The finished `dss-tier fsck` run, whatever its exit status (1: problems found)."""
    args = [resolve(binary), "fsck", "--ssd", str(ssd), "--hdd", str(hdd)]
    return subprocess.run(
        [*args, "--repair"] if repair else args, capture_output=True, text=True, check=False
    )
