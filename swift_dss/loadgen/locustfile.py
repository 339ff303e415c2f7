"""Locust driven by a loadgen workload file: the same object types, sizes and classes.

    DSS_WORKLOAD=paper DSS_SCALE=0.001 locust -f $(dss loadgen locustfile) \
        --host http://127.0.0.1:8080                      # web UI on :8089
    DSS_WORKLOAD=paper DSS_SCALE=0.001 locust -f $(dss loadgen locustfile) \
        --host http://127.0.0.1:8080 --headless -u 20 -r 20 -t 1m --csv run/locust

Environment: DSS_WORKLOAD (a shipped name or a YAML path), DSS_SCALE (object sizes),
DSS_PROTOCOL (swift, the default, or s3), DSS_SEED, DSS_REQUESTS (stop the run after that
many object requests, counted over all users of the process: a run bounded by work, so that
a slow machine does the same run later rather than a shorter one; `-t` still caps the
time). Credentials as for ``dss loadgen``: Swift from the swift CLI's variables (ST_AUTH,
ST_USER, ST_KEY, ST_AUTH_VERSION, OS_*;
default: tempauth at HOST/auth/v1.0 as the all-in-one's test:tester), S3 from
AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION (default the all-in-one's).

Locust has no phases with barriers, so the phases' object operations become weighted
tasks: each op weighs the requests the workload gives it (count, or 1 per mix weight for
a phase bounded by time). Each user writes its own objects and reads and deletes only
those. Requests are named "op type cN" (so the UI's table splits by type and class) and
carry {"type", "class", "size"} as the event context. The client is Locust's
FastHttpUser (geventhttpclient, gevent-friendly); it needs each body in memory, so keep
sizes small with DSS_SCALE.
"""

from __future__ import annotations

import itertools
import logging
import os
import random
from dataclasses import dataclass

import gevent
import locust.stats
from locust import FastHttpUser, between, events, task
from locust.env import Environment
from locust.exception import StopUser
from locust.runners import STATE_CLEANUP, STATE_STOPPED, STATE_STOPPING

from swift_dss.client.auth import SwiftAuth
from swift_dss.loadgen.payload import PayloadSource
from swift_dss.loadgen.plan import Plan
from swift_dss.loadgen.protocols import (
    DEFAULT_KEY,
    DEFAULT_USER,
    S3,
    AuthError,
    Credentials,
    Swift,
)
from swift_dss.loadgen.workload import Workload, load

WORKLOAD: Workload = load(os.environ.get("DSS_WORKLOAD", "paper")).with_options(
    scale=float(os.environ["DSS_SCALE"]) if "DSS_SCALE" in os.environ else None,
    seed=int(os.environ["DSS_SEED"]) if "DSS_SEED" in os.environ else None,
)
PROTOCOL = os.environ.get("DSS_PROTOCOL", "swift")
if PROTOCOL not in ("swift", "s3"):
    raise SystemExit(f"DSS_PROTOCOL must be swift or s3, not {PROTOCOL!r}")
if PROTOCOL == "swift":
    CREDS = Credentials(swift=SwiftAuth.from_env())
else:
    CREDS = Credentials(
        os.environ.get("AWS_ACCESS_KEY_ID") or DEFAULT_USER,
        os.environ.get("AWS_SECRET_ACCESS_KEY") or DEFAULT_KEY,
        os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or "us-east-1",
    )
PAYLOAD = PayloadSource(WORKLOAD.seed)


def _request_limit(text: str | None) -> int | None:
    if not text:
        return None
    if not text.isdigit() or int(text) < 1:
        raise SystemExit(f"DSS_REQUESTS must be a positive whole number, not {text!r}")
    return int(text)


REQUEST_LIMIT = _request_limit(os.environ.get("DSS_REQUESTS"))
_user_ids = itertools.count()
_requests_sent = itertools.count(1)
_STOPPING = (STATE_CLEANUP, STATE_STOPPING, STATE_STOPPED)


def op_weights(w: Workload) -> dict[str, float]:
    weights: dict[str, float] = {}
    for phase in w.phases:
        total = sum(x for _, x in phase.mix)
        n = phase.count if phase.count is not None else 1
        for op, x in phase.mix:
            if op in ("put", "get", "head", "delete"):
                weights[op] = weights.get(op, 0) + n * x / total
    # A delete phase without a count removes what was put.
    if "delete" in weights and weights["delete"] <= 1 and "put" in weights:
        weights["delete"] = weights["put"]
    return weights or {"put": 1.0}


