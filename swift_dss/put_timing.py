"""Where a PUT waits, step by step: a log line per PUT with the moments it crossed.

Swift logs one time per request. An object PUT crosses several waits that time hides: at
the proxy, the connections to the object servers and their 100-continues before the
client's body is read; at an object server, the temporary file's creation before the body
is asked for, the wait for the proxy to send it, the body itself, and then the fsync,
renames and container update before the reply. This middleware observes those moments
from outside the server: the first ``read`` of ``wsgi.input`` (which makes eventlet send
100-continue), the first and last read that returned data, and the server's reply. It
changes nothing in the request or the response.

Place it in the proxy after ``catch_errors`` (which gives the transaction id) and before
the controllers, and in the object server just before the app. In the container server it
times the object servers' container updates, which carry their PUT's transaction id::

    [pipeline:main]
    pipeline = catch_errors gatekeeper healthcheck proxy-logging put_timing cache ...
    # object-server.conf, container-server.conf:
    pipeline = healthcheck recon put_timing object-server
    pipeline = healthcheck recon put_timing container-server

    [filter:put_timing]
    use = egg:swift_dss#put_timing
    # Which requests to time: methods, comma separated.
    # methods = PUT

Each timed request logs one INFO line through the server's logger::

    put_timing {"txn": "tx...", "path": "/d1/42/AUTH_a/c/o", "server": "10.0.0.11",
                "remote": "10.0.0.2", "status": 201, "start": 1764.3, "ready": 0.004,
                "body": 0.011, "body_end": 0.012, "done": 0.035, "bytes": 65536}

``start`` is the epoch time the request reached the filter; the other times are seconds
after it, ``null`` for a step the request never reached (a PUT refused before its body).
Every server of a cluster runs on its own clock, so lines from different hosts compare only
where their clocks are synchronised; on one host (the testbed) they always do.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable
from typing import Any

from swift.common.registry import register_swift_info
from swift.common.utils import get_logger, list_from_csv
from swift.common.wsgi import WSGIContext

LOG_TAG = "put_timing"
TRANS_ID_HEADER = "HTTP_X_TRANS_ID"
DEFAULT_METHODS = ("PUT",)


def timed_methods(conf: dict[str, str]) -> set[str]:
    """The methods a filter's CONF asks to time."""
    return {m.upper() for m in list_from_csv(conf.get("methods", ",".join(DEFAULT_METHODS)))}


class TimedInput:
    """``wsgi.input`` that notes when it was first asked for data, and when data came."""

    def __init__(self, inner: Any, clock: Callable[[], float] = time.time) -> None:
        self._inner = inner
        self._clock = clock
        self.ready: float | None = None
        self.body: float | None = None
        self.body_end: float | None = None
        self.bytes = 0

    def _timed(self, data: bytes) -> bytes:
        if data:
            now = self._clock()
            if self.body is None:
                self.body = now
            self.body_end = now
            self.bytes += len(data)
        return data

    def read(self, *args: Any, **kwargs: Any) -> bytes:
        if self.ready is None:
            self.ready = self._clock()
        return self._timed(self._inner.read(*args, **kwargs))

    def readline(self, *args: Any, **kwargs: Any) -> bytes:
        if self.ready is None:
            self.ready = self._clock()
        return self._timed(self._inner.readline(*args, **kwargs))

    def __getattr__(self, name: str) -> Any:
        # send_hundred_continue_response, set_hundred_continue_response_headers and the
        # like reach eventlet's input unchanged.
        return getattr(self._inner, name)


def record(
    env: dict[str, Any], status: int | None, start: float, steps: TimedInput, done: float
) -> dict[str, Any]:
    """The logged record of one request: who sent it to whom, and its moments as seconds
    after START."""

    def after(moment: float | None) -> float | None:
        return None if moment is None else round(moment - start, 6)

    return {
        "txn": env.get("swift.trans_id") or env.get(TRANS_ID_HEADER) or "-",
        "path": env.get("PATH_INFO", ""),
        # The addresses of the two ends: eventlet names the local one in SERVER_NAME.
        "server": env.get("SERVER_NAME"),
        "remote": env.get("REMOTE_ADDR"),
        "status": status,
        "start": round(start, 6),
        "ready": after(steps.ready),
        "body": after(steps.body),
        "body_end": after(steps.body_end),
        "done": after(done),
        "bytes": steps.bytes,
    }


class PutTimingMiddleware:
    def __init__(
        self, app: Any, conf: dict[str, str], clock: Callable[[], float] = time.time
    ) -> None:
        self.app = app
        self.logger = get_logger(conf, log_route=LOG_TAG)
        self.methods = timed_methods(conf)
        self.clock = clock

    def __call__(self, env: dict[str, Any], start_response: Callable) -> Iterable[bytes]:
        if env.get("REQUEST_METHOD") not in self.methods:
            return self.app(env, start_response)
        start = self.clock()
        steps = TimedInput(env["wsgi.input"], self.clock)
        env["wsgi.input"] = steps
        ctx = WSGIContext(self.app)
        body = ctx._app_call(env)
        done = self.clock()
        status = int(ctx._response_status.split(" ", 1)[0]) if ctx._response_status else None
        line = record(env, status, start, steps, done)
        self.logger.info("%s %s", LOG_TAG, json.dumps(line, separators=(", ", ": ")))
        start_response(ctx._response_status, ctx._response_headers, ctx._response_exc_info)
        return body


def filter_factory(global_conf: dict[str, str], **local_conf: str) -> Callable:
    conf = {**global_conf, **local_conf}
    register_swift_info(LOG_TAG, methods=sorted(timed_methods(conf)))

    def put_timing_filter(app: Any) -> PutTimingMiddleware:
        return PutTimingMiddleware(app, conf)

    return put_timing_filter
