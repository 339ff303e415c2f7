"""The load generator in a subprocess (as on the testbed's client node), with the caller
reading the tier between phases: the handshake, the result, and its failures."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from swift_dss.loadgen import remote, runner
from swift_dss.loadgen.localserver import LocalServer
from swift_dss.loadgen.protocols import connect
from tests.unit.test_loadgen_driver import summary, workload

#: A prefix that execs the command in place, as `ip netns exec` does.
IN_PLACE = ["env"]


def test_phases_wait_for_the_caller_and_the_result_is_runner_works(tmp_path: Path) -> None:
    w = workload(puts=12, gets=20)
    seen: list[tuple[int, int]] = []
    pids: list[int] = []
    with LocalServer() as srv:
        proto = connect(srv.url, "swift")

        def on_phase(index: int) -> None:
            # Nothing of phase INDEX may have reached the server yet.
            seen.append((index, sum(1 for r in srv.log if r.path.startswith("/v1/"))))

        out = remote.work(
            IN_PLACE, w, proto, time.time(), on_phase, log=tmp_path / "c.log", on_start=pids.append
        )
        served = [r for r in srv.log if r.path.startswith("/v1/")]
    # Before each phase, and once more after the last.
    assert [i for i, _ in seen] == list(range(len(w.phases) + 1))
    counts = [n for _, n in seen]
    assert counts == sorted(counts) and counts[0] == 0
    # The last phase's requests come after the reading before it and before the final one.
    assert counts[-2] < counts[-1] == len(served)
    rows = summary(runner.summarize(w, [out]))
    assert (rows["put"]["ops"], rows["get"]["ops"]) == (12, 20)
    assert all(r["failures"] == 0 for r in rows.values())
    assert len(pids) == 1 and pids[0] > 0


def test_a_failing_phase_hook_stops_the_child_and_is_raised(tmp_path: Path) -> None:
    w = workload(puts=5, gets=5)

    def on_phase(index: int) -> None:
        if index == 1:
            raise RuntimeError("tier unreadable")

    with LocalServer() as srv:
        with pytest.raises(RuntimeError, match="tier unreadable"):
            remote.work(IN_PLACE, w, connect(srv.url, "swift"), time.time(), on_phase)
        puts = [r for r in srv.log if r.method == "PUT" and r.path.count("/") == 4]
    assert puts == []  # the PUT phase never started


def test_a_child_that_cannot_run_is_a_remote_error(tmp_path: Path) -> None:
    w = workload(puts=1, gets=1)
    with LocalServer() as srv:
        proto = connect(srv.url, "swift")
    log = tmp_path / "c.log"
    with pytest.raises(remote.RemoteError, match="exited"):
        remote.work(["false"], w, proto, time.time(), lambda _i: None, log=log)
