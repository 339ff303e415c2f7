"""The request driver on a local HTTP server: failures, reproducibility, processes."""

from __future__ import annotations

import collections
import json
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from swift_dss.cli import main
from swift_dss.loadgen import runner
from swift_dss.loadgen.driver import Driver, DriverOptions
from swift_dss.loadgen.localserver import SLOW_PAUSE, SLOW_PIECES, LocalServer
from swift_dss.loadgen.payload import PayloadSource
from swift_dss.loadgen.plan import Request
from swift_dss.loadgen.protocols import connect
from swift_dss.loadgen.stats import Recorder
from swift_dss.loadgen.workload import Workload, parse

KIB = 1024


def workload(puts: int = 30, gets: int = 30, **extra: object) -> Workload:
    data = {
        "name": "t",
        "seed": 11,
        "containers": 2,
        "concurrency": 3,
        "timeout": 5,
        "types": [
            {"name": "Doc", "share": 2, "class": 25, "sizes": [[4 * KIB, 50], [64 * KIB, 100]]},
            {"name": "Pic", "share": 1, "class": 26, "sizes": [[300 * KIB, 100]]},
        ],
        "phases": [
            {"op": "create_containers"},
            {"op": "put", "count": puts},
            {"op": "get", "count": gets},
            {"op": "delete"},
        ],
    }
    data.update(extra)
    return parse(data)


def summary(result: runner.RunResult) -> dict[str, dict]:
    return {r["op"]: r for r in result.recorder.rows() if r["type"] is None}


def test_every_failure_is_counted_with_its_outcome() -> None:
    faults = ["status:503@5", "reset@7", "stall@11"]
    with LocalServer(faults=faults) as srv:
        # Long enough that only the stalls time out on a loaded machine.
        w = workload(timeout=2).with_options(timeout=2)
        result = runner.run(w, srv.url, "swift")
        served = collections.Counter(r.outcome for r in srv.log if r.path.count("/") >= 4)
    client: collections.Counter[str] = collections.Counter()
    for row in summary(result).values():
        client.update(row["codes"])
    assert served["503"] > 0 and served["reset"] > 0 and served["stall"] > 0
    assert client["503"] == served["503"]
    assert client["reset"] == served["reset"]
    assert client["timeout"] == served["stall"]
    rows = summary(result)
    assert sum(r["failures"] for r in rows.values()) == sum(
        n for code, n in client.items() if not code.startswith("2")
    )
    # Latency histograms hold successes only.
    put = next(c for k, c in result.recorder.grouped(2).items() if k == ("put", "put"))
    assert put.lat.get_total_count() == put.ops - put.failures


def requests_seen(w: Workload) -> list[tuple[str, str, int, str | None]]:
    with LocalServer() as srv:
        runner.run(w, srv.url, "swift")
        return [(r.method, r.path, r.length, r.cls) for r in srv.log if r.path.startswith("/v1/")]


def test_the_seed_reproduces_the_request_sequence() -> None:
    w = workload(concurrency=1)
    first = requests_seen(w)
    assert first == requests_seen(w)
    assert first != requests_seen(w.with_options(seed=12))
    puts = [r for r in first if r[0] == "PUT" and r[1].count("/") == 4]
    assert {r[3] for r in puts} == {"25", "26"}


def test_processes_merge_into_one_record_and_bodies_verify() -> None:
    with LocalServer(store=True) as srv:
        w = workload(puts=40, gets=60, concurrency=4, processes=2)
        result = runner.run(w, srv.url, "swift", verify=True)
    rows = summary(result)
    assert (rows["put"]["ops"], rows["get"]["ops"], rows["delete"]["ops"]) == (40, 60, 40)
    assert all(r["failures"] == 0 for r in rows.values())
    assert result.client["processes"] == 2
    get = result.recorder.grouped(2)[("get", "get")]
    assert get.lat.get_total_count() == 60


