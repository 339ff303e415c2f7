"""Per-object request order: reads share an object, writes have it alone, others go on."""

from __future__ import annotations

import pytest

from swift_dss.loadgen.ordering import ObjectOrder
from swift_dss.loadgen.plan import Request


def req(op: str, obj: int, seq: int = 0) -> Request:
    return Request(seq, "p", op, "T", None, 1, None, "c", f"o{obj}", obj)


def test_reads_of_one_object_run_side_by_side() -> None:
    order = ObjectOrder(max_waiting=8)
    for i in range(3):
        r = req("get", 1, i)
        assert order.offer(r)
        order.started(r)
    assert order.offer(req("head", 1, 3))
    assert order.waiting == 0


def test_a_write_waits_for_the_reads_and_later_reads_wait_behind_it() -> None:
    order = ObjectOrder(max_waiting=8)
    g1, g2 = req("get", 1, 0), req("get", 1, 1)
    for r in (g1, g2):
        assert order.offer(r)
        order.started(r)
    delete, late_get = req("delete", 1, 2), req("get", 1, 3)
    assert not order.offer(delete)
    # The read after the delete may not overtake it, though reads could share the object.
    assert not order.offer(late_get)
    order.finished(g1)
    assert order.next_ready() is None
    order.finished(g2)
    assert order.next_ready() is delete
    order.started(delete)
    assert order.next_ready() is None
    order.finished(delete)
    assert order.next_ready() is late_get
    assert order.waiting == 0


def test_reads_wait_for_a_write_in_flight() -> None:
    order = ObjectOrder(max_waiting=8)
    put = req("put", 7)
    assert order.offer(put)
    order.started(put)
    get = req("get", 7, 1)
    assert not order.offer(get)
    order.finished(put)
    assert order.next_ready() is get


def test_a_busy_object_does_not_hold_up_the_others() -> None:
    order = ObjectOrder(max_waiting=8)
    put = req("put", 1)
    order.offer(put)
    order.started(put)
    assert not order.offer(req("get", 1, 1))
    # The sequence goes on behind the waiting read.
    assert order.offer(req("get", 2, 2))
    assert order.offer(req("put", 3, 3))
    assert order.offer(req("create_container", -1, 4))


def test_waiting_requests_leave_oldest_first_per_object() -> None:
    order = ObjectOrder(max_waiting=8)
    w1, w2 = req("put", 1, 0), req("put", 2, 1)
    for r in (w1, w2):
        order.offer(r)
        order.started(r)
    queued = [req("get", 2, 2), req("delete", 1, 3), req("get", 1, 4)]
    for r in queued:
        assert not order.offer(r)
    order.finished(w1)
    first = order.next_ready()
    assert first is queued[1]  # object 2 is still written; object 1's delete goes first
    order.started(first)
    assert order.next_ready() is None  # object 1's read waits for its delete
    order.finished(w2)
    assert order.next_ready() is queued[0]


def test_the_queue_is_bounded() -> None:
    order = ObjectOrder(max_waiting=2)
    put = req("put", 1)
    order.offer(put)
    order.started(put)
    order.offer(req("get", 1, 1))
    assert not order.full
    order.offer(req("get", 1, 2))
    assert order.full


def test_max_waiting_must_be_positive() -> None:
    with pytest.raises(ValueError, match="max_waiting"):
        ObjectOrder(max_waiting=0)
