"""Workload files: object types with shares, size distributions and classes; ordered phases.

A workload is YAML (see swift_dss/loadgen/workloads/*.yaml and docs/loadgen.md)::

    name: paper
    seed: 1
    containers: 100
    concurrency: 32
    types:
      - name: Files
        share: 60                     # relative weight among the types
        class: 25                     # or class_by_size: [[4KiB, 11], ..., [null, 21]]
        min_size: 1KiB                # lower edge of the first bucket
        sizes: [[64KiB, 79], [512KiB, 93], ...]   # CDF: [upper edge, cumulative %]
    large_objects: {above: 10MiB, class: 31}      # optional, overrides every type's class
    phases:
      - {name: create, op: create_containers}
      - {name: put, op: put, count: 26000}
      - {name: get, op: get, count: 100000}
      - {name: mixed, mix: {get: 2, put: 1}, duration: 60s}
      - {name: delete, op: delete}                # count omitted: every live object

Sizes are drawn bucket by bucket from the CDF and uniformly inside the bucket
(``interpolate: linear``), log-uniformly (``log``), or as the bucket's upper edge (``none``,
for tables of discrete sizes). ``scale`` multiplies every drawn size: the workload shrinks
but keeps its shape, and the reported size bucket and the large-object rule still use the
unscaled size.
"""

from __future__ import annotations

import bisect
import math
import random
from dataclasses import dataclass, field, replace
from importlib.resources import files
from pathlib import Path
from typing import Any

import yaml

from swift_dss.formats import check_class
from swift_dss.sizes import format_size, parse_size, shown

#: Operations a phase may issue. create/delete_containers touch containers, the rest objects.
OBJECT_OPS = ("put", "get", "head", "delete")
CONTAINER_OPS = ("create_containers", "delete_containers")
#: The most clients, processes and containers a run takes, as the `loadgen run` options.
LIMITS = {"concurrency": 100_000, "processes": 1024, "containers": 100_000}
#: The most requests a phase may make: what a 64-bit counter holds.
MAX_COUNT = 2**63 - 1


class WorkloadError(ValueError):
    """A workload file that cannot be run, with the place of the fault in the message."""


@dataclass(frozen=True)
class SizeBucket:
    low: int  # exclusive, except for the first bucket
    high: int  # inclusive
    label: str  # "<=64 KiB", used in reports


@dataclass(frozen=True)
class ObjectType:
    name: str
    share: float
    buckets: tuple[SizeBucket, ...]
    cdf: tuple[float, ...]  # cumulative probability at the end of each bucket, last == 1
    cls: int | None = None
    class_by_size: tuple[tuple[int | None, int], ...] = ()  # (max size or None, class)
    log_uniform: bool = False
    point_masses: bool = False  # every size is a bucket's upper edge (discrete tables)

    def draw(self, rng: random.Random) -> tuple[int, SizeBucket]:
        """An unscaled size and its bucket."""
        # bisect_right never lands on a bucket of probability 0 (equal cumulative values).
        i = min(bisect.bisect_right(self.cdf, rng.random()), len(self.buckets) - 1)
        b = self.buckets[i]
        lo = max(b.low + (1 if i else 0), 1)
        if self.point_masses or b.high <= lo:
            return b.high, b
        if self.log_uniform:
            return int(math.exp(rng.uniform(math.log(lo), math.log(b.high)))), b
        return rng.randint(lo, b.high), b

    def class_for(self, size: int) -> int | None:
        for limit, cls in self.class_by_size:
            if limit is None or size <= limit:
                return cls
        return self.cls


@dataclass(frozen=True)
class Phase:
    name: str
    mix: tuple[tuple[str, float], ...]  # (op, weight); one entry for a plain phase
    count: int | None = None  # requests in the phase; None with no duration: run to exhaustion
    duration: float | None = None  # seconds
    rate: float | None = None  # requests/s cap (open loop); None: as fast as concurrency allows

    @property
    def op(self) -> str:
        return self.mix[0][0] if len(self.mix) == 1 else "mix"


