"""dss-tier's data path against the directory it fronts, used directly.

One mount (device models off, so only the software is measured) over an HDD directory;
the baseline is that same directory without the tier. `run_passthrough` mounts twice in
mode hdd, once with kernel passthrough (the kernel serves file data from the HDD directory
itself) and once with every I/O through the daemon, each against the same baseline. Rounds
alternate the order so that drift in the machine's load falls on every side.

Five workloads, as Swift's object servers produce them: 4 MiB sequential writes (ending
with fsync, as a PUT does) and reads, 4 KiB random writes and reads inside one file, and
the way a PUT lands a file (mkstemp in a temporary directory, a 4 KiB write, a rename into
a hashed directory). Reads are warm on every side: the file was just written, so the
baseline reads from the page cache and the tier from its slab (or, in passthrough, from
the HDD directory's page cache). The landed files stay, round after round, so that a cost
growing with the number of files the mount has seen shows as a falling rate.
"""

from __future__ import annotations

import contextlib
import os
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from swift_dss.bench.report import Figure, ratio_ci
from swift_dss.mountinfo import mount_type
from swift_dss.policies import policy_path
from swift_dss.tierctl import TierError, daemon
from swift_dss.tierctl.binary import SOURCE_BUILD
from swift_dss.tierctl.options import MountOptions

BIN = SOURCE_BUILD
MIB = 1 << 20
FILE_SIZE = 64 * MIB
SMALL_OPS = 4000
LANDED_FILES = 4000


def mounted(mountpoint: Path) -> bool:
    return mount_type(mountpoint.resolve()) is not None


def seq_write(path: Path, data: bytes) -> float:
    start = time.perf_counter()
    fd = os.open(path, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o644)
    try:
        for off in range(0, FILE_SIZE, len(data)):
            os.pwrite(fd, data, off)
        os.fsync(fd)
    finally:
        os.close(fd)
    return FILE_SIZE / MIB / (time.perf_counter() - start)


def seq_read(path: Path, chunk: int) -> float:
    start = time.perf_counter()
    fd = os.open(path, os.O_RDONLY)
    try:
        for off in range(0, FILE_SIZE, chunk):
            os.pread(fd, chunk, off)
    finally:
        os.close(fd)
    return FILE_SIZE / MIB / (time.perf_counter() - start)