WEIGHTS = op_weights(WORKLOAD)


@dataclass
class Obj:
    id: int
    type: str
    cls: int | None
    size: int
    container: str
    name: str


@events.test_stop.add_listener
def _let_the_csv_catch_up(environment: Environment, **_kwargs: object) -> None:
    # Locust rewrites its --csv files once a second and closes them at exit without a
    # last write, so a run's final second would be missing from them.
    options = environment.parsed_options
    if options is not None and getattr(options, "csv_prefix", None):
        gevent.sleep(locust.stats.CSV_STATS_INTERVAL_SEC + 0.25)


class WorkloadUser(FastHttpUser):
    wait_time = between(0, 0)

    def on_start(self) -> None:
        self.uid = next(_user_ids)
        self.rng = random.Random(f"{WORKLOAD.seed}:locust:{self.uid}")
        self.plan = Plan(WORKLOAD)
        self.objects: list[Obj] = []
        self.ops = list(WEIGHTS)
        self.cum = list(itertools.accumulate(WEIGHTS.values()))
        if PROTOCOL == "swift":
            try:
                self.proto: Swift | S3 = _swift_login(self.host)
            except (AuthError, ValueError) as err:
                # Every user would fail the same way: end the run, failed, with the reason.
                logging.error("login failed: %s", err)
                self.environment.process_exit_code = 1
                if self.environment.runner is not None:
                    gevent.spawn(self.environment.runner.quit)
                raise StopUser from None
        else:
            self.proto = S3(self.host, CREDS.user, CREDS.key, CREDS.region)
        self.container = self.plan.container(self.uid % WORKLOAD.containers)
        wire = self.proto.container("PUT", self.container)
        self.client.request(
            "PUT", wire.url, headers=_headers(wire.headers), name="create_container"
        )

    @task
    def step(self) -> None:
        if REQUEST_LIMIT is not None and next(_requests_sent) > REQUEST_LIMIT:
            runner = self.environment.runner
            if runner is not None and runner.state not in _STOPPING:
                # Quitting kills every user's greenlet, this one included, so it runs apart.
                gevent.spawn(runner.quit)
            self.wait()
            return
        op = self.ops[min(len(self.ops) - 1, _bisect(self.cum, self.rng.random() * self.cum[-1]))]
        if op == "put" or not self.objects:
            self._put()
        elif op == "delete":
            obj = self.objects.pop(self.rng.randrange(len(self.objects)))
            self._send("DELETE", "delete", obj)
        else:
            self._send("GET" if op == "get" else "HEAD", op, self.rng.choice(self.objects))

    def _put(self) -> None:
        lo = self.plan._new_object(self.rng)
        obj = Obj(lo.id * 10_000 + self.uid, lo.type.name, lo.cls, lo.size, self.container,
                  f"{lo.name}-u{self.uid}")  # fmt: skip
        self._send("PUT", "put", obj, PAYLOAD.whole(obj.id, obj.size))
        self.objects.append(obj)

    def _send(self, method: str, op: str, obj: Obj, body: bytes | None = None) -> None:
        wire = self.proto.object(method, obj.container, obj.name, obj.cls)
        self.client.request(
            method,
            wire.url,
            data=body,
            headers=_headers(wire.headers),
            name=f"{op} {obj.type} c{obj.cls}",
            context={"type": obj.type, "class": obj.cls, "size": obj.size},
        )


_logins: dict[str, Swift] = {}


def _swift_login(host: str) -> Swift:
    """One login per process (swiftclient: any auth version, or a given token), shared by
    the users: a token is good for all of them, and a login per user would load Keystone."""
    if host not in _logins:
        _logins[host] = Swift.login(host, CREDS)
    return _logins[host]


def _headers(lines: list[str]) -> dict[str, str]:
    out = {}
    for line in lines:
        k, _, v = line.partition(":")
        if v.strip():
            out[k.strip()] = v.strip()
    return out


def _bisect(cum: list[float], x: float) -> int:
    import bisect

    return bisect.bisect_right(cum, x)
