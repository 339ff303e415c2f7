"""The request driver: one pycurl CurlMulti driving up to ``concurrency`` transfers at once.

Each transfer streams: PUT bodies come from a READFUNCTION over the reproducible payload,
GET bodies go to a WRITEFUNCTION that counts (or checks) them. Every request has an idle
limit, so a phase always ends: a request that moves no byte for ``timeout`` seconds fails.
The loop keeps track of the time it spends outside ``select`` (its own CPU work): when that
is nearly all of the time, the client, not the server, sets the pace.

An upload's bytes count as moved in proportion to its time, not as curl has sent them:
what curl has sent may still sit in socket buffers between it and the storage nodes (its
own, the proxy's, the proxy's to each replica), and behind a slow link those hold seconds
of its traffic. A download's bytes are counted as they arrive, which is when they moved.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import pycurl
from hdrh.histogram import HdrHistogram

from swift_dss.loadgen.ordering import ObjectOrder
from swift_dss.loadgen.payload import BodyChecker, PayloadSource
from swift_dss.loadgen.plan import Request
from swift_dss.loadgen.protocols import Protocol, Wire
from swift_dss.loadgen.stats import Recorder, is_success

#: curl error numbers with a name in the reports; others appear as "curlNN".
CURL_ERRORS = {
    pycurl.E_OPERATION_TIMEDOUT: "timeout",
    pycurl.E_COULDNT_CONNECT: "connect",
    pycurl.E_GOT_NOTHING: "reset",
    pycurl.E_SEND_ERROR: "reset",
    pycurl.E_RECV_ERROR: "reset",
    pycurl.E_PARTIAL_FILE: "partial",
    pycurl.E_SEND_FAIL_REWIND: "reset",
}
BUFFER = 512 * 1024


def idle_seconds(timeout: float) -> int:
    """curl's idle limit for TIMEOUT: whole seconds (curl's unit), at least one."""
    return max(1, math.ceil(timeout))


Tick = Callable[[str, int, int, int, float], None]  # phase, done, failures, bytes, seconds


@dataclass
class DriverOptions:
    concurrency: int = 16
    #: Seconds a request may go without moving a byte (sent or received) before it fails
    #: as "timeout". Not a limit on the whole transfer: Swift's own client_timeout and a
    #: client's socket read timeout are idle limits too, and a large object that keeps
    #: moving at a slow store's pace is slow, not failed.
    timeout: float = 60.0
    connect_timeout: float = 10.0
    verify: bool = False  # check GET bodies against the payload generator


@dataclass
class LoopStats:
    wall: float = 0.0
    waiting: float = 0.0  # inside select: the loop had nothing to do
    lateness: HdrHistogram = field(default_factory=lambda: HdrHistogram(1, 3_600_000_000, 2))

    @property
    def busy_pct(self) -> float:
        return 100.0 * (1 - self.waiting / self.wall) if self.wall > 0 else 0.0


class _Counter:
    __slots__ = ("n",)

    def __init__(self) -> None:
        self.n = 0

    def write(self, data: bytes) -> None:
        self.n += len(data)


def upload_share(start: float, cut: float, end: float) -> float:
    """The share of an upload's body moved by CUT, for one that ran from START to END:
    in proportion to its time (see the module's docstring)."""
    if end <= start:
        return 1.0
    return min(1.0, max(0.0, (cut - start) / (end - start)))


class _Slot:
    __slots__ = ("curl", "custom", "cut", "reader", "req", "sink", "start")

    def __init__(self, curl: pycurl.Curl) -> None:
        self.curl = curl
        self.custom = False
        self.req: Request | None = None
        self.start = 0.0
        self.reader = None
        self.sink: _Counter | BodyChecker | None = None
        #: When the steady state ended with this upload in flight (perf_counter), or None.
        self.cut: float | None = None

    def moved(self) -> int:
        """Body bytes this slot's transfer has sent (PUT) or received so far."""
        if self.reader is not None:
            return self.reader.offset
        if isinstance(self.sink, _Counter):
            return self.sink.n
        return self.sink.offset if self.sink is not None else 0


class Driver:
    def __init__(
        self,
        protocol: Protocol,
        payload: PayloadSource,
        recorder: Recorder,
        options: DriverOptions,
        tick: Tick | None = None,
    ) -> None:
        self.protocol = protocol
        self.payload = payload
        self.recorder = recorder
        self.opts = options
        self.tick = tick
        self.loop = LoopStats()
        #: Of the last run: (wall time, bytes) when its steady state ended (see run).
        self.steady: tuple[float, int] | None = None
        #: Bytes of the uploads in flight when the steady state ended, as they finish.
        self._cut_uploads = 0.0
        self.multi = pycurl.CurlMulti()
        self.multi.setopt(pycurl.M_MAX_HOST_CONNECTIONS, options.concurrency)
        self.slots = {}
        for _ in range(options.concurrency):
            c = pycurl.Curl()
            c.setopt(pycurl.NOSIGNAL, 1)
            c.setopt(pycurl.LOW_SPEED_LIMIT, 1)
            c.setopt(pycurl.LOW_SPEED_TIME, idle_seconds(options.timeout))
            c.setopt(
                pycurl.CONNECTTIMEOUT_MS, int(min(options.connect_timeout, options.timeout) * 1000)
            )
            c.setopt(pycurl.BUFFERSIZE, BUFFER)
            c.setopt(pycurl.UPLOAD_BUFFERSIZE, BUFFER)
            self.slots[c] = _Slot(c)
        self.free = list(self.slots.values())
        # Enough room that reads of the few popular objects never hold up the sequence.
        self.order = ObjectOrder(max_waiting=4 * options.concurrency)
        self._t0_perf = time.perf_counter()
        self._t0_wall = time.time()

    def close(self) -> None:
        for c in self.slots:
            c.close()
        self.multi.close()

    def wall(self, perf: float) -> float:
        return self._t0_wall + (perf - self._t0_perf)

    # --- issuing -----------------------------------------------------------------------------

    def _wire(self, req: Request) -> Wire:
        p = self.protocol
        if req.op == "create_container":
            return p.container("PUT", req.container)
        if req.op == "delete_container":
            return p.container("DELETE", req.container)
        method = {"put": "PUT", "get": "GET", "head": "HEAD", "delete": "DELETE"}[req.op]
        return p.object(method, req.container, req.name or "", req.cls if req.op == "put" else None)

    def _issue(self, req: Request, now: float) -> None:
        slot = self.free.pop()
        c = slot.curl
        wire = self._wire(req)
        c.setopt(pycurl.URL, wire.url)
        c.setopt(pycurl.HTTPHEADER, wire.headers)
        c.setopt(pycurl.HTTPGET, 1)  # back to a plain GET: no upload, body expected
        if slot.custom:
            c.unsetopt(pycurl.CUSTOMREQUEST)
            slot.custom = False
        slot.reader = None
        if wire.method == "PUT":
            size = req.size if req.obj >= 0 else 0
            slot.reader = self.payload.reader(req.obj, size)
            c.setopt(pycurl.UPLOAD, 1)
            c.setopt(pycurl.INFILESIZE_LARGE, size)
            c.setopt(pycurl.READFUNCTION, slot.reader.read)
            # curl resends a request whose reused connection turned out dead before any
            # answer; it must be able to rewind the body for that.
            c.setopt(pycurl.SEEKFUNCTION, slot.reader.seek)
        elif wire.method == "HEAD":
            c.setopt(pycurl.NOBODY, 1)
        elif wire.method == "DELETE":
            c.setopt(pycurl.CUSTOMREQUEST, "DELETE")
            slot.custom = True
        if wire.method == "GET" and self.opts.verify and req.obj >= 0:
            slot.sink = self.payload.checker(req.obj, req.size)
        else:
            slot.sink = _Counter()
        c.setopt(pycurl.WRITEFUNCTION, slot.sink.write)
        slot.req = req
        slot.start = now
        self.order.started(req)
        self.multi.add_handle(c)

    # --- completing --------------------------------------------------------------------------

    def _done(self, slot: _Slot, errno: int, now: float) -> None:
        c, req = slot.curl, slot.req
        assert req is not None
        self.multi.remove_handle(c)
        ttfb = c.getinfo(pycurl.STARTTRANSFER_TIME)
        if errno:
            outcome = CURL_ERRORS.get(errno, f"curl{errno}")
        else:
            outcome = str(c.getinfo(pycurl.RESPONSE_CODE))
            if isinstance(slot.sink, BodyChecker) and outcome == "200" and not slot.sink.complete:
                outcome = "corrupt"
        nbytes = slot.moved()
        self.recorder.record(
            (req.phase, req.op, req.type, req.cls, req.bucket),
            outcome,
            self.wall(now),
            ttfb,
            now - slot.start,
            nbytes,
        )
        if slot.cut is not None and is_success(req.op, outcome):
            self._cut_uploads += nbytes * upload_share(slot.start, slot.cut, now)
        self.order.finished(req)
        slot.req = slot.reader = slot.sink = slot.cut = None
        self.free.append(slot)

    def _collect(self) -> int:
        done = 0
        while True:
            ret, _running = self.multi.perform()
            if ret != pycurl.E_CALL_MULTI_PERFORM:
                break
        now = time.perf_counter()
        while True:
            queued, ok, failed = self.multi.info_read()
            for c in ok:
                self._done(self.slots[c], 0, now)
            for c, errno, _msg in failed:
                self._done(self.slots[c], errno, now)
            done += len(ok) + len(failed)
            if not queued:
                return done

    # --- the loop ----------------------------------------------------------------------------

    def run(
        self,
        phase: str,
        requests: Iterator[Request],
        deadline: float | None = None,
        rate: float | None = None,
    ) -> tuple[float, float]:
        """Issues ``requests`` until they run out or ``deadline`` (perf_counter) passes, and
        waits for the last ones. Returns the phase's (start, end) wall-clock times.

        ``self.steady`` then holds when the run's steady state ended, the first moment a
        transfer slot stayed free because there was nothing left to send, and the body
        bytes moved until then: those of finished successful requests, of the downloads
        in flight as far as they got, and of the uploads in flight the share of their
        time they had run, counted once they succeed. A short run ends with a drain in
        which a few large transfers run alone, and its bytes over its whole duration
        mostly measure when those were drawn; over the steady state, every slot was
        busy."""
        start = time.perf_counter()
        exhausted = stopping = False
        steady_end: float | None = None
        steady_bytes = 0
        self._cut_uploads = 0.0
        issued = done = failures_seen = 0
        next_tick = start + 0.25
        bytes_seen = 0
        while True:
            now = time.perf_counter()
            if deadline is not None and now >= deadline:
                stopping = True
            while self.free:
                ready = self.order.next_ready()
                if ready is not None:
                    self._issue(ready, now)
                    continue
                if exhausted or self.order.full:
                    break
                if rate is not None:
                    due = start + issued / rate
                    if now < due:
                        break
                    self.loop.lateness.record_value(max(1, int((now - due) * 1e6)))
                # A request already drawn is still sent after the deadline: the plan's pool
                # counts it as done.
                if stopping:
                    exhausted = True
                    break
                req = next(requests, None)
                if req is None:
                    exhausted = True
                    break
                issued += 1
                if self.order.offer(req):
                    self._issue(req, now)
            if exhausted and self.free and steady_end is None:
                steady_end = now
                steady_bytes = self._totals(phase)[1] + self._cut_in_flight(now)
            if exhausted and not self.order.waiting and len(self.free) == len(self.slots):
                break
            wait = 0.05
            if rate is not None and not exhausted and self.free:
                wait = max(0.0, min(wait, start + issued / rate - now))
            t = time.perf_counter()
            if len(self.free) < len(self.slots):
                # curl's own timers (connects, retries) bound the wait as well as sockets do.
                timer = self.multi.timeout()
                if timer >= 0:
                    wait = min(wait, timer / 1000)
                self.multi.select(wait)
            else:
                time.sleep(wait)
            self.loop.waiting += time.perf_counter() - t
            done += self._collect()
            if self.tick is not None and t >= next_tick:
                failures_seen, bytes_seen = self._totals(phase)
                self.tick(phase, done, failures_seen, bytes_seen, t - start)
                next_tick = t + 0.25
        end = time.perf_counter()
        self.loop.wall += end - start
        if steady_end is None:  # nothing was issued
            steady_end, steady_bytes = end, self._totals(phase)[1]
        self.steady = (self.wall(steady_end), steady_bytes + round(self._cut_uploads))
        if self.tick is not None:
            failures_seen, bytes_seen = self._totals(phase)
            self.tick(phase, done, failures_seen, bytes_seen, end - start)
        return self.wall(start), self.wall(end)

    def _cut_in_flight(self, now: float) -> int:
        """Body bytes the downloads in flight have received so far; marks the uploads in
        flight, whose share `_done` adds once each has succeeded."""
        received = 0
        for slot in self.slots.values():
            if slot.req is None:
                continue
            if slot.reader is not None:
                slot.cut = now
            else:
                received += slot.moved()
        return received

    def _totals(self, phase: str) -> tuple[int, int]:
        f = b = 0
        for k, c in self.recorder.cells.items():
            if k[0] == phase:
                f += c.failures
                b += c.bytes
        return f, b
