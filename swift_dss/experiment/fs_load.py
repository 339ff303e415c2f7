"""File-level workloads of the DSS paper's evaluation (SOSP'11, section 5), run on any
directory: a file pool, transactions against it, and the file-system utilities.

The file and e-mail server workloads take their file sizes from the loadgen workloads
`specsfs` and `email` (Table 8 of the paper). The setup phase creates the pool, so many
files per directory; each transaction then reads a whole existing file or creates a new
one (reads:creates 2:1), both in requests of a fixed size, from a number of threads. The
paper's own generator is in-house; this one keeps what the paper states: the size table,
the pool's shape, the read/write ratio, uniformly random file choice and the request size.

No I/O here is classified: the tier classifies it by its policy's `[classify]` rules
(metadata kinds and file-size classes), as the paper's Ext3 classifies its own I/O.
"""

from __future__ import annotations

import os
import random
import subprocess
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from swift_dss.loadgen.workload import ObjectType, load

KIB = 1024
MIB = 1 << 20


@dataclass(frozen=True)
class FsWorkload:
    """One of the paper's file workloads at the paper's size, before scaling."""

    name: str
    sizes_from: str  # shipped loadgen workload holding the size table
    files: int
    files_per_dir: int
    transactions: int
    request_size: int
    #: The paper runs the file-system utilities after this workload.
    utilities: bool


#: Section 5.2 of the paper: the file server (SPECsfs2008) and the e-mail server. The
#: file server's request size is not stated; 64 KiB stands for SFS's large transfers.
WORKLOADS = {
    "sfs": FsWorkload("sfs", "specsfs", 262_144, 30, 262_144, 64 * KIB, utilities=True),
    "email": FsWorkload("email", "email", 1_000_000, 1_000, 1_000_000, 4 * KIB, utilities=False),
}


@dataclass(frozen=True)
class Pool:
    """Files laid out as the setup phase creates them: SIZES[i] bytes at PATHS[i]."""

    root: Path
    paths: list[Path]
    sizes: list[int]
    dirs: int

    @property
    def total_bytes(self) -> int:
        return sum(self.sizes)


