"""What a run measured: latency histograms per request group, failures by code, a time series.

Latencies go into HdrHistograms (the hdrhistogram package): exact counts per bucket at 3
significant digits, so histograms from several processes (or runs) merge without losing
percentiles, which averaging per-process percentiles would. Only successful requests enter
the latency histograms; failures are counted by outcome (HTTP status or transport error).
Each successful request is also kept as three integers (bytes, TTFB and latency in us), so
that a single run's figures can be given a per-request bootstrap interval
(swift_dss/experiment/bootstrap.py): 24 bytes a request, 24 MB for a million.
"""

from __future__ import annotations

import math
import resource
from array import array
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from hdrh.histogram import HdrHistogram


def process_cpu_s() -> float:
    """User plus system CPU seconds of this process, the load generator's own cost."""
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


LOWEST_US = 1
HIGHEST_US = 3_600_000_000  # an hour: nothing a run records can be longer
DIGITS = 3

#: (phase, op, type, class, size bucket)
Key = tuple[str, str, str | None, int | None, str | None]


def new_histogram() -> HdrHistogram:
    return HdrHistogram(LOWEST_US, HIGHEST_US, DIGITS)


def is_success(op: str, outcome: str) -> bool:
    if not outcome.isdigit():
        return False
    code = int(outcome)
    # Creating a container that exists answers 202; deleting it twice is a failure like any.
    return 200 <= code < 300


