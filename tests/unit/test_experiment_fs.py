"""The file-level workloads of `dss experiment fs` on a plain directory, and the report's
arithmetic against the paper's figures."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from swift_dss.experiment import fs, fs_load, fs_report
from swift_dss.experiment.cluster import ExperimentError


def test_pool_follows_the_size_table_and_the_directory_shape(tmp_path: Path) -> None:
    w = fs_load.WORKLOADS["sfs"]
    pool = fs_load.plan_pool(tmp_path, w, 300 / w.files, seed=3)
    assert len(pool.paths) == 300 and pool.dirs == 10
    sizes = {s for s in fs_load._sizes(w).buckets for s in [s.high]}
    assert set(pool.sizes) <= sizes, "SPECsfs sizes are the table's, exactly"
    assert pool.sizes == fs_load.plan_pool(tmp_path, w, 300 / w.files, seed=3).sizes
    assert pool.sizes != fs_load.plan_pool(tmp_path, w, 300 / w.files, seed=4).sizes
    assert len(fs_load.plan_pool(tmp_path, w, 1e-9, seed=3).paths) == 1


def test_setup_and_transactions_on_a_directory(tmp_path: Path) -> None:
    w = fs_load.WORKLOADS["email"]
    pool = fs_load.plan_pool(tmp_path / "pool", w, 1000 / w.files, seed=1)
    payload = fs_load.Payload(size=1 << 20)
    ticks: list[tuple[int, int]] = []
    setup = fs_load.populate(pool, w.request_size, 4, payload, lambda d, n: ticks.append((d, n)))
    assert [p.stat().st_size for p in pool.paths] == pool.sizes
    assert setup.bytes == pool.total_bytes and ticks[-1] == (1000, 1000)
    tx = fs_load.transactions(pool, w, 600, w.request_size, 4, payload, seed=2)
    reads = [o for o in tx.ops if o.op == "read"]
    creates = [o for o in tx.ops if o.op == "create"]
    assert len(reads) + len(creates) == 600
    assert 0.55 < len(reads) / 600 < 0.78, "reads:creates 2:1"
    made = [p for p in (tmp_path / "pool").rglob("n2-*")]
    assert sorted(p.stat().st_size for p in made) == sorted(o.size for o in creates)
    assert all(o.seconds >= 0 for o in tx.ops)


def test_utilities_run_the_real_tools(tmp_path: Path) -> None:
    w = fs_load.WORKLOADS["sfs"]
    pool = fs_load.plan_pool(tmp_path / "pool", w, 120 / w.files, seed=1)
    fs_load.populate(pool, w.request_size, 2, fs_load.Payload(size=1 << 20))
    for u in fs_load.UTILITIES:
        assert fs_load.run_utility(u.name, tmp_path, pool) >= 0
    archived = (tmp_path / "archive.tar").stat().st_size
    quarter = sum(
        s for p, s in zip(pool.paths, pool.sizes, strict=True) if p.parent.name == "d00000"
    )
    assert archived > quarter, "tar read a quarter of the directories (one of four here)"
    with pytest.raises(ValueError):
        fs_load.run_utility("fsck.ext4", tmp_path, pool)


def _run(workload: str, config: str, phases: dict[str, float], content: dict[str, float]) -> dict:
    return {
        "workload": workload,
        "config": config,
        "files": 10,
        "pool_bytes": 1 << 20,
        "cache_bytes": 1 << 20,
        "phases": {
            name: {
                "seconds": s,
                "ops": 0,
                "bytes": 0,
                "read_hit_ratio": 0.5,
                "write_back_share": 0.1,
                "hdd_busy_s": 1.0,
                "ssd_busy_s": 0.1,
                "latency_p95_ms": {"read": {"2048": 3.0 * s}},
            }
            for name, s in phases.items()
        },
        "content": content,
    }


def test_speedups_against_the_papers(tmp_path: Path) -> None:
    summary = {
        "options": {"ssd_model": "intel710", "hdd_model": "st1000nm0011", "cache_pct": 10,
                    "threads": 8},
        "count_scale": {"sfs": 0.005, "email": 0.002},
        "runs": [
            _run("sfs", "hdd", {"transactions": 100, "find": 9, "tar": 30, "scan": 8}, {}),
            _run("sfs", "lru", {"transactions": 90, "find": 8, "tar": 40, "scan": 12},
                 {"metadata": 0.01, "files > 256 KiB": 0.99}),
            _run("sfs", "dss", {"transactions": 45, "find": 2, "tar": 20, "scan": 2},
                 {"metadata": 0.2, "files <= 64 KiB": 0.3, "files > 256 KiB": 0.5}),
            _run("email", "lru", {"transactions": 50}, {}),
            _run("email", "dss", {"transactions": 25}, {}),
        ],
    }  # fmt: skip
    got = {s["what"]: s for s in fs_report.speedups(summary)}
    assert got["sfs: dss over lru"]["measured"] == pytest.approx(2.0)
    assert got["sfs: dss over lru"]["paper"] == pytest.approx(124 / 69)
    assert got["scan: dss over lru"]["paper"] == pytest.approx(562 / 94)
    assert got["find: lru over hdd"]["paper"] is None, "the paper ran no utility uncached"
    assert "email: lru over hdd" not in got, "no email run on the HDD"
    assert fs_report.email_2k_read_ms(summary) == {"lru": 150.0, "dss": 75.0}
    path = fs_report.write_report(tmp_path, summary)
    text = path.read_text()
    assert "| sfs: dss over lru | 2.00 | 1.80 |" in text
    assert "| sfs | dss | 20.0% | 30.0% | 50.0% |" in text
    assert (tmp_path / "fs.png").stat().st_size > 0 and (tmp_path / "content.png").exists()
    json.dumps(summary)


def test_cache_sizes_and_bad_options(tmp_path: Path) -> None:
    pool = fs_load.Pool(tmp_path, [tmp_path / "a"], [1000 << 20], 1)
    assert fs.cache_bytes_for("dss", pool, 10) == 100 << 20
    assert fs.cache_bytes_for("ssd", pool, 10) >= 3000 << 20
    assert fs.cache_bytes_for("lru", fs_load.Pool(tmp_path, [], [], 1), 10) == 16 << 20
    for bad in (
        fs.FsOptions(workloads=("tpcc",)),
        fs.FsOptions(configs=("raid",)),
        fs.FsOptions(configs=()),
        fs.FsOptions(cache_pct=0),
    ):
        with pytest.raises(ExperimentError):
            fs.check_options(bad)


def test_cli_refuses_bad_options_in_one_line(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from swift_dss.experiment.cli import experiment

    for args, said in (
        (["--configs", "hdd,raid"], "unknown workload or configuration: raid"),
        (["--workloads", "tpch,tpcc"], "unknown workload or configuration: tpcc"),
        (["--cache-pct", "0"], "Invalid value for '--cache-pct'"),
        (["--scale", "-1"], "Invalid value for '--scale'"),
        (["--threads", "0"], "Invalid value for '--threads'"),
        (["--configs", "hdd,dss,hdd"], "each configuration is named once: hdd, dss, hdd"),
    ):
        got = CliRunner().invoke(experiment, ["fs", "--out", str(tmp_path / "x"), *args])
        assert got.exit_code != 0, args
        assert said in got.output, got.output
    assert not (tmp_path / "x").exists(), "nothing was started"