def plan_pool(root: Path, w: FsWorkload, count_scale: float, seed: int) -> Pool:
    """The pool of W at COUNT_SCALE (at least one file), sizes drawn from W's table."""
    otype = _sizes(w)
    n = max(1, round(w.files * count_scale))
    rng = random.Random(seed)
    sizes = [otype.draw(rng)[0] for _ in range(n)]
    dirs = -(-n // w.files_per_dir)
    paths = [root / f"d{i % dirs:05d}" / f"f{i:08d}" for i in range(n)]
    return Pool(root, paths, sizes, dirs)


def _sizes(w: FsWorkload) -> ObjectType:
    return load(w.sizes_from).types[0]


class Payload:
    """Bytes to write: one random buffer, sliced (no per-write generation cost)."""

    def __init__(self, size: int = 8 * MIB, seed: int = 7) -> None:
        self.buf = random.Random(seed).randbytes(size)

    def chunk(self, offset: int, n: int) -> bytes:
        start = offset % (len(self.buf) - n) if n < len(self.buf) else 0
        return self.buf[start : start + n]


def write_file(path: Path, size: int, request: int, payload: Payload) -> None:
    fd = os.open(path, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o644)
    try:
        done = 0
        while done < size:
            n = min(request, size - done)
            os.write(fd, payload.chunk(done, n))
            done += n
    finally:
        os.close(fd)


def read_file(path: Path, request: int) -> int:
    fd = os.open(path, os.O_RDONLY)
    try:
        got = 0
        while chunk := os.read(fd, request):
            got += len(chunk)
        return got
    finally:
        os.close(fd)


@dataclass
class OpRecord:
    op: str  # "read" or "create"
    size: int
    seconds: float


@dataclass
class PhaseResult:
    seconds: float
    ops: list[OpRecord] = field(default_factory=list)

    @property
    def bytes(self) -> int:
        return sum(o.size for o in self.ops)


def _run_ops(
    jobs: list[Callable[[], OpRecord]], threads: int, tick: Callable[[int, int], None]
) -> PhaseResult:
    done = 0
    lock = threading.Lock()

    def timed(job: Callable[[], OpRecord]) -> OpRecord:
        nonlocal done
        rec = job()
        with lock:
            done += 1
            tick(done, len(jobs))
        return rec

    start = time.perf_counter()
    with ThreadPoolExecutor(threads) as ex:
        records = list(ex.map(timed, jobs))
    return PhaseResult(time.perf_counter() - start, records)


def _op(op: str, size: int, fn: Callable[[], object]) -> OpRecord:
    t = time.perf_counter()
    fn()
    return OpRecord(op, size, time.perf_counter() - t)


def populate(
    pool: Pool,
    request: int,
    threads: int,
    payload: Payload,
    tick: Callable[[int, int], None] = lambda _d, _n: None,
) -> PhaseResult:
    for d in range(pool.dirs):
        (pool.root / f"d{d:05d}").mkdir(parents=True, exist_ok=True)
    jobs = [
        (lambda p=p, s=s: _op("create", s, lambda: write_file(p, s, request, payload)))
        for p, s in zip(pool.paths, pool.sizes, strict=True)
    ]
    return _run_ops(jobs, threads, tick)


def transactions(
    pool: Pool,
    w: FsWorkload,
    count: int,
    request: int,
    threads: int,
    payload: Payload,
    seed: int,
    tick: Callable[[int, int], None] = lambda _d, _n: None,
) -> PhaseResult:
    """COUNT transactions: 2 of 3 read a uniformly chosen pool file, 1 creates a new file
    (its size drawn from W's table) in a uniformly chosen directory."""
    rng = random.Random(seed)
    otype = _sizes(w)
    existing = list(zip(pool.paths, pool.sizes, strict=True))
    jobs: list[Callable[[], OpRecord]] = []
    for i in range(count):
        if rng.random() < 2 / 3:
            path, size = existing[rng.randrange(len(existing))]
            jobs.append(lambda p=path, s=size: _op("read", s, lambda: read_file(p, request)))
        else:
            size = otype.draw(rng)[0]
            path = pool.root / f"d{rng.randrange(pool.dirs):05d}" / f"n{seed}-{i:08d}"
            jobs.append(
                lambda p=path, s=size: _op("create", s, lambda: write_file(p, s, request, payload))
            )
    return _run_ops(jobs, threads, tick)


def drop_caches() -> bool:
    """Write dirty pages out and drop the kernel's page, dentry and inode caches, so that
    the next phase reaches the tier (which sits below them); False without the right."""
    os.sync()
    try:
        Path("/proc/sys/vm/drop_caches").write_text("3\n")
    except OSError:
        return False
    return True


@dataclass(frozen=True)
class Utility:
    name: str
    what: str  # one line for the report


UTILITIES = (
    Utility("find", "find over the whole tree for a name that does not exist (metadata only)"),
    Utility("tar", "tar of a quarter of the pool's directories into an archive on the mount"),
    Utility("scan", "du over the whole tree: every inode's attributes (fsck-style scan)"),
)


def run_utility(name: str, mount: Path, pool: Pool) -> float:
    """Run the real tool on the mount; its wall time in seconds."""
    if name == "find":
        cmd = ["find", str(pool.root), "-name", "no-such-file"]
    elif name == "tar":
        dirs = [f"d{d:05d}" for d in range(max(1, pool.dirs // 4))]
        # A write-back changes a file's ctime on the HDD (the tier shows the HDD's
        # attributes), which tar reports as a file changed while read, with exit 1.
        cmd = ["tar", "--warning=no-file-changed", "-cf", str(mount / "archive.tar")]
        cmd += ["-C", str(pool.root), *dirs]
    elif name == "scan":
        cmd = ["du", "-s", "--apparent-size", str(pool.root)]
    else:
        raise ValueError(f"unknown utility {name}")
    start = time.perf_counter()
    done = subprocess.run(cmd, stdout=subprocess.DEVNULL, timeout=3600, check=False)
    seconds = time.perf_counter() - start
    # GNU tar's 1 is "some files differ" (the ctime above), not a failure.
    if done.returncode not in ((0, 1) if name == "tar" else (0,)):
        raise subprocess.CalledProcessError(done.returncode, cmd)
    return seconds
