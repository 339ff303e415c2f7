"""The request sequence of a workload, fixed by its seed.

Every process of a run walks the same sequence and keeps the same object pool, and issues
only the requests it owns: an object belongs to process ``id % processes`` and a container
to ``index % processes``. So all operations on one object come from one process, in
sequence order, and the same seed gives the same requests whatever the timing.
"""

from __future__ import annotations

import bisect
import itertools
import random
from collections.abc import Iterator
from dataclasses import dataclass

from swift_dss.loadgen.workload import ObjectType, Phase, Workload


@dataclass(slots=True)
class LiveObject:
    id: int
    type: ObjectType
    size: int  # bytes stored (scaled)
    cls: int | None
    bucket: str
    container: str
    name: str


@dataclass(slots=True)
class Request:
    seq: int  # position in the phase's sequence (all processes)
    phase: str
    op: str  # put get head delete create_container delete_container
    type: str | None
    cls: int | None
    size: int  # body bytes sent (put) or expected (get)
    bucket: str | None
    container: str
    name: str | None
    obj: int  # object id; -1 for container requests

    def key(self) -> tuple[str, str, int]:
        return (self.op, f"{self.container}/{self.name or ''}", self.size)


class Plan:
    def __init__(self, workload: Workload, worker: int = 0, workers: int = 1) -> None:
        self.w = workload
        self.worker = worker
        self.workers = workers
        self.pool: list[LiveObject] = []
        self._next_id = 0
        self._cum_shares = list(itertools.accumulate(t.share for t in workload.types))
        if self._cum_shares[-1] <= 0:
            raise ValueError("object type shares add up to 0")

    def container(self, index: int) -> str:
        return f"{self.w.container_prefix}-{index:03d}"

    def requests(self, index: int) -> Iterator[Request]:
        """This worker's requests of phase ``index``, lazily: a phase bounded by duration
        just stops pulling. The pool changes as requests are yielded (or skipped), so
        phases must be walked in order and each to the point where the run left it."""
        phase = self.w.phases[index]
        rng = random.Random(f"{self.w.seed}:{index}:{phase.name}")
        ops = [op for op, _ in phase.mix]
        weights = list(itertools.accumulate(w for _, w in phase.mix))
        if phase.op in ("create_containers", "delete_containers"):
            op = "create_container" if phase.op == "create_containers" else "delete_container"
            for i in range(self.w.containers):
                if i % self.workers == self.worker:
                    yield Request(
                        i, phase.name, op, None, None, 0, None, self.container(i), None, -1
                    )
            return
        for seq in itertools.count():
            if phase.count is not None and seq >= phase.count:
                return
            op = (
                ops[0]
                if len(ops) == 1
                else ops[bisect.bisect_right(weights, rng.random() * weights[-1])]
            )
            req = self._request(seq, phase, op, rng)
            if req is None:
                if len(ops) == 1:
                    return  # nothing left to read or delete
                continue
            if req.obj % self.workers == self.worker:
                yield req

    def _request(self, seq: int, phase: Phase, op: str, rng: random.Random) -> Request | None:
        if op == "put":
            obj = self._new_object(rng)
            self.pool.append(obj)
        else:
            if not self.pool:
                return None
            if op == "delete" and phase.count is None and len(phase.mix) == 1:
                obj = self.pool.pop()  # a full cleanup, newest first
            elif op == "delete":
                obj = self._swap_pop(rng.randrange(len(self.pool)))
            else:
                obj = self.pool[rng.randrange(len(self.pool))]
        return Request(
            seq, phase.name, op, obj.type.name, obj.cls, obj.size, obj.bucket,
            obj.container, obj.name, obj.id,
        )  # fmt: skip

    def _swap_pop(self, i: int) -> LiveObject:
        self.pool[i], self.pool[-1] = self.pool[-1], self.pool[i]
        return self.pool.pop()

    def _new_object(self, rng: random.Random) -> LiveObject:
        w = self.w
        t = w.types[bisect.bisect_right(self._cum_shares, rng.random() * self._cum_shares[-1])]
        raw, bucket = t.draw(rng)
        size = max(1, round(raw * w.scale))
        oid = self._next_id
        self._next_id += 1
        container = self.container(rng.randrange(w.containers))
        name = f"{t.name.lower()}-{oid:09d}"
        return LiveObject(oid, t, size, w.class_for(t, raw), bucket.label, container, name)
