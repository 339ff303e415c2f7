"""put_timing: the moments a PUT crossed, seen from outside the server app."""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Iterable
from typing import Any

import pytest
from swift.common.swob import Request

from swift_dss import put_timing


class Clock:
    """A clock that moves only when told: each step of the fake app advances it."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class SlowInput(io.BytesIO):
    """A body whose every read waits 2 s for its bytes."""

    def __init__(self, data: bytes, clock: Clock) -> None:
        super().__init__(data)
        self.clock = clock

    def read(self, size: int | None = -1) -> bytes:
        self.clock.now += 2
        return super().read(size)


def app_reading_in(chunks: int, clock: Clock, status: str = "201 Created") -> Callable:
    """An app that creates (1 s), then reads the body in CHUNKS reads of 4 bytes, commits
    (3 s) and answers STATUS."""

    def app(env: dict[str, Any], start_response: Callable) -> Iterable[bytes]:
        clock.now += 1
        for _ in range(chunks + 1):  # the last read finds the end of the body
            env["wsgi.input"].read(4)
        clock.now += 3
        start_response(status, [("Content-Length", "0")])
        return [b""]

    return app


class Logged:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def info(self, fmt: str, *args: Any) -> None:
        self.lines.append(fmt % args)


def timed(app: Callable, clock: Clock, methods: str = "PUT") -> tuple[Any, Logged]:
    mw = put_timing.PutTimingMiddleware(app, {"methods": methods}, clock=clock)
    logged = Logged()
    mw.logger = logged
    return mw, logged


def test_a_put_logs_when_it_asked_for_got_and_finished_its_body() -> None:
    clock = Clock()
    mw, logged = timed(app_reading_in(2, clock), clock)
    req = Request.blank("/d1/3/AUTH_a/c/o", method="PUT", body=b"12345678")
    req.environ["wsgi.input"] = SlowInput(b"12345678", clock)
    req.headers["X-Trans-Id"] = "tx1"
    req.environ["SERVER_NAME"] = "198.18.0.11"
    req.environ["REMOTE_ADDR"] = "198.18.0.2"
    resp = req.get_response(mw)
    assert resp.status_int == 201
    (line,) = logged.lines
    tag, _, text = line.partition(" ")
    rec = json.loads(text)
    assert tag == "put_timing"
    # create 1 s, so the body is asked for at +1; its bytes come at +3 and +5, its end at
    # +7; commit 3 s.
    assert rec == {
        "txn": "tx1", "path": "/d1/3/AUTH_a/c/o", "server": "198.18.0.11",
        "remote": "198.18.0.2", "status": 201, "start": 1000.0,
        "ready": 1.0, "body": 3.0, "body_end": 5.0, "done": 10.0, "bytes": 8,
    }  # fmt: skip


def test_a_put_refused_before_its_body_has_no_body_moments() -> None:
    clock = Clock()
    mw, logged = timed(app_reading_in(-1, clock, "413 Request Entity Too Large"), clock)
    resp = Request.blank("/v1/a/c/o", method="PUT", body=b"").get_response(mw)
    assert resp.status_int == 413
    rec = json.loads(logged.lines[0].partition(" ")[2])
    assert rec["status"] == 413 and rec["txn"] == "-"
    assert rec["ready"] is None and rec["body"] is None and rec["bytes"] == 0


def test_other_methods_pass_untouched_and_unlogged() -> None:
    clock = Clock()
    seen: list[Any] = []

    def app(env: dict[str, Any], start_response: Callable) -> Iterable[bytes]:
        seen.append(env["wsgi.input"])
        start_response("200 OK", [])
        return [b"x"]

    mw, logged = timed(app, clock)
    req = Request.blank("/v1/a/c/o")
    original = req.environ["wsgi.input"]
    assert req.get_response(mw).body == b"x"
    assert seen == [original] and logged.lines == []


def test_methods_are_configurable_and_the_input_keeps_its_own_attributes() -> None:
    inner = io.BytesIO(b"ab\ncd")
    inner.send_hundred_continue_response = lambda: "sent"  # type: ignore[attr-defined]
    steps = put_timing.TimedInput(inner, Clock())
    assert steps.readline() == b"ab\n" and steps.read() == b"cd" and steps.bytes == 5
    assert steps.send_hundred_continue_response() == "sent"
    assert put_timing.timed_methods({"methods": "put, post"}) == {"PUT", "POST"}
    assert put_timing.timed_methods({}) == {"PUT"}


@pytest.mark.parametrize("methods", ["PUT", "PUT,POST"])
def test_the_filter_factory_registers_what_it_times(methods: str) -> None:
    from swift.common.registry import get_swift_info

    factory = put_timing.filter_factory({}, methods=methods)
    assert isinstance(factory(lambda env, sr: []), put_timing.PutTimingMiddleware)
    assert get_swift_info()["put_timing"]["methods"] == sorted(methods.split(","))
