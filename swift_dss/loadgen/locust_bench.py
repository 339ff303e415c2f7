"""The Locust side of ``dss bench loadgen``: FastHttpUser doing one small-object operation.

Environment: DSS_BENCH_OP (get or put), DSS_BENCH_SIZE (bytes), DSS_BENCH_OUT (a JSON file
for {"requests", "cpu_s"}). CPU is counted from test start to test stop only, so Locust's
start-up (imports, web UI setup) is not charged to it.
"""

from __future__ import annotations

import itertools
import json
import os
import resource

from locust import FastHttpUser, constant, events, task

OP = os.environ.get("DSS_BENCH_OP", "get")
SIZE = int(os.environ.get("DSS_BENCH_SIZE", "4096"))
OUT = os.environ.get("DSS_BENCH_OUT", "locust-bench.json")
BODY = bytes(SIZE)
_ids = itertools.count()
_state = {"requests": 0, "failures": 0, "cpu0": 0.0}


def _cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


@events.test_start.add_listener
def _start(**_kw: object) -> None:
    _state["cpu0"] = _cpu()


@events.request.add_listener
def _count(exception: BaseException | None = None, **_kw: object) -> None:
    _state["requests"] += 1
    if exception is not None:
        _state["failures"] += 1


@events.test_stop.add_listener
def _stop(**_kw: object) -> None:
    with open(OUT, "w") as f:
        json.dump({**_state, "cpu_s": _cpu() - _state["cpu0"]}, f)


class SmallObjects(FastHttpUser):
    wait_time = constant(0)

    @task
    def one(self) -> None:
        i = next(_ids) % 256
        if OP == "put":
            self.client.put(f"/bench/obj/p{i}", data=BODY, name="put")
        else:
            self.client.get(f"/bench/obj/g{i}", name="get")
