"""`dss bench tier-passthrough` on small sizes: both arms mount, every workload is measured
on each arm and on the baseline, and the goals sit on the passthrough arm only."""

from __future__ import annotations

from pathlib import Path

import pytest

from swift_dss.bench import tier as bench
from tests.integration.tier_helpers import _unusable


def test_passthrough_bench_measures_both_arms(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reason = _unusable()
    if reason:
        pytest.skip(reason)
    monkeypatch.setattr(bench, "FILE_SIZE", 8 * bench.MIB)
    monkeypatch.setattr(bench, "SMALL_OPS", 200)
    monkeypatch.setattr(bench, "LANDED_FILES", 100)
    figures = bench.run_passthrough(tmp_path, rounds=2, progress=lambda _m: None)
    names = [f.name for f in figures]
    assert names == [f"{w} ({arm})" for arm in ("passthrough", "daemon") for w in bench.WORKLOADS]
    for f in figures:
        assert f.ours > 0 and f.baseline > 0, f
        assert (f.goal is not None) == (f.name.endswith("(passthrough)") and "land" not in f.name)
    assert not any(bench.mounted(tmp_path / f"mnt{i}") for i in (0, 1)), "both unmounted"
