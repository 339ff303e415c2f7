"""Where a PUT waited, step by step: the put_timing lines of the proxy and of the object
servers, joined per transaction.

A stream's PUT is one line at the proxy and one per replica at the object servers (see
:mod:`swift_dss.put_timing`). Joined by transaction id, on the testbed's one clock, they
give each PUT's timeline:

- ``to_replica``: from the proxy's start to the first object server's (the proxy's account
  and container lookups, and its connection);
- ``backends_ready``: from the proxy's start until it asks for the client's body, which it
  does once every replica has answered 100-continue;
- per replica: ``create`` (its temporary file, before it asks for the body),
  ``body_wait`` (from asking to the first bytes), ``body`` (first to last bytes) and
  ``commit`` (last bytes to reply: fsync, renames, container update);
- ``replica_1st/2nd/3rd``: when each replica replied, in order, after the proxy's start;
- ``after_last``: from the last replica's reply to the proxy's;
- ``proxy``: the proxy's whole time.

Every figure is a median over the stream's PUTs, in emulated ms (real time / K).
"""

from __future__ import annotations

import json
import statistics
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from swift_dss.experiment import swift_logs
from swift_dss.experiment.server_times import stream_of
from swift_dss.put_timing import LOG_TAG

_MARK = f"{LOG_TAG} {{"
STEPS = ("to_replica", "backends_ready", "create", "body_wait", "body", "commit")
ORDER = ("replica_1st", "replica_2nd", "replica_3rd")


def records(lines: list[str]) -> list[dict[str, Any]]:
    """The put_timing records in a server's log LINES; a damaged line is skipped."""
    out = []
    for line in lines:
        at = line.find(_MARK)
        if at < 0:
            continue
        try:
            rec = json.loads(line[at + len(LOG_TAG) + 1 :])
        except ValueError:
            continue
        if isinstance(rec, dict) and isinstance(rec.get("start"), int | float):
            out.append(rec)
    return out


@dataclass
class Put:
    """One PUT: its proxy record and its replicas' records, in the order they replied."""

    proxy: dict[str, Any]
    replicas: list[dict[str, Any]] = field(default_factory=list)

    def steps(self) -> dict[str, list[float]]:
        """Seconds of each step; a per-replica step has a value per replica that got there."""
        p = self.proxy
        out: dict[str, list[float]] = defaultdict(list)
        if self.replicas:
            out["to_replica"].append(min(r["start"] for r in self.replicas) - p["start"])
        if p.get("ready") is not None:
            out["backends_ready"].append(p["ready"])
        for r in self.replicas:
            marks = [0.0, r.get("ready"), r.get("body"), r.get("body_end"), r.get("done")]
            for name, a, b in zip(STEPS[2:], marks, marks[1:], strict=False):
                if a is not None and b is not None:
                    out[name].append(b - a)
        ends = sorted(r["start"] + r["done"] - p["start"] for r in self.replicas)
        for name, end in zip(ORDER, ends, strict=False):
            out[name].append(end)
        if ends:
            out["after_last"].append(p["done"] - ends[-1])
        out["proxy"].append(p["done"])
        return out


def join(proxy: list[dict[str, Any]], objects: list[dict[str, Any]]) -> list[Put]:
    """Every successful PUT the proxy timed, with the object servers' successful replicas
    of the same transaction."""
    replicas: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for rec in objects:
        if rec.get("status") == 201 and rec.get("done") is not None:
            replicas[rec["txn"]].append(rec)
    puts = []
    for rec in proxy:
        if rec.get("status") == 201 and rec.get("done") is not None:
            reps = sorted(replicas.get(rec["txn"], []), key=lambda r: r["start"] + r["done"])
            puts.append(Put(rec, reps))
    return puts


def from_cluster(cluster_dir: Path) -> list[Put]:
    """The joined PUTs of every put_timing line under a cluster's directory."""
    return join(
        records(swift_logs.lines(cluster_dir, "proxy-server")),
        records(swift_logs.lines(cluster_dir, "object-server")),
    )


def by_stream(puts: list[Put], dilation: int = 1) -> dict[str, dict[str, Any]]:
    """{stream: {"n": PUTs, step: median emulated ms}} of the traffic study's streams."""
    per: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    counts: dict[str, int] = defaultdict(int)
    for put in puts:
        stream = stream_of(put.proxy.get("path", ""), 1)
        if stream is None:
            continue
        counts[stream] += 1
        for name, seconds in put.steps().items():
            per[stream][name].extend(seconds)
    return {
        stream: {
            "n": counts[stream],
            **{
                name: round(statistics.median(s) * 1000 / dilation, 1)
                for name, s in sorted(steps.items())
            },
        }
        for stream, steps in sorted(per.items())
    }


COLUMNS = (
    ("proxy", "proxy"),
    ("to_replica", "to 1st replica"),
    ("backends_ready", "backends ready"),
    ("create", "create"),
    ("body_wait", "wait for body"),
    ("body", "body"),
    ("commit", "commit"),
    ("replica_1st", "1st / 2nd / 3rd replica done"),
    ("after_last", "proxy after last"),
)


def table(runs: list[tuple[str, dict[str, Any] | None]], stream: str) -> list[str]:
    """A markdown table, a row per run, of STREAM's PUT steps (median emulated ms); empty
    when no run timed them."""
    rows = []
    for name, waits in runs:
        f = (waits or {}).get(stream)
        if not f:
            continue
        cells = []
        for key, _ in COLUMNS:
            if key == "replica_1st":
                cells.append(" / ".join(_ms(f.get(k)) for k in ORDER))
            else:
                cells.append(_ms(f.get(key)))
        rows.append(f"| {name} | {f['n']} | " + " | ".join(cells) + " |")
    if not rows:
        return []
    head = " | ".join(label for _, label in COLUMNS)
    return [f"| run | PUTs | {head} |", "|---|" + "---:|" * (len(COLUMNS) + 1), *rows]


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f}"
