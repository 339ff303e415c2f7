"""Latency histograms merge exactly; rows follow docs/loadgen.md; SigV4 matches."""

from __future__ import annotations

import datetime as dt
import random

import pytest
from botocore.auth import S3SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.config import Config
from botocore.credentials import Credentials

from swift_dss.loadgen.payload import PayloadSource
from swift_dss.loadgen.protocols import S3
from swift_dss.loadgen.stats import Recorder

KEY = ("get", "get", "Files", 25, "<=64 KiB")


def fill(rec: Recorder, lats: list[float], outcome: str = "200") -> None:
    for lat in lats:
        rec.record(KEY, outcome, rec.t0 + 1, lat / 2, lat, 100)


def test_merged_histograms_equal_one_histogram_of_everything() -> None:
    rng = random.Random(5)
    parts = [[rng.lognormvariate(-4, 1) for _ in range(3000)] for _ in range(3)]
    merged = Recorder(0.0)
    for p in parts:
        r = Recorder(0.0)
        fill(r, p)
        r.phase_window("get", 0.0, 10.0)
        merged.merge(Recorder.from_json(r.to_json()))  # through JSON, as between processes
    whole = Recorder(0.0)
    fill(whole, [x for p in parts for x in p])
    whole.phase_window("get", 0.0, 10.0)
    a, b = merged.cells[KEY].lat, whole.cells[KEY].lat
    for pct in (50, 90, 99, 99.9, 100):
        assert a.get_value_at_percentile(pct) == b.get_value_at_percentile(pct)
    assert merged.rows() == whole.rows()
    # Against the exact sample: 3 significant digits.
    exact = sorted(x for p in parts for x in p)
    p99 = exact[int(0.99 * len(exact)) - 1] * 1e6
    assert abs(a.get_value_at_percentile(99) - p99) / p99 < 0.01


def test_rows_have_the_contract_fields_and_failures_stay_out_of_latency() -> None:
    rec = Recorder(0.0)
    fill(rec, [0.010] * 9)
    fill(rec, [5.0], outcome="503")
    rec.phase_window("get", 0.0, 2.0)
    rows = rec.rows()
    assert [(r["type"], r["class"]) for r in rows] == [("Files", 25), (None, None)]
    row = rows[1]
    for field in ("phase", "op", "type", "class", "ops", "failures", "mbps", "ops_per_s",
                  "lat_mean_ms", "lat_p50_ms", "lat_p99_ms"):  # fmt: skip
        assert field in row
    assert (row["ops"], row["failures"], row["codes"]) == (10, 1, {"200": 9, "503": 1})
    assert row["ops_per_s"] == 4.5
    assert row["mbps"] == pytest.approx(900 / 2 / 1e6)
    assert 9.9 < row["lat_p99_ms"] < 10.1


def test_sigv4_matches_botocore() -> None:
    s3 = S3("http://127.0.0.1:8080", "test:tester", "testing")
    req = AWSRequest(
        "PUT",
        "http://127.0.0.1:8080/bucket-1/some%20key",
        headers={"Content-Type": "application/octet-stream", "X-DSS-Object-Class": "25"},
    )
    req.context["client_config"] = Config(s3={"payload_signing_enabled": False})
    S3SigV4Auth(Credentials("test:tester", "testing"), "s3", "us-east-1").add_auth(req)
    when = dt.datetime.strptime(req.headers["X-Amz-Date"], "%Y%m%dT%H%M%SZ").replace(tzinfo=dt.UTC)
    ours = s3.sign(
        "PUT",
        "/bucket-1/some key",
        {"content-type": "application/octet-stream", "X-DSS-Object-Class": "25"},
        now=when,
    )
    auth = next(h for h in ours if h.startswith("Authorization: "))
    assert auth == f"Authorization: {req.headers['Authorization']}"


def test_payload_is_reproducible_and_differs_between_objects() -> None:
    a, b = PayloadSource(1), PayloadSource(1)
    assert a.whole(3, 3_000_000) == b.whole(3, 3_000_000)
    assert a.whole(3, 1000) != a.whole(4, 1000)
    assert a.whole(3, 1000) != PayloadSource(2).whole(3, 1000)
    check = a.checker(3, 5000)
    data = b.whole(3, 5000)
    for i in range(0, 5000, 777):
        check.write(data[i : i + 777])
    assert check.complete
    bad = a.checker(3, 5000)
    bad.write(data[:100] + b"x" + data[101:])
    assert not bad.complete


def test_steady_state_bandwidth_sums_the_processes_and_survives_json() -> None:
    merged = Recorder(0.0)
    for start, end, nbytes in ((0.0, 10.0, 20_000_000), (1.0, 5.0, 8_000_000)):
        r = Recorder(0.0)
        fill(r, [0.01] * 3)
        r.phase_window("get", start, end + 30)  # a drain after the steady state
        r.steady_state("get", start, end, nbytes)
        merged.merge(Recorder.from_json(r.to_json()))
    assert merged.steady_mbps("get") == pytest.approx(2.0 + 2.0)
    summary = next(r for r in merged.rows() if r["type"] is None)
    assert summary["steady_mbps"] == pytest.approx(4.0)
    assert summary["mbps"] < 1  # the whole phase, drain included
    assert Recorder(0.0).steady_mbps("get") is None


def test_a_mixed_phase_gives_no_op_a_steady_state_of_its_own() -> None:
    rec = Recorder(0.0)
    fill(rec, [0.01] * 3)
    rec.record(("get", "put", "Files", 25, "<=64 KiB"), "201", 1.0, 0.01, 0.01, 100)
    rec.phase_window("get", 0.0, 2.0)
    rec.steady_state("get", 0.0, 1.0, 400)
    rows = [r for r in rec.rows() if r["type"] is None]
    assert [r.get("steady_mbps") for r in rows] == [None, None]
    # A record written before steady states were kept still loads.
    old = rec.to_json()
    del old["steady"]
    assert Recorder.from_json(old).steady_mbps("get") is None


def test_steady_request_rate_counts_the_seconds_of_the_steady_state() -> None:
    rec = Recorder(100.0)
    for sec, n in ((0, 10), (1, 10), (2, 10), (3, 1), (9, 1)):  # a drain after 3.5 s
        for _ in range(n):
            rec.record(KEY, "200", 100.0 + sec + 0.5, 0.01, 0.02, 10)
    rec.record(KEY, "503", 100.5, 0.01, 0.02, 0)  # failures do not count
    rec.phase_window("get", 100.0, 110.0)
    rec.steady_state("get", 100.0, 103.5, 310)
    # 30 requests in the first three seconds and half of the fourth second's one.
    assert rec.steady_ops_per_s("get", "get") == pytest.approx(30.5 / 3.5)
    summary = next(r for r in rec.rows() if r["type"] is None)
    assert summary["steady_ops_per_s"] == pytest.approx(30.5 / 3.5, abs=1e-3)
    assert summary["ops_per_s"] == pytest.approx(32 / 10)


def test_a_record_says_how_its_steady_state_counted_uploads_in_flight() -> None:
    from swift_dss.loadgen.stats import UPLOADS_AS_SENT, UPLOADS_BY_TIME

    new = Recorder(0.0)
    assert Recorder.from_json(new.to_json()).steady_uploads == UPLOADS_BY_TIME
    old = new.to_json()
    del old["steady_uploads"]  # written before uploads were counted by their time
    merged = Recorder(0.0)
    merged.merge(Recorder.from_json(old))
    assert merged.steady_uploads == UPLOADS_AS_SENT
    merged.merge(new)  # one old process's record marks the whole run
    assert merged.steady_uploads == UPLOADS_AS_SENT