@dataclass(frozen=True)
class Workload:
    name: str
    types: tuple[ObjectType, ...]
    phases: tuple[Phase, ...]
    containers: int = 100
    concurrency: int = 16
    processes: int = 1
    seed: int = 1
    scale: float = 1.0
    timeout: float = 60.0
    container_prefix: str = "loadgen"
    large_above: int | None = None
    large_class: int | None = None
    source: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    def with_options(
        self,
        scale: float | None = None,
        count_scale: float | None = None,
        seed: int | None = None,
        concurrency: int | None = None,
        processes: int | None = None,
        containers: int | None = None,
        timeout: float | None = None,
        duration_scale: float | None = None,
    ) -> Workload:
        """The workload with command-line overrides; ``count_scale`` shrinks every phase's
        request count (at least one request), ``duration_scale`` every duration."""
        for name, factor in (("count_scale", count_scale), ("duration_scale", duration_scale)):
            if factor is not None and not 0 < factor < math.inf:
                raise WorkloadError(f"options: {name} must be a finite number above 0")
        phases = self.phases
        if count_scale is not None or duration_scale is not None:
            phases = tuple(
                replace(
                    p,
                    count=None if p.count is None else _scaled_count(p, count_scale or 1),
                    duration=None if p.duration is None else p.duration * (duration_scale or 1),
                )
                for p in phases
            )
        w = replace(
            self,
            phases=phases,
            scale=self.scale if scale is None else scale,
            seed=self.seed if seed is None else seed,
            concurrency=self.concurrency if concurrency is None else concurrency,
            processes=self.processes if processes is None else processes,
            containers=self.containers if containers is None else containers,
            timeout=self.timeout if timeout is None else timeout,
        )
        _check_numbers(w, "options")
        return w

    def class_for(self, otype: ObjectType, size: int) -> int | None:
        if self.large_above is not None and size > self.large_above:
            return self.large_class
        return otype.class_for(size)


def _scaled_count(phase: Phase, factor: float) -> int:
    """PHASE's count times FACTOR, at least one request."""
    count = (phase.count or 0) * factor
    if not count <= MAX_COUNT:
        raise WorkloadError(
            f"options: count_scale makes phase {phase.name!r} {count:g} requests, "
            f"more than {MAX_COUNT}"
        )
    return max(1, round(count))


# --- loading ---------------------------------------------------------------------------------


def shipped() -> dict[str, Path]:
    """Workloads that ship with the package, by name."""
    root = files("swift_dss.loadgen").joinpath("workloads")
    return {Path(p.name).stem: Path(str(p)) for p in root.iterdir() if p.name.endswith(".yaml")}


def load(name_or_path: str | Path) -> Workload:
    """A workload from a YAML file, or a shipped one by name (``paper``, ``specsfs``, ...)."""
    path = Path(name_or_path)
    if not path.exists():
        known = shipped()
        if str(name_or_path) not in known:
            raise WorkloadError(
                f"{name_or_path}: no such file and no shipped workload of that name "
                f"(shipped: {', '.join(sorted(known))})"
            )
        path = known[str(name_or_path)]
    if path.is_dir():
        raise WorkloadError(f"{path}: a directory, not a workload file")
    try:
        data = yaml.safe_load(path.read_text())
    except OSError as err:
        raise WorkloadError(f"{path}: cannot read it: {err.strerror or err}") from None
    except UnicodeDecodeError as err:
        raise WorkloadError(f"{path}: not UTF-8 text (byte {err.start})") from None
    except (yaml.YAMLError, ValueError) as err:
        # yaml reads an integer of thousands of digits with int(), which refuses it.
        raise WorkloadError(f"{path}: not YAML: {err}") from err
    return parse(data, str(path))


def parse(data: Any, where: str = "workload") -> Workload:
    if not isinstance(data, dict):
        raise WorkloadError(f"{where}: expected a mapping at the top")
    known = {
        "name", "seed", "containers", "concurrency", "processes", "scale", "timeout",
        "container_prefix", "types", "phases", "large_objects", "description",
    }  # fmt: skip
    unknown = set(data) - known
    if unknown:
        raise WorkloadError(f"{where}: unknown keys {', '.join(sorted(unknown))}")
    types = tuple(_type(t, f"{where}: types[{i}]") for i, t in enumerate(_list(data, "types")))
    if not types:
        raise WorkloadError(f"{where}: at least one object type is needed")
    if len({t.name for t in types}) != len(types):
        raise WorkloadError(f"{where}: object type names must be unique")
    if not any(t.share > 0 for t in types):
        raise WorkloadError(f"{where}: types: every share is 0, so no object can be drawn")
    phases = tuple(_phase(p, f"{where}: phases[{i}]") for i, p in enumerate(_list(data, "phases")))
    if not phases:
        raise WorkloadError(f"{where}: at least one phase is needed")
    names = [p.name for p in phases]
    if len(set(names)) != len(names):
        # Each phase's requests, windows and CPU are recorded under its name.
        repeated = next(n for n in names if names.count(n) > 1)
        raise WorkloadError(f"{where}: two phases are named {repeated!r}: give each its own name")
    large = data.get("large_objects") or {}
    if not isinstance(large, dict) or not set(large) <= {"above", "class"}:
        raise WorkloadError(f"{where}: large_objects is a mapping of above and class")
    try:
        w = Workload(
            name=_name(data.get("name") or Path(where).stem, "name"),
            types=types,
            phases=phases,
            containers=_whole(data.get("containers", 100), "containers"),
            concurrency=_whole(data.get("concurrency", 16), "concurrency"),
            processes=_whole(data.get("processes", 1), "processes"),
            seed=_whole(data.get("seed", 1), "seed"),
            scale=_finite(data.get("scale", 1.0), "scale"),
            timeout=_seconds(data.get("timeout", 60), "timeout"),
            container_prefix=_name(data.get("container_prefix", "loadgen"), "container_prefix"),
            large_above=parse_size(large["above"]) if "above" in large else None,
            large_class=check_class(large["class"], what="large_objects.class")
            if "class" in large
            else None,
            source=where,
        )
    except (TypeError, ValueError, KeyError) as err:
        raise WorkloadError(f"{where}: {err}") from err
    _check_numbers(w, where)
    return w


