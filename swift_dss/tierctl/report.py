"""What a mounted tier reports: `dss-tier stats --json` (per-class cache counters, per-device
activity) and `dss-tier dump --json` (the cache's content by class), as typed results.

Each result keeps the document as printed in `raw`, for callers that store it as JSON. The
fields are those of tier/crates/dss-tier/src/stats.rs; classes are keyed by their number.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Self

from swift_dss.tierctl.binary import resolve
from swift_dss.tierctl.errors import TierError

#: How long a report may take. The daemon answers from memory, but through FUSE threads that
#: a modelled HDD may keep busy for a while under load.
REPORT_TIMEOUT = 120.0


def _pick(cls: type[Any], doc: dict[str, Any]) -> dict[str, Any]:
    # Only the fields this side knows: a newer daemon may report more.
    names = {f.name for f in dataclasses.fields(cls)}
    return {k: v for k, v in doc.items() if k in names}


@dataclass(frozen=True)
class ClassStats:
    """One class's cache counters (all zero for a class the tier has not seen)."""

    cached_bytes: int = 0
    clean_bytes: int = 0
    dirty_bytes: int = 0
    hits: int = 0
    misses: int = 0
    bypassed_bytes: int = 0
    evicted_bytes: int = 0
    written_back_bytes: int = 0

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> Self:
        return cls(**_pick(cls, doc))


@dataclass(frozen=True)
class DeviceStats:
    """The activity of the emulated SSD or HDD (its model, "none" if not modelled)."""

    model: str = "none"
    ops: int = 0
    bytes: int = 0
    busy_s: float = 0.0
    read_ops: int = 0
    write_ops: int = 0
    read_bytes: int = 0
    write_bytes: int = 0
    #: What the cache's write-back submitted (the syncer's SSD reads, its HDD writes and
    #: syncs), and the busy time it added.
    writeback_ops: int = 0
    writeback_bytes: int = 0
    writeback_busy_s: float = 0.0

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> Self:
        return cls(**_pick(cls, doc))


@dataclass(frozen=True)
class TierStats:
    """`dss-tier stats --json` of one mount."""

    mode: str
    pid: int
    policy: str
    block_size: int
    cache_entries: int
    free_entries: int
    dirty_entries: int
    pinned_entries: int
    syncer_active: bool
    #: Classes with any activity, by class number.
    classes: dict[int, ClassStats]
    #: "ssd" and "hdd".
    devices: dict[str, DeviceStats]
    #: SSD losses the tier recorded on its HDD, as reported.
    ssd_loss: list[dict[str, Any]] = field(default_factory=list)
    raw: dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> Self:
        return cls(
            mode=doc["mode"],
            pid=int(doc.get("pid", 0)),
            policy=doc["policy"],
            block_size=int(doc["block_size"]),
            cache_entries=int(doc["cache_entries"]),
            free_entries=int(doc["free_entries"]),
            dirty_entries=int(doc["dirty_entries"]),
            pinned_entries=int(doc["pinned_entries"]),
            syncer_active=bool(doc["syncer_active"]),
            classes={int(k): ClassStats.from_json(v) for k, v in doc["classes"].items()},
            devices={k: DeviceStats.from_json(v) for k, v in doc["devices"].items()},
            ssd_loss=list(doc.get("ssd_loss", [])),
            raw=doc,
        )

    @property
    def cache_bytes(self) -> int:
        return self.cache_entries * self.block_size

    def of_class(self, cls: int) -> ClassStats:
        """CLS's counters, zero if it was idle (the tier leaves idle classes out)."""
        return self.classes.get(cls, ClassStats())


@dataclass(frozen=True)
class ClassContent:
    """One class's cached blocks, by state."""

    cached_bytes: int = 0
    clean_bytes: int = 0
    dirty_bytes: int = 0
    pinned_bytes: int = 0
    #: Distinct files (metadata pseudo-blocks count as one file per inode).
    files: int = 0

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> Self:
        return cls(**_pick(cls, doc))