def test_verify_catches_wrong_bodies() -> None:
    # Without store the server answers zeros of the right length.
    with LocalServer() as srv:
        result = runner.run(workload(puts=5, gets=5), srv.url, "swift", verify=True)
    assert summary(result)["get"]["codes"] == {"corrupt": 5}


def test_duration_bounded_mix_ends_and_reads_only_written_objects() -> None:
    phases = [
        {"op": "create_containers"},
        {"name": "mixed", "mix": {"put": 1, "get": 3, "delete": 1}, "duration": 0.5},
        {"op": "delete"},
    ]
    with LocalServer(store=True) as srv:
        result = runner.run(workload(phases=phases), srv.url, "s3", verify=True)
    codes: collections.Counter[str] = collections.Counter()
    for r in summary(result).values():
        codes.update(r["codes"])
    assert not [c for c in codes if not c.startswith("2")]
    assert summary(result)["get"]["ops"] > 0


def test_s3_requests_are_signed_and_carry_classes(tmp_path: Path) -> None:
    with LocalServer() as srv:
        runner.run(workload(puts=6, gets=2), srv.url, "s3")
        puts = [r for r in srv.log if r.method == "PUT" and r.path.count("/") == 2]
    assert len(puts) == 6 and {r.cls for r in puts} <= {"25", "26"}


def test_cli_run_writes_results_csv_and_plots(tmp_path: Path) -> None:
    wl = tmp_path / "w.yaml"
    wl.write_text(json.dumps({**json.loads(json.dumps(_raw())), "name": "cli"}))
    with LocalServer() as srv:
        res = CliRunner().invoke(
            main,
            [
                "loadgen",
                "run",
                str(wl),
                "--endpoint",
                srv.url,
                "--out",
                str(tmp_path / "o"),
                "--quiet",
                "--scale",
                "0.5",
            ],
        )
    assert res.exit_code == 0, res.output
    doc = json.loads((tmp_path / "o" / "results.json").read_text())
    assert doc["workload"] == "cli" and doc["scale"] == 0.5
    ops = {(r["phase"], r["op"], r["type"], r["class"]) for r in doc["rows"]}
    assert ("put", "put", None, None) in ops and ("put", "put", "Doc", 25) in ops
    for name in ("results.csv", "sizes.csv", "timeseries.csv", "bandwidth.png",
                 "latency_cdf.png", "failures.png"):  # fmt: skip
        assert (tmp_path / "o" / name).stat().st_size > 0


def _raw() -> dict:
    return {
        "types": [{"name": "Doc", "class": 25, "sizes": [[8 * KIB, 100]]}],
        "containers": 2,
        "phases": [
            {"op": "create_containers"},
            {"op": "put", "count": 10},
            {"op": "get", "count": 10},
            {"op": "delete"},
        ],
    }


@pytest.mark.parametrize("bad", ["nope.yaml"])
def test_cli_names_a_missing_workload(bad: str, tmp_path: Path) -> None:
    res = CliRunner().invoke(main, ["loadgen", "run", bad, "--out", str(tmp_path)])
    assert res.exit_code != 0 and "shipped" in res.output


def finished_requests(
    faults: list[str], puts: int, gets: int, timeout: float
) -> list[tuple[str, float]]:
    """(outcome, total seconds) of each request in the order they finished: PUTS objects on
    three slots, then GETS reads of the first one, against a server with FAULTS."""
    with LocalServer(faults=faults) as srv:
        recorder = Recorder(time.time())
        finished: list[tuple[str, float]] = []
        record = recorder.record

        def spy(key: tuple, outcome: str, end: float, ttfb: float, total: float, n: int) -> None:
            finished.append((outcome, total))
            record(key, outcome, end, ttfb, total, n)  # type: ignore[arg-type]

        recorder.record = spy  # type: ignore[method-assign]
        opts = DriverOptions(concurrency=3, timeout=timeout)
        driver = Driver(connect(srv.url, "swift"), PayloadSource(1), recorder, opts)

        def one(op: str, obj: int, seq: int) -> Request:
            return Request(seq, op, op, "Doc", 25, 100, "b", "c", f"o{obj}", obj)

        try:
            driver.run("put", iter([one("put", i, i) for i in range(puts)]))
            driver.run("get", iter([one("get", 0, i) for i in range(gets)]))
        finally:
            driver.close()
    return finished