def _check_numbers(w: Workload, where: str) -> None:
    for name, most in LIMITS.items():
        if not 1 <= (value := getattr(w, name)) <= most:
            raise WorkloadError(f"{where}: {name} must be >= 1 and at most {most}, not {value}")
    for p in w.phases:
        if p.duration is not None and not math.isfinite(p.duration):
            raise WorkloadError(f"{where}: phase {p.name!r}: its duration is not finite")
    if not 0 < w.scale < math.inf or not 0 < w.timeout < math.inf:
        raise WorkloadError(f"{where}: scale and timeout must be finite numbers above 0")
    if not all(c.isalnum() or c in "-_." for c in w.container_prefix):
        raise WorkloadError(f"{where}: container_prefix may hold letters, digits, - _ . only")


def _list(data: dict[str, Any], key: str) -> list[Any]:
    value = data.get(key) or []
    if not isinstance(value, list):
        raise WorkloadError(f"{key} must be a list")
    return value


def _seconds(value: Any, what: str) -> float:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return _finite(value, what)
    text = str(value).strip()
    number, mult = text, 1.0
    for suffix, factor in (("ms", 0.001), ("s", 1), ("m", 60), ("h", 3600)):
        if text.endswith(suffix) and text[: -len(suffix)].replace(".", "", 1).isdigit():
            number, mult = text[: -len(suffix)], factor
            break
    if not number.replace(".", "", 1).isdigit():
        raise WorkloadError(f"{shown(value)} is not a duration such as 60, 60s, 500ms or 2m")
    # float() reads a number of hundreds of digits as infinity: a phase that never ends.
    seconds = float(number) * mult
    if not math.isfinite(seconds):
        raise WorkloadError(f"{what} must be a finite number of seconds, not {shown(value)}")
    return seconds


