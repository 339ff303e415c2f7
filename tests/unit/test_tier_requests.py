"""The tier daemons' FUSE request times over a run, from their stats before and after."""

from __future__ import annotations

from typing import Any

from swift_dss.experiment import tier_requests


def doc(counts: dict[str, int], seconds: dict[str, float], seen: int) -> dict[str, Any]:
    return {"fuse_requests": counts, "fuse_request_s": seconds, "fuse_under_way_seen": seen}


BEFORE = {
    "n1": doc({"write": 10, "lookup": 5}, {"write": 0.1, "lookup": 0.01}, 15),
    "n2": doc({"write": 10}, {"write": 0.1}, 10),
}
AFTER = {
    "n1": doc(
        {"write": 110, "lookup": 5, "fsync": 4}, {"write": 1.1, "lookup": 0.01, "fsync": 2.0}, 315
    ),
    "n2": doc({"write": 110}, {"write": 2.1}, 210),
}


def test_sums_the_nodes_and_takes_the_run_s_share_in_emulated_time() -> None:
    d = tier_requests.delta(AFTER, BEFORE, dilation=4)
    kinds = d["kinds"]
    assert set(kinds) == {"write", "fsync"}, "a kind with nothing new is left out"
    # 200 writes took 3.0 s of real time, 0.75 s emulated at K = 4.
    assert kinds["write"] == {"n": 200, "mean_ms": 3.75, "total_s": 0.75}
    assert kinds["fsync"] == {"n": 4, "mean_ms": 125.0, "total_s": 0.5}
    # 500 under way seen by 204 arrivals.
    assert d["concurrency"] == round(500 / 204, 2)


def test_daemons_that_did_not_time_their_requests_give_no_kinds() -> None:
    untimed = {n: {"fuse_requests": v["fuse_requests"]} for n, v in AFTER.items()}
    d = tier_requests.delta(untimed, {}, dilation=1)
    assert d == {"kinds": {}, "concurrency": None}
    assert tier_requests.table([("none", d)]) == []


def test_table_has_a_row_per_timed_run_and_a_dash_for_a_kind_not_seen() -> None:
    timed = tier_requests.delta(AFTER, BEFORE, dilation=4)
    rows = tier_requests.table([("none", timed), ("old", None), ("+Files", timed)])
    assert len(rows) == 4
    header = rows[0].split("|")
    assert "write" in rows[0] and "rename" in rows[0]
    first = rows[2].split("|")
    assert first[1].strip() == "none"
    assert first[header.index(" write ")].strip() == "3.75 (200)"
    assert first[header.index(" rename ")].strip() == "-"
    assert first[-2].strip() == str(round(500 / 204, 2))