@dataclass(frozen=True)
class Extent:
    """A run of consecutive cached blocks of one file, class and state."""

    file: int
    index: int
    blocks: int
    cls: int
    state: str


@dataclass(frozen=True)
class TierContent:
    """`dss-tier dump --json` of one mount."""

    block_size: int
    classes: dict[int, ClassContent]
    #: File data extents, up to the tier's limit; TRUNCATED if there were more.
    extents: list[Extent]
    truncated: bool
    raw: dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> Self:
        return cls(
            block_size=int(doc["block_size"]),
            classes={int(k): ClassContent.from_json(v) for k, v in doc["classes"].items()},
            extents=[
                Extent(e["file"], e["index"], e["blocks"], e["class"], e["state"])
                for e in doc.get("extents", [])
            ],
            truncated=bool(doc.get("truncated", False)),
            raw=doc,
        )

    def totals(self) -> dict[str, Any]:
        """The document without its extents (the per-class totals)."""
        return {k: v for k, v in self.raw.items() if k != "extents"}


def _call(
    args: list[str], mountpoint: str | Path, binary: str | Path | None, timeout: float
) -> str:
    """What `dss-tier ARGS MOUNTPOINT` printed; TierError with its reason if it failed."""
    what = f"dss-tier {args[0]} of {mountpoint}"
    try:
        proc = subprocess.run(
            [resolve(binary), *args, str(mountpoint)],
            capture_output=True, text=True, timeout=timeout, check=False,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        raise TierError(f"{what} got no answer within {timeout:.0f} s") from None
    if proc.returncode != 0:
        reason = (proc.stderr or proc.stdout).strip().splitlines()
        raise TierError(f"{what} failed: {reason[-1] if reason else f'exit {proc.returncode}'}")
    return proc.stdout


def control(
    command: str,
    mountpoint: str | Path,
    binary: str | Path | None = None,
    timeout: float = REPORT_TIMEOUT,
) -> str:
    """Run `dss-tier COMMAND MOUNTPOINT` (flush, reset-counters, drop-caches, ...): the
    line it printed; TierError with its reason if it failed."""
    return _call([command], mountpoint, binary, timeout).strip()


def run_json(
    command: str,
    mountpoint: str | Path,
    binary: str | Path | None = None,
    timeout: float = REPORT_TIMEOUT,
) -> dict[str, Any]:
    """The JSON document `dss-tier COMMAND --json MOUNTPOINT` prints."""
    out = _call([command, "--json"], mountpoint, binary, timeout)
    what = f"dss-tier {command} of {mountpoint}"
    try:
        doc = json.loads(out)
    except ValueError as err:
        raise TierError(f"{what} printed no JSON document: {err}") from None
    if not isinstance(doc, dict):
        raise TierError(f"{what} printed {type(doc).__name__}, not a JSON object")
    return doc


def stats(
    mountpoint: str | Path, binary: str | Path | None = None, timeout: float = REPORT_TIMEOUT
) -> TierStats:
    """`dss-tier stats --json` of the tier mounted on MOUNTPOINT."""
    doc = run_json("stats", mountpoint, binary, timeout)
    try:
        return TierStats.from_json(doc)
    except (KeyError, TypeError, ValueError) as err:
        raise TierError(f"dss-tier stats of {mountpoint}: unexpected document ({err!r})") from None


def dump(
    mountpoint: str | Path, binary: str | Path | None = None, timeout: float = REPORT_TIMEOUT
) -> TierContent:
    """`dss-tier dump --json` of the tier mounted on MOUNTPOINT."""
    doc = run_json("dump", mountpoint, binary, timeout)
    try:
        return TierContent.from_json(doc)
    except (KeyError, TypeError, ValueError) as err:
        raise TierError(f"dss-tier dump of {mountpoint}: unexpected document ({err!r})") from None
