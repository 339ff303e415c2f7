"""95% intervals of one run's figures and of the ratios between two runs, by resampling
the run's own requests (a percentile bootstrap).

A run of the paper's workload is a closed loop: N clients, each sending its next request
as soon as the last one ends. Over a phase the clients are busy the whole time, so the
phase's bandwidth is N x (bytes moved) / (summed request time) and its request rate N /
(mean request time) (Little's law). Resampling the phase's successful requests with
replacement and recomputing these estimators shows how much the figure depends on which
requests the run happened to draw: a few large objects carrying most of the bytes widen
the interval, as they should. The interval is applied to the measured figure as the
spread of the resampled estimator relative to the full sample's, so the edge effects of
a phase's start and end, which the estimator ignores, do not shift it.

It does not see what moves between runs of the same draw (the machine's other load, the
order the cluster served the requests in): `--repeats 3` or more gives Student t
intervals over whole runs for that (swift_dss/experiment/repeats.py).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import numpy as np

from swift_dss.loadgen.stats import Recorder

#: Resamples: the 2.5% and 97.5% quantiles of 2,000 draws move by under 1% between seeds.
DRAWS = 2000
SEED = 20071
#: Columns of a sample matrix.
BYTES, TTFB, LAT = 0, 1, 2

Estimator = Callable[[np.ndarray], np.ndarray]


def _sum(col: int) -> Estimator:
    return lambda m: m[..., col].sum(axis=-1)


def _mean(col: int) -> Estimator:
    return lambda m: m[..., col].mean(axis=-1)


def _p99(col: int) -> Estimator:
    return lambda m: np.percentile(m[..., col], 99, axis=-1)


def _bandwidth(m: np.ndarray) -> np.ndarray:
    """Bytes over summed request time: a closed loop's bandwidth, per client."""
    return _sum(BYTES)(m) / _sum(LAT)(m)


#: figure -> (phase op, estimator over a (draws, n, 3) or (n, 3) matrix).
ESTIMATORS: dict[str, tuple[str, Estimator]] = {
    "put_mbps": ("put", _bandwidth),
    "get_mbps": ("get", _bandwidth),
    "put_ops_per_s": ("put", lambda m: 1 / _mean(LAT)(m)),
    "get_ops_per_s": ("get", lambda m: 1 / _mean(LAT)(m)),
    "put_latency_ms": ("put", _mean(LAT)),
    "get_latency_ms": ("get", _mean(LAT)),
    "get_ttfb_ms": ("get", _mean(TTFB)),
    "put_p99_ms": ("put", _p99(LAT)),
    "get_ttfb_p99_ms": ("get", _p99(TTFB)),
    # Without the VMDK objects, whose few requests carry most of the bytes.
    "put_mbps_excl_vmdk": ("put without VMDK", _bandwidth),
    "get_mbps_excl_vmdk": ("get without VMDK", _bandwidth),
}
#: The object type the `*_excl_vmdk` figures leave out.
EXCLUDED_TYPE = "VMDK"


def phase_requests(recorder: Recorder, op: str, without: str | None = None) -> np.ndarray:
    """(n, 3) matrix of (bytes, ttfb us, latency us) of the successful OP requests of the
    phase named OP, every object type together (the phase rows' figures) except the type
    WITHOUT names."""
    cells = [
        c.done
        for key, c in recorder.cells.items()
        if key[0] == op and key[1] == op and key[2] != without
    ]
    flat = np.concatenate([np.asarray(d, dtype=np.float64) for d in cells]) if cells else []
    return np.asarray(flat, dtype=np.float64).reshape(-1, 3)


def load(path: Path) -> dict[str, np.ndarray]:
    """Per phase op, the requests a run's recorder.json kept; {} for a record without them."""
    return samples(Recorder.from_json(json.loads(path.read_text())))


def samples(recorder: Recorder) -> dict[str, np.ndarray]:
    """Per phase op, the requests RECORDER kept; {} for a record without them."""
    got = {op: phase_requests(recorder, op) for op in ("put", "get")}
    for op in ("put", "get"):
        got[f"{op} without {EXCLUDED_TYPE}"] = phase_requests(recorder, op, EXCLUDED_TYPE)
    return {op: m for op, m in got.items() if len(m)}


def with_excluding(entry: dict[str, Any], samples: dict[str, np.ndarray]) -> dict[str, Any]:
    """ENTRY with its PUT and GET bandwidths without EXCLUDED_TYPE (`excluding`), from its
    own run's SAMPLES: each repeat gets its own, so that repeats combine them as any
    other figure."""
    return {
        **entry,
        **{f"{op}_mbps_excl_vmdk": excluding(entry, samples, op) for op in ("put", "get")},
    }