@dataclass
class Cell:
    ops: int = 0
    failures: int = 0
    bytes: int = 0
    codes: Counter[str] = field(default_factory=Counter)
    lat: HdrHistogram = field(default_factory=new_histogram)
    ttfb: HdrHistogram = field(default_factory=new_histogram)
    #: (bytes, ttfb us, latency us) of each successful request, flattened.
    done: array[int] = field(default_factory=lambda: array("q"))

    def merge(self, other: Cell) -> None:
        self.ops += other.ops
        self.failures += other.failures
        self.bytes += other.bytes
        self.codes.update(other.codes)
        self.lat.add(other.lat)
        self.ttfb.add(other.ttfb)
        self.done.extend(other.done)

    def to_json(self) -> dict[str, Any]:
        return {
            "ops": self.ops,
            "failures": self.failures,
            "bytes": self.bytes,
            "codes": dict(self.codes),
            "lat": self.lat.encode().decode(),
            "ttfb": self.ttfb.encode().decode(),
            "done": self.done.tolist(),
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Cell:
        c = cls(d["ops"], d["failures"], d["bytes"], Counter(d["codes"]))
        c.lat.add(HdrHistogram.decode(d["lat"].encode()))
        c.ttfb.add(HdrHistogram.decode(d["ttfb"].encode()))
        c.done.extend(d.get("done", ()))  # absent from records written before it was kept
        return c


#: How a steady state's bytes count an upload in flight at its end: by the share of its
#: time it had run (swift_dss.loadgen.driver), or, in records made before that, by what
#: the client had sent, some of which was still in socket buffers.
UPLOADS_BY_TIME = "by time"
UPLOADS_AS_SENT = "as sent"


class Recorder:
    """Everything one process measured; merge() adds another process's (or run's) record."""

    def __init__(self, t0: float) -> None:
        self.t0 = t0  # wall-clock start of the run, shared by all processes
        self.cells: dict[Key, Cell] = {}
        # (phase, op, second since t0) -> [ops, failures, bytes, latency sum in us]
        self.series: dict[tuple[str, str, int], list[int]] = {}
        self.phases: dict[str, list[float]] = {}  # phase -> [first start, last end] (wall)
        # phase -> per process [start, steady state's end (wall), bytes moved until then]
        self.steady: dict[str, list[list[float]]] = {}
        self.steady_uploads = UPLOADS_BY_TIME

    def record(
        self,
        key: Key,
        outcome: str,
        end_wall: float,
        ttfb_s: float,
        total_s: float,
        nbytes: int,
    ) -> None:
        cell = self.cells.get(key)
        if cell is None:
            cell = self.cells[key] = Cell()
        cell.ops += 1
        cell.codes[outcome] += 1
        lat_us = max(LOWEST_US, min(HIGHEST_US, round(total_s * 1e6)))
        ok = is_success(key[1], outcome)
        if ok:
            ttfb_us = max(LOWEST_US, min(HIGHEST_US, round(ttfb_s * 1e6)))
            cell.bytes += nbytes
            cell.lat.record_value(lat_us)
            cell.ttfb.record_value(ttfb_us)
            cell.done.extend((nbytes, ttfb_us, lat_us))
        else:
            cell.failures += 1
        skey = (key[0], key[1], int(end_wall - self.t0))
        s = self.series.get(skey)
        if s is None:
            s = self.series[skey] = [0, 0, 0, 0]
        s[0] += 1
        if ok:
            s[2] += nbytes
            s[3] += lat_us
        else:
            s[1] += 1

    def phase_window(self, phase: str, start: float, end: float) -> None:
        w = self.phases.get(phase)
        if w is None:
            self.phases[phase] = [start, end]
        else:
            w[0], w[1] = min(w[0], start), max(w[1], end)

    def steady_state(self, phase: str, start: float, end: float, nbytes: int) -> None:
        self.steady.setdefault(phase, []).append([start, end, nbytes])

    def steady_mbps(self, phase: str) -> float | None:
        """The phase's bandwidth while all its transfer slots were busy: each process's
        bytes over its steady state, summed over the processes (which ran side by side)."""
        windows = self.steady.get(phase)
        if not windows:
            return None
        return sum(b / max(end - start, 1e-9) for start, end, b in windows) / 1e6

    def steady_ops_per_s(self, phase: str, op: str) -> float | None:
        """Successful OP requests per second over the phase's steady state, from the
        per-second series (a second cut by the state's end counts in proportion). With
        several processes, over the time all of them were still busy."""
        windows = self.steady.get(phase)
        if not windows:
            return None
        start, end = min(w[0] for w in windows), min(w[1] for w in windows)
        edge = end - self.t0
        whole = math.floor(edge)
        n = 0.0
        for (p, o, sec), s in self.series.items():
            if p != phase or o != op:
                continue
            if sec < whole:
                n += s[0] - s[1]
            elif sec == whole:
                n += (s[0] - s[1]) * (edge - whole)
        return n / max(end - start, 1e-9)

    def merge(self, other: Recorder) -> None:
        for k, c in other.cells.items():
            if k in self.cells:
                self.cells[k].merge(c)
            else:
                self.cells[k] = c
        for k, s in other.series.items():
            mine = self.series.setdefault(k, [0, 0, 0, 0])
            for i in range(4):
                mine[i] += s[i]
        for p, (start, end) in other.phases.items():
            self.phase_window(p, start, end)
        for p, windows in other.steady.items():
            self.steady.setdefault(p, []).extend(list(w) for w in windows)
        if other.steady_uploads != UPLOADS_BY_TIME:
            self.steady_uploads = other.steady_uploads

    def to_json(self) -> dict[str, Any]:
        return {
            "t0": self.t0,
            "cells": [[list(k), c.to_json()] for k, c in self.cells.items()],
            "series": [[list(k), v] for k, v in self.series.items()],
            "phases": self.phases,
            "steady": self.steady,
            "steady_uploads": self.steady_uploads,
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Recorder:
        r = cls(d["t0"])
        for k, c in d["cells"]:
            r.cells[tuple(k)] = Cell.from_json(c)  # type: ignore[assignment]
        for k, v in d["series"]:
            r.series[tuple(k)] = v  # type: ignore[index]
        r.phases = {p: list(w) for p, w in d["phases"].items()}
        # Absent from records written before it was kept.
        r.steady = {p: [list(w) for w in ws] for p, ws in d.get("steady", {}).items()}
        r.steady_uploads = d.get("steady_uploads", UPLOADS_AS_SENT)
        return r

    # --- reports -----------------------------------------------------------------------------

    def duration(self, phase: str) -> float:
        w = self.phases.get(phase)
        return max(w[1] - w[0], 1e-9) if w else float("nan")

    def grouped(self, depth: int) -> dict[tuple[Any, ...], Cell]:
        """Cells merged over the key's fields after the first ``depth``."""
        out: dict[tuple[Any, ...], Cell] = {}
        for k, c in self.cells.items():
            g = k[:depth]
            if g not in out:
                out[g] = Cell()
            out[g].merge(c)
        return out

    def rows(self) -> list[dict[str, Any]]:
        """The rows of docs/loadgen.md "Output": phase x op x type x class, then phase x op."""
        rows = [
            self._row(k, c)
            for k, c in sorted(self.grouped(4).items(), key=_sort_key)
            if k[2] is not None  # container requests have no type: the summary row says all
        ]
        rows += [
            self._row((*k, None, None), c)
            for k, c in sorted(self.grouped(2).items(), key=_sort_key)
        ]
        return sorted(rows, key=lambda r: (self._phase_order(r["phase"]), r["op"]))

    def size_rows(self) -> list[dict[str, Any]]:
        rows = []
        for k, c in sorted(self.cells.items(), key=_sort_key):
            row = self._row(k[:4], c)
            row["size_bucket"] = k[4]
            rows.append(row)
        return rows

    def series_rows(self) -> list[dict[str, Any]]:
        return [
            {
                "second": sec,
                "phase": phase,
                "op": op,
                "ops": s[0],
                "failures": s[1],
                "mbps": s[2] / 1e6,
                "lat_mean_ms": s[3] / max(1, s[0] - s[1]) / 1000,
            }
            for (phase, op, sec), s in sorted(self.series.items(), key=lambda kv: kv[0][2])
        ]

    def _phase_order(self, phase: str) -> float:
        w = self.phases.get(phase)
        return w[0] if w else math.inf

    def _row(self, k: tuple[Any, ...], c: Cell) -> dict[str, Any]:
        phase, op, otype, cls = k
        dur = self.duration(phase)
        ok = c.ops - c.failures
        lat, ttfb = c.lat, c.ttfb
        has = lat.get_total_count() > 0

        def pct(h: HdrHistogram, p: float) -> float | None:
            return round(h.get_value_at_percentile(p) / 1000, 3) if has else None

        row = {
            "phase": phase,
            "op": op,
            "type": otype,
            "class": cls,
            "ops": c.ops,
            "failures": c.failures,
            "codes": dict(sorted(c.codes.items())),
            "bytes": c.bytes,
            "duration_s": round(dur, 3),
            "mbps": round(c.bytes / dur / 1e6, 6),
            "ops_per_s": round(ok / dur, 3),
            "lat_mean_ms": round(lat.get_mean_value() / 1000, 3) if has else None,
            "lat_p50_ms": pct(lat, 50),
            "lat_p90_ms": pct(lat, 90),
            "lat_p99_ms": pct(lat, 99),
            "lat_p999_ms": pct(lat, 99.9),
            "lat_max_ms": round(lat.get_max_value() / 1000, 3) if has else None,
            "ttfb_mean_ms": round(ttfb.get_mean_value() / 1000, 3) if has else None,
            "ttfb_p99_ms": pct(ttfb, 99),
        }
        # The steady state is the whole phase's, every type together: a row of one op
        # has it only when the phase has no other.
        if otype is None and all(k[1] == op for k in self.cells if k[0] == phase):
            steady = self.steady_mbps(phase)
            row["steady_mbps"] = None if steady is None else round(steady, 6)
            rate = self.steady_ops_per_s(phase, op)
            row["steady_ops_per_s"] = None if rate is None else round(rate, 3)
        return row


def _sort_key(item: tuple[tuple[Any, ...], Cell]) -> tuple[str, ...]:
    return tuple("" if v is None else str(v) for v in item[0])


def merge_all(recorders: Iterable[Recorder]) -> Recorder:
    it = iter(recorders)
    first = next(it)
    for r in it:
        first.merge(r)
    return first
