"""Where a PUT waited, step by step: the put_timing lines of the proxy, the object servers
and the container servers, joined per transaction.

A stream's PUT is one line at the proxy, one per replica at the object servers, and one
per container update at the container servers (see :mod:`swift_dss.put_timing`). Joined
by transaction id, on the testbed's one clock, they give each PUT's timeline:

- ``to_replica``, ``to_last_replica``: from the proxy's start to the first and to the last
  object server's (the proxy's account and container lookups, its connections, and the
  wait for a free moment of the object server's worker);
- ``backends_ready``: from the proxy's start until it asks for the client's body, which it
  does once every replica has answered 100-continue;
- per replica: ``create`` (its temporary file, before it asks for the body),
  ``body_wait`` (from asking until its first read returned: a read asks for
  network_chunk_size bytes and returns when they or the body's end are in, so for an
  object smaller than that this is its whole transfer), ``body`` (first read to last) and
  ``commit`` (last bytes to reply: fsync, renames, container update);
- the commit's container update, where the container servers time it too (matched to the
  replica whose node sent it): ``to_update`` (from the replica's last bytes until the
  container server has the update: the local fsync and renames, a connection, the
  request), ``update`` (the container server's own time) and ``after_update`` (from its
  reply until the replica's);
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
SERVERS = ("proxy", "object", "container")
STEPS = ("to_replica", "to_last_replica", "backends_ready", "create", "body_wait", "body", "commit")
UPDATE_STEPS = ("to_update", "update", "after_update")
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
    """One PUT: its proxy record, its replicas' records in the order they replied, and the
    container updates they sent."""

    proxy: dict[str, Any]
    replicas: list[dict[str, Any]] = field(default_factory=list)
    updates: list[dict[str, Any]] = field(default_factory=list)

    def update_of(self, replica: dict[str, Any]) -> dict[str, Any] | None:
        """The container update REPLICA's node sent, when one was timed."""
        node = replica.get("server")
        return next((u for u in self.updates if node and u.get("remote") == node), None)

    def steps(self) -> dict[str, list[float]]:
        """Seconds of each step; a per-replica step has a value per replica that got there."""
        p = self.proxy
        out: dict[str, list[float]] = defaultdict(list)
        if self.replicas:
            starts = [r["start"] - p["start"] for r in self.replicas]
            out["to_replica"].append(min(starts))
            out["to_last_replica"].append(max(starts))
        if p.get("ready") is not None:
            out["backends_ready"].append(p["ready"])
        for r in self.replicas:
            marks = [0.0, r.get("ready"), r.get("body"), r.get("body_end"), r.get("done")]
            for name, a, b in zip(STEPS[3:], marks, marks[1:], strict=False):
                if a is not None and b is not None:
                    out[name].append(b - a)
            u = self.update_of(r)
            if u is not None and r.get("body_end") is not None:
                out["to_update"].append(u["start"] - r["start"] - r["body_end"])
                out["update"].append(u["done"])
                out["after_update"].append(r["start"] + r["done"] - u["start"] - u["done"])
        ends = sorted(r["start"] + r["done"] - p["start"] for r in self.replicas)
        for name, end in zip(ORDER, ends, strict=False):
            out[name].append(end)
        if ends:
            out["after_last"].append(p["done"] - ends[-1])
        out["proxy"].append(p["done"])
        return out


def _by_txn(records: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for rec in records:
        if rec.get("status") == 201 and rec.get("done") is not None:
            out[rec["txn"]].append(rec)
    return out


def join(
    proxy: list[dict[str, Any]],
    objects: list[dict[str, Any]],
    containers: list[dict[str, Any]] | None = None,
) -> list[Put]:
    """Every successful PUT the proxy timed, with the object servers' successful replicas
    of the same transaction and the container updates they sent."""
    replicas, updates = _by_txn(objects), _by_txn(containers or [])
    puts = []
    for rec in _by_txn(proxy).values():
        for p in rec:
            reps = sorted(replicas.get(p["txn"], []), key=lambda r: r["start"] + r["done"])
            puts.append(Put(p, reps, updates.get(p["txn"], [])))
    return sorted(puts, key=lambda put: put.proxy["start"])


def joined(cluster_dir: Path) -> list[Put]:
    """The joined PUTs of every put_timing line under a cluster's directory."""
    return join(
        *(records(swift_logs.lines(cluster_dir, f"{s}-server")) for s in SERVERS),
    )


#: The moments whose share within 100 ms is counted: the paper's Fig. 11 counts the
#: client's, which is the proxy's; the replicas' say how many a quorum of them, or the
#: fastest, would have finished in time.
WITHIN = ("proxy", *ORDER)


def by_stream(puts: list[Put], dilation: int = 1) -> dict[str, dict[str, Any]]:
    """{stream: {"n": PUTs, step: median emulated ms, "within_100ms": {moment: share}}} of
    the traffic study's streams."""
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
            "within_100ms": {
                name: round(sum(t * 1000 / dilation < 100 for t in steps[name]) / counts[stream], 4)
                for name in WITHIN
                if name in steps
            },
        }
        for stream, steps in sorted(per.items())
    }


def from_cluster(cluster_dir: Path, dilation: int = 1) -> dict[str, dict[str, Any]]:
    """by_stream of the PUTs under a cluster's directory, as server_times.from_cluster
    reads the same logs' access lines."""
    return by_stream(joined(cluster_dir), dilation)


COLUMNS = (
    ("proxy", "proxy"),
    ("to_replica", "to 1st / last replica"),
    ("backends_ready", "backends ready"),
    ("create", "create"),
    ("body_wait", "wait for body"),
    ("body", "body"),
    ("commit", "commit"),
    ("to_update", "of which: to update / update / after"),
    ("replica_1st", "1st / 2nd / 3rd replica done"),
    ("after_last", "proxy after last"),
    ("within_100ms", "<100 ms: proxy / 1st / 2nd / 3rd"),
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
            elif key == "within_100ms":
                shares = f.get(key) or {}
                cells.append(" / ".join(_pct(shares.get(k)) for k in WITHIN))
            elif key == "to_update":
                cells.append(" / ".join(_ms(f.get(k)) for k in UPDATE_STEPS))
            elif key == "to_replica":
                cells.append(f"{_ms(f.get(key))} / {_ms(f.get('to_last_replica'))}")
            else:
                cells.append(_ms(f.get(key)))
        rows.append(f"| {name} | {f['n']} | " + " | ".join(cells) + " |")
    if not rows:
        return []
    head = " | ".join(label for _, label in COLUMNS)
    return [f"| run | PUTs | {head} |", "|---|" + "---:|" * (len(COLUMNS) + 1), *rows]


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f}"


def _pct(share: float | None) -> str:
    return "-" if share is None else f"{100 * share:.0f}%"