def excluding(entry: dict[str, object], samples: dict[str, np.ndarray], op: str) -> float | None:
    """ENTRY's OP bandwidth without EXCLUDED_TYPE: the measured bandwidth times the share
    the closed-loop estimator (clients x bytes / summed request time) keeps without those
    requests. Leaving their bytes out of a phase's total over its whole duration would not
    do: the duration is what their own requests took, and two runs of one plan move the
    same bytes, so that ratio would be the phase durations' again."""
    value, whole = entry.get(f"{op}_mbps"), samples.get(op)
    part = samples.get(f"{op} without {EXCLUDED_TYPE}")
    if not isinstance(value, int | float) or whole is None or part is None:
        return None
    return round(float(value) * float(_bandwidth(part)) / float(_bandwidth(whole)), 3)


def relative_draws(samples: np.ndarray, estimator: Estimator, seed: int = SEED) -> np.ndarray:
    """DRAWS values of ESTIMATOR on resamples of SAMPLES, each over its value on SAMPLES."""
    rng = np.random.default_rng(seed)
    whole = float(estimator(samples))
    if not whole:
        return np.ones(DRAWS)
    draws = np.empty(DRAWS)
    step = max(1, 2_000_000 // max(1, len(samples)))  # bounds one batch to ~50 MB
    for start in range(0, DRAWS, step):
        n = min(step, DRAWS - start)
        idx = rng.integers(0, len(samples), size=(n, len(samples)))
        draws[start : start + n] = estimator(samples[idx]) / whole
    return draws


def _interval(value: float, rel: np.ndarray) -> list[float]:
    low, high = np.quantile(rel, [0.025, 0.975])
    return [round(value * float(low), 5), round(value * float(high), 5)]


def figure_cis(
    entry: dict[str, object], samples: dict[str, np.ndarray], figures: Iterable[str]
) -> dict[str, list[float]]:
    """figure -> [low, high]: ENTRY's figure times the 95% range of its relative draws."""
    out: dict[str, list[float]] = {}
    for name in figures:
        value = entry.get(name)
        if name not in ESTIMATORS or not isinstance(value, int | float):
            continue
        op, est = ESTIMATORS[name]
        if op in samples:
            out[name] = _interval(float(value), relative_draws(samples[op], est))
    return out


def matched(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The rows of A and of B that are the same requests, in the same order.

    Two configurations ran the same seeded plan, so a request is known by its object,
    and an object by its size (drawn in bytes, so two objects rarely share one; when
    they do, they are of the same size anyway). Repeated GETs of one object pair in
    order. A request that failed in either run drops out."""
    ia = np.argsort(a[:, BYTES], kind="stable")
    ib = np.argsort(b[:, BYTES], kind="stable")
    sa, sb = a[ia, BYTES], b[ib, BYTES]
    keep_a: list[int] = []
    keep_b: list[int] = []
    i = j = 0
    while i < len(sa) and j < len(sb):
        if sa[i] < sb[j]:
            i += 1
        elif sa[i] > sb[j]:
            j += 1
        else:
            keep_a.append(int(ia[i]))
            keep_b.append(int(ib[j]))
            i += 1
            j += 1
    return a[keep_a], b[keep_b]


def ratio_ci(
    measured: float | None,
    num: dict[str, np.ndarray],
    den: dict[str, np.ndarray],
    metric: str,
) -> list[float] | None:
    """95% interval of MEASURED = num's METRIC / den's; None without samples.

    The two runs are resampled in pairs: each resample draws the same requests (`matched`)
    from both, so which objects were drawn, which moves both runs alike (one large object
    more or less), cancels in the ratio, and what is left is how differently the two
    configurations served the same requests. Runs that share under half their requests
    (not the same plan) are resampled each on its own."""
    if measured is None or metric not in ESTIMATORS:
        return None
    op, est = ESTIMATORS[metric]
    if op not in num or op not in den:
        return None
    a, b = matched(num[op], den[op])
    if len(a) * 2 < min(len(num[op]), len(den[op])):
        rel = relative_draws(num[op], est, SEED) / relative_draws(den[op], est, SEED + 1)
    else:
        rel = relative_draws(np.concatenate([a, b], axis=1), paired_ratio(est), SEED)
    low, high = _interval(measured, rel)
    return [round(low, 4), round(high, 4)]


def paired_ratio(est: Estimator) -> Estimator:
    """The estimator's ratio between the two halves of matched rows side by side."""
    return lambda m: est(m[..., :3]) / est(m[..., 3:])
