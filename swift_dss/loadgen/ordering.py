"""Per-object order of a request sequence, without holding up the other objects.

A mix may read an object while it is still being written, or delete it while it is read,
so a write (PUT, DELETE) waits for every request in flight on its object and every request
waits for a write in flight on its object. Reads (GET, HEAD) of one object run side by side,
as they do from the paper's many client threads. A request that has to wait steps aside into
a short queue and the sequence goes on behind it: one slow transfer of a large object must
not stall the requests for every other object (a closed loop that stopped at the first
busy object ran most of a GET phase with one or two of its 32 transfers in flight).
"""

from __future__ import annotations

import collections

from swift_dss.loadgen.plan import Request

READS = frozenset({"get", "head"})


class ObjectOrder:
    """Which requests may start now; the ones that may not wait in sequence order."""

    def __init__(self, max_waiting: int) -> None:
        if max_waiting < 1:
            raise ValueError("max_waiting must be >= 1")
        self.max_waiting = max_waiting
        self._reading: collections.Counter[int] = collections.Counter()
        self._writing: set[int] = set()
        self._waiting: list[Request] = []
        self._waiting_per_obj: collections.Counter[int] = collections.Counter()

    @property
    def waiting(self) -> int:
        return len(self._waiting)

    @property
    def full(self) -> bool:
        """Draw no more from the sequence: too many requests wait already."""
        return len(self._waiting) >= self.max_waiting

    def _clear(self, req: Request) -> bool:
        obj = req.obj
        if obj in self._writing:
            return False
        return req.op in READS or self._reading[obj] == 0

    def offer(self, req: Request) -> bool:
        """True if ``req``, the next of the sequence, may start; else it waits its turn."""
        if req.obj < 0:
            return True
        # An earlier request for the object still waits: this one goes after it.
        if self._waiting_per_obj[req.obj] == 0 and self._clear(req):
            return True
        self._waiting.append(req)
        self._waiting_per_obj[req.obj] += 1
        return False

    def next_ready(self) -> Request | None:
        """The oldest waiting request that may start now, taken off the queue."""
        seen: set[int] = set()
        for i, req in enumerate(self._waiting):
            if req.obj in seen:
                continue  # only the oldest waiting request of an object may go
            if self._clear(req):
                del self._waiting[i]
                self._waiting_per_obj[req.obj] -= 1
                return req
            seen.add(req.obj)
        return None

    def started(self, req: Request) -> None:
        if req.obj < 0:
            return
        if req.op in READS:
            self._reading[req.obj] += 1
        else:
            self._writing.add(req.obj)

    def finished(self, req: Request) -> None:
        if req.obj < 0:
            return
        if req.op in READS:
            self._reading[req.obj] -= 1
            if self._reading[req.obj] <= 0:
                del self._reading[req.obj]
        else:
            self._writing.discard(req.obj)
