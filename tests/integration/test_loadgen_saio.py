"""The paper's workload, shrunk, against the all-in-one cluster over Swift and S3: every
phase runs without failures and the classes arrive at the storage (dssio record log)."""

from __future__ import annotations

import collections
import dataclasses
import json
from pathlib import Path

import pytest

from swift_dss.loadgen import runner
from swift_dss.loadgen.protocols import Credentials
from swift_dss.loadgen.workload import load

from .helpers import recorded

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("protocol", ["swift", "s3"])
def test_paper_workload_classes_reach_the_storage(saio: object, protocol: str) -> None:
    w = load("paper").with_options(
        scale=0.0002, count_scale=0.002, containers=3, concurrency=8, seed=7 + len(protocol)
    )
    w = dataclasses.replace(w, container_prefix=f"lg{protocol}")
    creds = Credentials(saio.user, saio.key)  # the S3 access key and secret are the same
    with recorded(saio.record_log) as ios:
        result = runner.run(w, saio.proxy_url, protocol, creds, verify=True)
    rows = [r for r in result.recorder.rows() if r["type"] is None]
    assert [r["op"] for r in rows] == ["create_container", "put", "get", "delete"]
    for r in rows:
        assert r["failures"] == 0, r
    put_bytes: collections.Counter[int] = collections.Counter()
    for r in result.recorder.rows():
        if r["op"] == "put" and r["type"] is not None:
            put_bytes[r["class"]] += r["bytes"]
    written: collections.Counter[int] = collections.Counter()
    for io in ios:
        if io.op == "write" and io.cls:
            written[io.cls] += io.length
    # Every class sent is stored with exactly the bytes sent under it.
    assert set(put_bytes) >= {25, 26}
    assert written == put_bytes


def test_sweep_against_s3api_writes_the_study_tables(saio: object, tmp_path: Path) -> None:
    from click.testing import CliRunner

    from swift_dss.cli import main

    res = CliRunner().invoke(
        main,
        ["loadgen", "sweep", "--endpoint", saio.proxy_url, "--protocol", "s3",
         "--parallelism", "1,2", "--sizes", "1KiB,32KiB", "--repetitions", "1",
         "--budget", "64KiB", "--max-requests", "8", "--class", "25", "--out", str(tmp_path)],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    doc = json.loads((tmp_path / "results.json").read_text())
    cells = {(r["op"], r["size"], r["parallelism"]) for r in doc["rows"]}
    assert cells == {(op, s, p) for op in ("put", "get") for s in (1024, 32768) for p in (1, 2)}
    for r in doc["rows"]:
        assert r["failures"] == 0 and r["mbps"] > 0 and r["lat_mean_ms"] > 0
        assert {"op", "size", "parallelism", "mbps", "lat_mean_ms", "cpu_pct"} <= set(r)
    assert "**" in (tmp_path / "tables.md").read_text()
    assert (tmp_path / "sweep_put.png").exists() and (tmp_path / "sweep_get.png").exists()