def random_io(path: Path, write: bool, seed: int) -> float:
    rng = random.Random(seed)
    offsets = [rng.randrange(FILE_SIZE // 4096) * 4096 for _ in range(SMALL_OPS)]
    block = bytes(range(256)) * 16
    fd = os.open(path, os.O_RDWR)
    try:
        start = time.perf_counter()
        for off in offsets:
            if write:
                os.pwrite(fd, block, off)
            else:
                os.pread(fd, 4096, off)
        return SMALL_OPS / (time.perf_counter() - start)
    finally:
        os.close(fd)


def land_files(path: Path, round_no: int) -> float:
    """Files per second landed as an object server lands them: created in ``tmp``, written,
    renamed into one of 512 hashed directories beside ``path``."""
    root = path.parent
    tmp = root / "tmp"
    tmp.mkdir(exist_ok=True)
    block = b"\x5a" * 4096
    start = time.perf_counter()
    for i in range(LANDED_FILES):
        d = root / "objects" / f"{i % 512:03x}"
        d.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(dir=tmp)
        try:
            os.write(fd, block)
        finally:
            os.close(fd)
        os.rename(name, d / f"{round_no}-{i}.data")
    return LANDED_FILES / (time.perf_counter() - start)


WORKLOADS: dict[str, tuple[str, Callable[[Path, int], float]]] = {
    "write 4MiB seq": ("MB/s", lambda p, _r: seq_write(p, b"\xa5" * (4 * MIB))),
    "read 4MiB seq": ("MB/s", lambda p, _r: seq_read(p, 4 * MIB)),
    "write 4KiB rand": ("ops/s", lambda p, r: random_io(p, True, r)),
    "read 4KiB rand": ("ops/s", lambda p, r: random_io(p, False, r)),
    "land 4KiB files": ("files/s", land_files),
}


#: The cache every arm mounts with; device models off, so only the software is measured.
CACHE = {
    "cache_size": "256MiB",
    "policy": policy_path("reference"),
    "ssd_model": "none",
    "hdd_model": "none",
}


def run(out: Path, rounds: int = 5, progress: Callable[[str], None] = print) -> list[Figure]:
    """The mount in the reference policy's mode (dss): every byte through the daemon."""
    return compare({"": MountOptions(**CACHE)}, out, rounds, progress, goal_large=0.7)


def run_passthrough(
    out: Path, rounds: int = 5, progress: Callable[[str], None] = print
) -> list[Figure]:
    """The mount in mode hdd, where the kernel serves file data from the HDD directory
    itself (passthrough), beside the same mount with every I/O through the daemon."""
    arms = {
        "passthrough": MountOptions(**CACHE, mode="hdd"),
        "daemon": MountOptions(**CACHE, mode="hdd", extra=("--no-passthrough",)),
    }
    return compare(arms, out, rounds, progress, goal_large=0.9, goal_small=0.7)


def compare(
    arms: dict[str, MountOptions],
    out: Path,
    rounds: int,
    progress: Callable[[str], None],
    goal_large: float,
    goal_small: float | None = None,
) -> list[Figure]:
    """Each arm's mount against the directory it fronts, rounds alternating the order.

    Figures are named by workload, followed by the arm's name in parentheses when it has one.
    """
    if not BIN.exists():
        raise RuntimeError(f"{BIN} is not built (make setup)")
    mounts: dict[str, Path] = {}
    spawned = []
    try:
        for i, (arm, options) in enumerate(arms.items()):
            ssd, hdd, mnt = (out / f"{d}{i}" for d in ("ssd", "hdd", "mnt"))
            tier = daemon.spawn(str(BIN), ssd, hdd, mnt, options, log=None)
            spawned.append((tier, mnt))
            try:
                daemon.wait_mounted(tier)
            except TierError:
                raise RuntimeError(f"dss-tier did not mount ({arm or 'the mount'})") from None
            mounts[arm] = mnt
        # The baseline is the first arm's HDD directory, beside what that mount writes.
        native = out / "hdd0" / "native"
        native.mkdir(exist_ok=True)
        targets = {"baseline": native / "bench.dat"}
        targets |= {arm: mnt / "bench.dat" for arm, mnt in mounts.items()}
        results = {w: {who: [] for who in targets} for w in WORKLOADS}
        for r in range(rounds):
            order = list(targets) if r % 2 == 0 else list(reversed(targets))
            for name, (_unit, fn) in WORKLOADS.items():
                for who in order:
                    results[name][who].append(fn(targets[who], r))
            progress(f"tier round {r + 1}/{rounds}")
        # Goals are the first arm's; the others are there to compare with. Small random
        # I/O has a floor only where the kernel serves it: through the daemon it pays a
        # per-call cost the native path does not.
        first = next(iter(arms))
        return [
            Figure(
                f"{name} ({arm})" if arm else name,
                statistics.median(results[name][arm]),
                statistics.median(results[name]["baseline"]),
                unit,
                goal=None
                if arm != first
                else goal_large
                if "4MiB" in name
                else goal_small
                if "rand" in name
                else None,
                ci=ratio_ci(results[name][arm], results[name]["baseline"]),
            )
            for arm in arms
            for name, (unit, _fn) in WORKLOADS.items()
        ]
    finally:
        for tier, mnt in spawned:
            if mounted(mnt):
                with contextlib.suppress(TierError):
                    daemon.clean_umount(mnt, binary=BIN)
            daemon.stop(tier, timeout=120)
        daemon.reap()
