"""Why the proxy failed requests: Fig. 7(c)'s failures by cause, read from its log.

A client sees a failed request as a status code only. The proxy's log says more: each
5xx it answered a client is an access line with a transaction id, and the errors it met
on the way (a storage node's timeout, a node it did not try) are lines naming the same
id. Each failed client request is given the first cause below that one of its lines
shows, so a PUT that waited past the node timeout on one replica and could not connect
to another counts once, as the timeout:

- ``final status timeout``: an object server took longer than ``node_timeout`` to
  answer once the data was sent (its fsync and renames, under load its device queue);
- ``connect timeout``: a node did not accept the connection, or answer
  ``Expect: 100-continue``, within ``conn_timeout``;
- ``read timeout``, ``write timeout``: a transfer stalled past ``node_timeout``;
- ``error-limited``: the proxy tried too few nodes (a GET none, a PUT fewer than a
  quorum) and answered at once, the others being error-limited: that many errors
  (``error_suppression_limit``) within ``error_suppression_interval`` take a node out of
  use for that interval, so a phase of timeouts fails requests of the phase after it
  without a device being slow then;
- ``other``: none of these.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from pathlib import Path

from swift_dss.experiment import swift_logs as log

#: Most specific first: a request showing several counts as the first.
CAUSES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("final status timeout", re.compile(r"Trying to get final status")),
    ("connect timeout", re.compile(r"ConnectionTimeout|Expect: 100-continue")),
    ("read timeout", re.compile(r"ChunkReadTimeout|Trying to read")),
    ("write timeout", re.compile(r"ChunkWriteTimeout|Trying to write")),
    ("error-limited", re.compile(r"returning 503 for \[\]|required connections")),
)
OTHER = "other"
_TXN = re.compile(r"\(txn: (tx[0-9a-f-]+)\)")


def causes(lines: list[str]) -> dict[str, dict[str, int]]:
    """Failed client requests (5xx) per method and cause, from proxy log LINES."""
    seen: dict[str, list[str]] = defaultdict(list)
    failed: list[tuple[str, str]] = []
    for line in lines:
        message = line.split(log.PROXY_PREFIX, 1)[-1]
        fields = message.split()
        if len(fields) > log.SOURCE and fields[log.TXN].startswith("tx"):
            status = fields[log.STATUS]
            if fields[log.SOURCE] == "-" and status.isdigit() and status.startswith("5"):
                failed.append((fields[log.METHOD], fields[log.TXN]))
            continue
        txn = _TXN.search(message)
        if txn:
            seen[txn.group(1)].append(message)
    out: dict[str, Counter[str]] = defaultdict(Counter)
    for method, txn in failed:
        out[method][cause_of(seen.get(txn, []))] += 1
    return _plain(out)


def cause_of(messages: list[str]) -> str:
    for name, pattern in CAUSES:
        if any(pattern.search(m) for m in messages):
            return name
    return OTHER


def from_cluster(cluster_dir: Path) -> dict[str, dict[str, int]]:
    """Causes from every proxy log under a cluster's directory; empty when there is none."""
    return causes(log.lines(cluster_dir, "proxy-server"))


def merged(runs: list[dict[str, dict[str, int]]]) -> dict[str, dict[str, int]]:
    """Several runs' causes (a configuration's repeats) summed."""
    out: dict[str, Counter[str]] = defaultdict(Counter)
    for run in runs:
        for method, counts in run.items():
            out[method].update(counts)
    return _plain(out)


def _plain(counts: dict[str, Counter[str]]) -> dict[str, dict[str, int]]:
    """Per method in name order, its causes most frequent first, as plain dicts (JSON)."""
    return {method: dict(c.most_common()) for method, c in sorted(counts.items())}


def table(entries: list[tuple[str, dict[str, dict[str, int]]]]) -> list[str]:
    """A markdown table of each configuration's failed PUTs and GETs by cause; empty
    when no configuration failed a request at the proxy."""
    if not any(counts for _, counts in entries):
        return []

    def cell(counts: dict[str, int]) -> str:
        return ", ".join(f"{cause} {n}" for cause, n in counts.items()) or "-"

    return [
        "| config | failed PUTs by cause | failed GETs by cause |",
        "|---|---|---|",
        *(f"| {key} | {cell(c.get('PUT', {}))} | {cell(c.get('GET', {}))} |" for key, c in entries),
    ]