def test_a_stalled_read_does_not_hold_up_the_reads_after_it() -> None:
    # Object requests count from 1 and every 4th stalls: three PUTs, then the first of four
    # GETs of one object hangs and the other three are answered.
    finished = finished_requests(["stall@4"], puts=3, gets=4, timeout=3)
    # The other reads of the same object finished while the first one hung.
    assert [outcome for outcome, _ in finished] == ["201"] * 3 + ["200"] * 3 + ["timeout"]


def test_the_limit_is_on_idle_time_not_on_the_whole_transfer() -> None:
    # The 4th object request (the first GET) gets its body in ten pieces 0.4 s apart: it
    # takes twice the 2 s limit, yet never stands idle for 2 s, so it succeeds, as a slow
    # large object does through a slow store. The 7th request stalls and still fails.
    finished = finished_requests(["slow@4", "stall@7"], puts=3, gets=5, timeout=2)
    outcomes = collections.Counter(outcome for outcome, _ in finished)
    assert outcomes == {"201": 3, "200": 4, "timeout": 1}
    slow = max(total for outcome, total in finished if outcome == "200")
    assert slow >= SLOW_PIECES * SLOW_PAUSE > 2


def test_the_steady_state_ends_when_the_sequence_runs_out() -> None:
    # Six requests on three slots, the last one stalled until it times out: the steady
    # state ends when the sequence ran out, well before the phase does.
    with LocalServer(faults=["stall@6"]) as srv:
        w = workload(puts=6, gets=6, concurrency=3, timeout=3).with_options(timeout=3)
        result = runner.run(w, srv.url, "swift")
    rec = result.recorder
    for phase in ("put", "get"):
        [(start, end, nbytes)] = rec.steady[phase]
        first, last = rec.phases[phase]
        assert start == first and start <= end <= last
        assert nbytes > 0
    put = summary(result)["put"]
    # How much of the last PUTs' bodies had gone when a slot first stayed free depends on
    # timing; that the stalled request's wait is left out does not.
    assert put["steady_mbps"] > put["mbps"]


def test_an_upload_in_flight_counts_by_its_time_not_by_what_the_client_sent() -> None:
    # Two 256 KiB PUTs on two slots. The server reads the second one's body in ten pieces
    # 0.4 s apart, so the client hands all of it to its buffers at once and it arrives over
    # 4 s. The steady state ends when the first PUT is done and nothing is left to send:
    # the slow upload then counts for the share of its time it had run, a small one.
    size = 256 * KIB
    with LocalServer(faults=["slow@2"]) as srv:
        recorder = Recorder(time.time())
        driver = Driver(
            connect(srv.url, "swift"),
            PayloadSource(1),
            recorder,
            DriverOptions(concurrency=2, timeout=10),
        )
        try:
            puts = [Request(i, "put", "put", "Doc", 25, size, "b", "c", f"o{i}", i) for i in (0, 1)]
            driver.run("put", iter(puts))
        finally:
            driver.close()
        assert [r.outcome for r in srv.log if r.method == "PUT"] == ["201", "201"]
    assert driver.steady is not None
    _end, nbytes = driver.steady
    assert size <= nbytes < size + size / 2


def test_an_uploads_share_is_its_time_before_the_cut() -> None:
    from swift_dss.loadgen.driver import upload_share

    assert upload_share(10.0, 11.0, 14.0) == pytest.approx(0.25)
    assert upload_share(10.0, 15.0, 14.0) == 1.0  # finished before the cut
    assert upload_share(10.0, 9.0, 14.0) == 0.0  # started after it
    assert upload_share(10.0, 10.0, 10.0) == 1.0  # took no time
