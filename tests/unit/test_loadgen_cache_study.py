"""The cache emulator over a small synthetic trace against the local server."""

from __future__ import annotations

from pathlib import Path

import pytest

from swift_dss.loadgen.cache_study import StudyConfig, study, synthetic_trace
from swift_dss.loadgen.localserver import LocalServer
from swift_dss.loadgen.protocols import S3

KIB = 1024


def test_bigger_chunks_hit_more_and_prefetching_fetches_ahead(tmp_path: Path) -> None:
    sizes, trace = synthetic_trace(files=3, accesses=60, min_size=64 * KIB, max_size=512 * KIB,
                                   io_size=8 * KIB, seed=3)  # fmt: skip
    cfg = StudyConfig(chunk_sizes=(16 * KIB, 128 * KIB), cache_bytes=4 << 20, flush_every=25)
    with LocalServer(store=True) as srv:
        doc = study(S3(srv.url, "a", "b"), cfg, sizes, trace, tmp_path)
        left = dict(srv.state.objects)
    rows = {(r["chunk_size"], r["prefetch"]): r for r in doc["rows"]}
    assert len(rows) == 4
    for r in rows.values():
        assert r["failed_fetches"] == 0
        assert 0 <= r["read_hit_ratio"] <= 1
    small, large = rows[(16 * KIB, False)], rows[(128 * KIB, False)]
    # Sequential 8 KiB accesses: a 128 KiB chunk serves 16 of them per fetch, 16 KiB only 2.
    assert large["read_hit_ratio"] > small["read_hit_ratio"]
    assert rows[(16 * KIB, True)]["read_hit_ratio"] > small["read_hit_ratio"]
    assert rows[(16 * KIB, True)]["objects_fetched"] >= small["objects_fetched"]
    assert (tmp_path / "cache_study.png").exists()
    assert left == {}


def test_a_synthetic_trace_needs_files_of_some_size() -> None:
    with pytest.raises(ValueError, match="above 0 bytes"):
        synthetic_trace(max_size=0)
