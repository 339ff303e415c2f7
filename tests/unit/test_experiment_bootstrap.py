"""Per-request bootstrap intervals of a single run: the requests the recorder keeps, the
intervals of a run's figures and of the ratio of two runs, and where the caching summary
uses them instead of the repeats' Student t intervals."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from swift_dss.experiment import bootstrap, intervals
from swift_dss.loadgen.stats import Recorder


def recorder_of(requests: list[tuple[str, int, float, float]], t0: float = 0.0) -> Recorder:
    """(op, bytes, ttfb s, latency s) per request, each in the phase named by its op."""
    rec = Recorder(t0)
    for op, nbytes, ttfb, lat in requests:
        rec.record((op, op, "Files", 25, "small"), "201", t0 + lat, ttfb, lat, nbytes)
    return rec


def test_recorder_keeps_each_successful_request_and_round_trips() -> None:
    rec = recorder_of([("put", 100, 0.01, 0.02), ("put", 300, 0.02, 0.04)])
    rec.record(("put", "put", "Files", 25, "small"), "503", 1.0, 0.1, 0.1, 999)
    other = recorder_of([("get", 50, 0.001, 0.003)])
    rec.merge(other)
    back = Recorder.from_json(json.loads(json.dumps(rec.to_json())))
    put = bootstrap.phase_requests(back, "put")
    # The failed PUT is counted in the cell but not kept as a sample.
    assert put.tolist() == [[100, 10_000, 20_000], [300, 20_000, 40_000]]
    assert bootstrap.phase_requests(back, "get").tolist() == [[50, 1_000, 3_000]]
    # A record written before requests were kept still loads, with none.
    old = rec.to_json()
    for _key, cell in old["cells"]:
        del cell["done"]
    assert len(bootstrap.phase_requests(Recorder.from_json(old), "put")) == 0


def matrix(rows: list[tuple[int, int, int]]) -> np.ndarray:
    return np.array(rows, dtype=np.float64)


def test_identical_requests_give_no_width_and_one_large_object_a_wide_interval() -> None:
    same = matrix([(1 << 20, 10_000, 50_000)] * 200)
    ci = bootstrap.figure_cis({"put_mbps": 20.0}, {"put": same}, ["put_mbps"])
    assert ci["put_mbps"] == [20.0, 20.0]
    # One object of 100 MiB among 199 of 1 MiB: which draws include it decides the figure.
    skewed = matrix([(1 << 20, 10_000, 50_000)] * 199 + [(100 << 20, 10_000, 2_000_000)])
    low, high = bootstrap.figure_cis({"put_mbps": 20.0}, {"put": skewed}, ["put_mbps"])["put_mbps"]
    assert low < 20.0 < high
    assert high / low > 1.5
    # Latency and request rate come from the same requests; a figure with no samples
    # (its phase absent) gets no interval.
    got = bootstrap.figure_cis(
        {"put_latency_ms": 60.0, "put_ops_per_s": 5.0, "get_mbps": 3.0},
        {"put": skewed},
        ["put_latency_ms", "put_ops_per_s", "get_mbps"],
    )
    assert got["put_latency_ms"][0] < 60.0 < got["put_latency_ms"][1]
    assert got["put_ops_per_s"][0] < 5.0 < got["put_ops_per_s"][1]
    assert "get_mbps" not in got


def test_the_interval_of_a_mean_covers_the_true_mean_about_95_percent_of_the_time() -> None:
    rng = np.random.default_rng(7)
    trials, covered = 120, 0
    for seed in range(trials):
        lat = rng.exponential(100_000, size=300)  # true mean 100 ms
        sample = np.stack([np.full(300, 4096.0), lat / 2, lat], axis=1)
        measured = float(lat.mean()) / 1000
        rel = bootstrap.relative_draws(sample, bootstrap.ESTIMATORS["put_latency_ms"][1], seed)
        low, high = measured * np.quantile(rel, [0.025, 0.975])
        covered += low <= 100.0 <= high
    assert 0.88 <= covered / trials <= 0.99


def test_ratio_interval_pairs_the_same_requests_of_two_runs() -> None:
    rng = np.random.default_rng(3)
    sizes = np.append(rng.integers(1 << 10, 1 << 20, size=199), 100 << 20).astype(float)
    lat = 20_000 + sizes / 50
    dss = np.stack([sizes, lat / 2, lat], axis=1)
    # The same requests, each three times as slow: which ones a resample draws (the large
    # object or not) moves both runs alike, and the ratio not at all.
    lru = dss * [1, 3, 3]
    assert bootstrap.ratio_ci(3.0, {"put": dss}, {"put": lru}, "put_mbps") == [3.0, 3.0]
    # Each request slowed by its own factor: an interval around the measured ratio.
    noisy = dss * np.stack([np.ones(200), *(2 * [rng.uniform(2, 4, size=200)])], axis=1)
    ci = bootstrap.ratio_ci(3.0, {"put": dss}, {"put": noisy}, "put_mbps")
    assert ci is not None and ci[0] < 3.0 < ci[1]
    # Runs of different plans share no request: resampled each on its own, the large
    # object decides both and the interval is far wider.
    other = lru * [1.0001, 1, 1]
    apart = bootstrap.ratio_ci(3.0, {"put": dss}, {"put": other}, "put_mbps")
    assert apart is not None and apart[1] - apart[0] > 10 * (ci[1] - ci[0])
    assert bootstrap.ratio_ci(3.0, {"put": dss}, {}, "put_mbps") is None
    assert bootstrap.ratio_ci(None, {"put": dss}, {"put": lru}, "put_mbps") is None
    assert bootstrap.ratio_ci(3.0, {"put": dss}, {"put": lru}, "failure_rate") is None


def test_requests_match_on_their_objects_and_failed_ones_drop_out() -> None:
    a = matrix([(300, 1, 2), (100, 1, 2), (200, 1, 2), (100, 1, 4), (50, 1, 1)])
    b = matrix([(100, 5, 6), (200, 5, 6), (100, 5, 7), (300, 5, 6)])  # 50 failed here
    ma, mb = bootstrap.matched(a, b)
    assert ma[:, 0].tolist() == mb[:, 0].tolist() == [100, 100, 200, 300]
    # Two GETs of one object pair in the order each run recorded them.
    assert ma[:2, 2].tolist() == [2, 4] and mb[:2, 2].tolist() == [6, 7]


def write_run(out: Path, slug: str, rep: int, requests: list[tuple[str, int, float, float]]):
    run = out / "runs" / slug / f"r{rep}"
    (run / "loadgen").mkdir(parents=True)
    rec = recorder_of(requests)
    (run / "loadgen" / "recorder.json").write_text(json.dumps(rec.to_json()))
    return run


def test_one_run_takes_its_intervals_from_its_requests_and_repeats_from_the_repeats(
    tmp_path: Path,
) -> None:
    reqs = [("put", 1 << 20, 0.01, 0.02 * (1 + i % 7)) for i in range(150)]
    run = write_run(tmp_path, "dss-10", 1, reqs)
    samples = bootstrap.load(run / "loadgen" / "recorder.json")
    one = intervals.single_or_combined([{"key": "dss@10%", "put_mbps": 30.0}], samples)
    assert one is not None and one["ci_from"] == "requests"
    assert one["ci"]["put_mbps"][0] < 30.0 < one["ci"]["put_mbps"][1]
    two = intervals.single_or_combined(
        [{"key": "dss@10%", "put_mbps": 30.0}, {"key": "dss@10%", "put_mbps": 34.0}], None
    )
    assert two is not None and two["ci_from"] == "repeats"
    assert two["ci"]["put_mbps"][0] < 32.0 < two["ci"]["put_mbps"][1]
    assert intervals.single_or_combined([], samples) is None


def test_headline_of_single_runs_gets_a_bootstrap_interval() -> None:
    a = matrix([(1 << 20, 5_000, 20_000 + 1_000 * (i % 9)) for i in range(200)])
    keyed = {
        "dss@10%": {"measured_as": "dss@10%", "put_mbps": 30.0, "repeats": [{}]},
        "lru@10%": {"measured_as": "lru@10%", "put_mbps": 10.0, "repeats": [{}]},
    }
    slower = np.array([[1, 1, 2 + i % 3] for i in range(200)])
    samples = {"dss@10%": {"put": a}, "lru@10%": {"put": a * slower}}
    ci = intervals.headline_ci(keyed, "dss@10%", "lru@10%", "put_mbps", 3.0, samples)
    assert ci is not None and ci[0] < 3.0 < ci[1]
    assert intervals.headline_ci(keyed, "dss@10%", "lru@10%", "put_mbps", 3.0, {}) is None
    assert intervals.headline_ci(keyed, "dss@10%", "hdd@10%", "put_mbps", None, samples) is None


@pytest.mark.parametrize("op", ["put", "get"])
def test_load_returns_only_phases_with_requests(tmp_path: Path, op: str) -> None:
    run = write_run(tmp_path, "lru-10", 1, [(op, 10, 0.001, 0.002)])
    assert set(bootstrap.load(run / "loadgen" / "recorder.json")) == {op, f"{op} without VMDK"}


def test_bandwidth_without_vmdk_leaves_out_their_time_as_well_as_their_bytes(
    tmp_path: Path,
) -> None:
    rec = Recorder(0.0)
    for nbytes, lat in ((100, 0.1), (100, 0.1)):
        rec.record(("get", "get", "Files", 25, "small"), "200", lat, lat, lat, nbytes)
    # One large object: most of the bytes, and at a lower rate than the small ones.
    rec.record(("get", "get", "VMDK", 31, "large"), "200", 1.0, 0.05, 1.0, 600)
    path = tmp_path / "recorder.json"
    path.write_text(json.dumps(rec.to_json()))
    samples = bootstrap.load(path)
    assert len(samples["get"]) == 3 and len(samples["get without VMDK"]) == 2
    # Whole: 800 bytes / 1.2 s; without VMDK: 200 bytes / 0.2 s, 1.5 times the rate.
    assert bootstrap.excluding({"get_mbps": 10.0}, samples, "get") == pytest.approx(15.0)
    assert bootstrap.excluding({"get_mbps": 10.0}, {}, "get") is None


def typed_recorder(requests: list[tuple[str, int, float]]) -> Recorder:
    """(type, bytes, latency s) per PUT."""
    rec = Recorder(0.0)
    for kind, nbytes, lat in requests:
        rec.record(("put", "put", kind, 25, "small"), "201", lat, lat / 2, lat, nbytes)
    return rec


def test_each_repeat_gets_its_own_figure_without_the_vmdk_and_repeats_combine_them() -> None:
    from swift_dss.experiment import caching

    files = [("Files", 1 << 20, 0.05)] * 50
    # Equal bandwidths, but a slower VMDK in the second run: only the figure without it,
    # taken from each run's own requests, tells the runs' small objects apart.
    runs = []
    for key, vmdk_s, files_scale in (("lru@10%", 4.0, 2.0), ("dss@10%", 8.0, 1.0)):
        per_run = []
        for rep in range(3):
            slow = [(k, n, lat * files_scale * (1 + rep / 10)) for k, n, lat in files]
            rec = typed_recorder([*slow, ("VMDK", 100 << 20, vmdk_s)])
            entry = {"key": key, "mode": key[:3], "put_mbps": 40.0}
            per_run.append(bootstrap.with_excluding(entry, bootstrap.samples(rec)))
        runs.append((key, per_run))
    for _key, per_run in runs:
        excl = [e["put_mbps_excl_vmdk"] for e in per_run]
        assert all(isinstance(v, float) for v in excl) and excl[0] > excl[1] > excl[2]
    entries = {key: intervals.single_or_combined(found, None) for key, found in runs}
    lru, dss = entries["lru@10%"], entries["dss@10%"]
    assert lru is not None and dss is not None
    low, high = dss["ci"]["put_mbps_excl_vmdk"]
    assert low < dss["put_mbps_excl_vmdk"] < high
    doc = caching.build_summary(entries, {}, (10.0,))  # type: ignore[arg-type]
    row = next(h for h in doc["headlines"] if h["what"] == "dss@10% / lru@10% put_mbps_excl_vmdk")
    assert row["measured"] == pytest.approx(
        dss["put_mbps_excl_vmdk"] / lru["put_mbps_excl_vmdk"], rel=1e-3
    )
    assert row["measured"] > 1.2  # DSS's Files moved twice as fast
    assert row["ci"] is not None and row["ci"][0] < row["measured"] < row["ci"][1]