# YAML hands over whatever the file holds: int() and float() would take True for 1, 1.5
# for 1, and nan or inf for numbers.
def _whole(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise WorkloadError(f"{what} must be a whole number, not {value!r}")
    return value


def _finite(value: Any, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise WorkloadError(f"{what} must be a finite number, not {value!r}")
    try:
        number = float(value)
    except OverflowError:  # an integer beyond any float
        number = math.inf
    if not math.isfinite(number):
        raise WorkloadError(f"{what} must be a finite number, not {shown(value)}")
    return number


def _name(value: Any, what: str) -> str:
    if isinstance(value, bool) or not isinstance(value, str | int) or value == "":
        raise WorkloadError(f"{what} must be a name, not {value!r}")
    return str(value)


def _type(data: Any, where: str) -> ObjectType:
    if not isinstance(data, dict) or "name" not in data:
        raise WorkloadError(f"{where}: an object type needs at least a name")
    try:
        share = _finite(data.get("share", 1), f"{where}: share")
        min_size = parse_size(data.get("min_size", 1))
        points = data.get("sizes")
        if points is None and "size" in data:
            points = [[data["size"], 100]]
        if not points:
            raise WorkloadError(f"{where}: sizes (a CDF table) or size is needed")
        buckets, cdf = _cdf(points, min_size, where)
        cls = None if data.get("class") is None else check_class(data["class"])
        by_size = tuple(
            (None if m is None else parse_size(m), check_class(c, what="class_by_size class"))
            for m, c in _pairs(data.get("class_by_size") or [], f"{where}: class_by_size")
        )
        interp = str(data.get("interpolate", "linear"))
        if interp not in ("linear", "log", "none"):
            raise WorkloadError(f"{where}: interpolate is linear, log or none")
    except WorkloadError:
        raise
    except (TypeError, ValueError) as err:
        raise WorkloadError(f"{where}: {err}") from err
    if share < 0:
        raise WorkloadError(f"{where}: share must not be negative")
    return ObjectType(
        _name(data["name"], f"{where}: name"), share, buckets, cdf, cls, by_size,
        interp == "log", interp == "none",
    )  # fmt: skip


def _pairs(value: Any, what: str) -> list[tuple[Any, Any]]:
    if not isinstance(value, list) or not all(
        isinstance(p, list | tuple) and len(p) == 2 for p in value
    ):
        raise WorkloadError(f"{what} is a list of [size, class] pairs")
    return [(p[0], p[1]) for p in value]


def _cdf(
    points: list[Any], min_size: int, where: str
) -> tuple[tuple[SizeBucket, ...], tuple[float, ...]]:
    """Buckets and normalised cumulative probabilities; empty buckets are kept (shares 0) so
    that the table reads like the paper's, but never drawn."""
    buckets: list[SizeBucket] = []
    cdf: list[float] = []
    low, last = min_size, 0.0
    for point in points:
        if not isinstance(point, list | tuple) or len(point) != 2:
            raise WorkloadError(f"{where}: each CDF point is [upper size, cumulative percent]")
        high, cum = parse_size(point[0]), _finite(point[1], f"{where}: a cumulative percent")
        if cum > 100:
            raise WorkloadError(f"{where}: cumulative percents go up to 100 ({point})")
        if high < low or cum < last:
            raise WorkloadError(f"{where}: CDF points must increase ({point})")
        buckets.append(SizeBucket(low, high, f"<={format_size(high)}"))
        cdf.append(cum)
        low, last = high, cum
    if last <= 0:
        raise WorkloadError(f"{where}: the CDF never rises above 0")
    # Normalise: a table that adds up to 99% (rounding in the paper) still draws.
    return tuple(buckets), tuple(c / last for c in cdf)


def _phase(data: Any, where: str) -> Phase:
    if not isinstance(data, dict):
        raise WorkloadError(f"{where}: a phase is a mapping")
    unknown = set(data) - {"name", "op", "mix", "count", "duration", "rate"}
    if unknown:
        raise WorkloadError(f"{where}: unknown keys {', '.join(sorted(unknown))}")
    if ("op" in data) == ("mix" in data):
        raise WorkloadError(f"{where}: a phase has either op or mix")
    if "op" in data:
        mix: tuple[tuple[str, float], ...] = ((str(data["op"]), 1.0),)
    else:
        if not isinstance(data["mix"], dict) or not data["mix"]:
            raise WorkloadError(f"{where}: mix maps operations to weights")
        try:
            mix = tuple((str(k), _finite(v, f"the weight of {k}")) for k, v in data["mix"].items())
        except WorkloadError as err:
            raise WorkloadError(f"{where}: {err}") from None
        if any(op in CONTAINER_OPS for op, _ in mix):
            raise WorkloadError(f"{where}: container operations cannot be mixed")
        if any(w < 0 for _, w in mix) or sum(w for _, w in mix) <= 0:
            raise WorkloadError(f"{where}: mix weights must be >= 0 and not all 0")
    for op, _ in mix:
        if op not in OBJECT_OPS + CONTAINER_OPS:
            raise WorkloadError(
                f"{where}: unknown op {op!r} (one of {', '.join(OBJECT_OPS + CONTAINER_OPS)})"
            )
    try:
        count = None if data.get("count") is None else _whole(data["count"], "count")
        duration = None if data.get("duration") is None else _seconds(data["duration"], "duration")
        rate = None if data.get("rate") is None else _finite(data["rate"], "rate")
    except (TypeError, ValueError) as err:
        raise WorkloadError(f"{where}: {err}") from err
    if (count is not None and count < 0) or (duration is not None and duration <= 0):
        raise WorkloadError(f"{where}: count must be >= 0 and duration > 0")
    if count is not None and count > MAX_COUNT:
        raise WorkloadError(f"{where}: count must be at most {MAX_COUNT}")
    if rate is not None and rate <= 0:
        raise WorkloadError(f"{where}: rate must be positive")
    unbounded = count is None and duration is None
    if unbounded and any(op in ("put", "get", "head") for op, _ in mix):
        raise WorkloadError(f"{where}: a put/get/head phase needs a count or a duration")
    op0 = mix[0][0]
    return Phase(_name(data.get("name") or op0, f"{where}: name"), mix, count, duration, rate)
