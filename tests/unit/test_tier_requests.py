"""The tier daemons' FUSE request times over a run, from their stats before and after."""

from __future__ import annotations

from typing import Any

from swift_dss.experiment import tier_requests


def doc(
    counts: dict[str, int],
    seconds: dict[str, float],
    seen: int,
    by_class: dict[str, dict[str, list[float]]] | None = None,
) -> dict[str, Any]:
    return {
        "fuse_requests": counts,
        "fuse_request_s": seconds,
        "fuse_under_way_seen": seen,
        "fuse_class_requests": by_class or {},
    }


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
    assert d == {"kinds": {}, "classes": {}, "concurrency": None}
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


def test_data_requests_by_class_are_summed_over_nodes_and_taken_over_the_run() -> None:
    before = {"n1": doc({"fsync": 1}, {"fsync": 0.1}, 1, {"25": {"fsync": [1, 0.1]}})}
    after = {
        "n1": doc(
            {"fsync": 3}, {"fsync": 4.1}, 3, {"25": {"fsync": [2, 0.5]}, "28": {"fsync": [1, 3.6]}}
        ),
        "n2": doc({"fsync": 1}, {"fsync": 0.2}, 1, {"25": {"fsync": [1, 0.2]}}),
    }
    d = tier_requests.delta(after, before, dilation=2)
    assert list(d["classes"]) == ["25", "28"]
    # Class 25: 2 new fsyncs (one per node) of 0.6 s in all, 0.3 s emulated.
    assert d["classes"]["25"]["fsync"] == {"n": 2, "mean_ms": 150.0, "total_s": 0.3}
    assert d["classes"]["28"]["fsync"]["mean_ms"] == 1800.0
    rows = tier_requests.class_table(
        [("+Files", d, {"25": "ssd", "28": "hdd"}), ("old", None, {})],
        {"25": "Files", "26": "Pictures", "28": "Video"},
    )
    assert len(rows) == 3, "a row for the timed run only"
    assert rows[2].split("|")[1:-1] == [
        " +Files ",
        " - / 150.0 (ssd) ",
        " - / - (-) ",
        " - / 1,800.0 (hdd) ",
    ]
