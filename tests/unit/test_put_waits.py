"""put_waits: put_timing lines joined per transaction into a PUT's timeline."""

from __future__ import annotations

import json
from typing import Any

from swift_dss.experiment import put_waits


def line(logger: str, **rec: Any) -> str:
    base = {"txn": "tx1", "status": 201, "bytes": 10, "ready": None, "body": None,
            "body_end": None}  # fmt: skip
    return f"{logger}: put_timing {json.dumps({**base, **rec})}"


PROXY_PATH = "/v1/AUTH_test/traffic-files-003/files-000000001"
OBJ_PATH = "/d1/7/AUTH_test/traffic-files-003/files-000000001"


def files_put() -> tuple[list[str], list[str]]:
    """One Files PUT: the proxy starts at 100.0 and replies at +0.9; three replicas start at
    +0.1, +0.1 and +0.2, and reply at +0.4, +0.6 and +0.8 of the proxy's start."""
    proxy = [line("proxy-server", path=PROXY_PATH, start=100.0, ready=0.3, body=0.3,
                  body_end=0.31, done=0.9)]  # fmt: skip
    objects = [
        line("object-server", path=OBJ_PATH, start=100.1, ready=0.05, body=0.2, body_end=0.22,
             done=0.5, server="198.18.0.11"),
        line("object-server", path=OBJ_PATH, start=100.1, ready=0.01, body=0.2, body_end=0.21,
             done=0.3, server="198.18.0.12"),
        line("object-server", path=OBJ_PATH, start=100.2, ready=0.03, body=0.1, body_end=0.11,
             done=0.6, server="198.18.0.13"),
    ]  # fmt: skip
    return proxy, objects


def updates() -> list[str]:
    """The container updates of the first two replicas (the third's was not timed): they
    reach their container servers 0.1 and 0.07 s after the replica's last bytes, take 0.01
    and 0.02 s there, and the replicas reply 0.17 and 0.0 s after them."""
    return [
        line("container-server", remote="198.18.0.11", start=100.42, done=0.01),
        line("container-server", remote="198.18.0.12", start=100.38, done=0.02),
        line("container-server", remote="198.18.0.14", txn="tx9", start=100.41, done=0.01),
    ]


def test_a_put_is_joined_with_its_replicas_in_the_order_they_replied() -> None:
    proxy, objects = files_put()
    (put,) = put_waits.join(put_waits.records(proxy), put_waits.records(objects))
    assert [round(r["start"] + r["done"] - 100.0, 3) for r in put.replicas] == [0.4, 0.6, 0.8]
    steps = {k: [round(v, 3) for v in vs] for k, vs in put.steps().items()}
    assert steps["to_replica"] == [0.1] and steps["to_last_replica"] == [0.2]
    assert steps["backends_ready"] == [0.3]
    assert sorted(steps["create"]) == [0.01, 0.03, 0.05]
    assert sorted(steps["body_wait"]) == [0.07, 0.15, 0.19]
    assert sorted(steps["commit"]) == [0.09, 0.28, 0.49]
    assert steps["replica_1st"] == [0.4] and steps["replica_3rd"] == [0.8]
    assert steps["after_last"] == [0.1] and steps["proxy"] == [0.9]
    assert "to_update" not in steps  # no container server timed its update


def test_each_replica_is_matched_with_the_container_update_its_node_sent() -> None:
    proxy, objects = files_put()
    records = [put_waits.records(x) for x in (proxy, objects, updates())]
    (put,) = put_waits.join(*records)
    assert len(put.updates) == 2  # the update of another transaction is not this PUT's
    steps = {k: sorted(round(v, 3) for v in vs) for k, vs in put.steps().items()}
    assert steps["to_update"] == [0.07, 0.1] and steps["update"] == [0.01, 0.02]
    assert steps["after_update"] == [0.0, 0.17]


def test_medians_per_stream_are_read_in_emulated_ms() -> None:
    proxy, objects = files_put()
    puts = put_waits.join(put_waits.records(proxy), put_waits.records(objects))
    files = put_waits.by_stream(puts, dilation=2)["files"]
    assert files["n"] == 1
    assert files["proxy"] == 450.0 and files["replica_2nd"] == 300.0
    assert files["create"] == 15.0  # the median of 10, 30 and 50 ms, halved
    # Halved, the first replica is done in 200 ms: none within 100 ms.
    assert files["within_100ms"] == {"proxy": 0.0, **dict.fromkeys(put_waits.ORDER, 0.0)}
    fast = put_waits.by_stream(puts, dilation=5)["files"]["within_100ms"]
    assert fast == {"proxy": 0.0, "replica_1st": 1.0, "replica_2nd": 0.0, "replica_3rd": 0.0}
    table = put_waits.table([("+Files", {"files": files}), ("none", None)], "files")
    assert len(table) == 3 and table[2].startswith("| +Files | 1 | 450 | 50 / 100 | 150 | 15 |")
    assert "200 / 300 / 400" in table[2] and table[2].endswith("| 0% / 0% / 0% / 0% |")
    assert put_waits.table([("none", None)], "files") == []


def test_failed_unmatched_and_damaged_lines_are_left_out() -> None:
    proxy, objects = files_put()
    failed = line("object-server", path=OBJ_PATH, start=100.1, status=503, done=0.01)
    other_txn = line("object-server", txn="tx2", path=OBJ_PATH, start=100.1, done=0.2)
    damaged = "object-server: put_timing {not json"
    records = put_waits.records([*objects, failed, other_txn, damaged, "object-server: GET"])
    assert len(records) == 5
    (put,) = put_waits.join(put_waits.records(proxy), records)
    assert len(put.replicas) == 3
    # A PUT the proxy did not answer with 201 is no PUT of the stream.
    refused = line("proxy-server", path=PROXY_PATH, start=100.0, status=413, done=0.0)
    assert put_waits.join(put_waits.records([refused]), records) == []
    # A PUT outside the streams' containers is joined but not counted in any stream.
    elsewhere = line("proxy-server", path="/v1/AUTH_test/tb/obj", start=100.0, done=0.5)
    puts = put_waits.join(put_waits.records([elsewhere]), [])
    assert len(puts) == 1 and put_waits.by_stream(puts) == {}
