"""The memory of the database's host in the tpch run: SQLite's page cache, and no more.

The paper's database (29 GB) was far larger than its host's memory, so PostgreSQL's
re-reads reached the storage. Here the database is small and the host's memory large,
and the kernel would keep every page read through the mount in its page cache (the tier
lets it), so that each page reaches the tier once per phase. To keep the paper's ratio,
SQLite's own page cache (CACHE_PAGES per file) stands for the host's memory, and the
kernel's cache of the database's files is dropped every few thousand SQLite virtual
machine steps (posix_fadvise DONTNEED, from SQLite's progress handler: the same points
in every run, whatever the timing). The interval is long enough that the kernel's
read-ahead of a scan is used before it is dropped (at 20,000 steps a scan of lineitem
reached the tier as 114% of its blocks, at 200,000 as 100%) and short beside a query.

Each drop is repeated through dssio, as the object server repeats Swift's: FUSE never
passes fadvise on, and on a dss-tier mount in mode hdd the HDD model's page cache would
keep every page the host had let go: a second host memory that HDD only would have and
the cached modes (whose model keeps no clean pages) would not.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from swift_dss import dssio


@dataclass(frozen=True)
class HostMemory:
    #: SQLite's page cache per database file, in pages (4 KiB).
    cache_pages: int = 256
    #: SQLite virtual machine steps between drops of the kernel's cache of the files
    #: (None: the kernel keeps what it reads, as on a plain directory in the unit tests).
    drop_every: int | None = 200_000

    @contextlib.contextmanager
    def bound(self, conn: sqlite3.Connection, paths: Iterable[Path]) -> Iterator[None]:
        """While CONN works on PATHS, keep the kernel's cache of them empty."""
        if self.drop_every is None:
            yield
            return
        fds = [os.open(p, os.O_RDONLY) for p in paths if p.exists()]
        # Each file's backend once, not at every drop: the handler runs inside queries.
        backends = [(fd, dssio.backend_for_fd(fd)) for fd in fds]

        def drop() -> int:
            for fd, backend in backends:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
                backend.drop_cache(fd, 0, 0)
            return 0  # go on

        conn.set_progress_handler(drop, self.drop_every)
        try:
            yield
        finally:
            conn.set_progress_handler(None, 0)
            drop()
            for fd in fds:
                os.close(fd)


def connect(files: dict[str, Path], memory: HostMemory) -> sqlite3.Connection:
    """An in-memory main database with FILES attached (schema name -> file), each with
    MEMORY's page cache. Transactions are explicit (BEGIN/COMMIT).

    Temporary structures (Q18's grouping, the index builds' sorts) stay in memory: SQLite
    names its temporary files itself, so the tier could not tell them by name, and the
    largest of them holds one entry per order or index entry, small beside the tables.
    """
    conn = sqlite3.connect(":memory:", isolation_level=None)
    for schema, path in files.items():
        conn.execute(f"ATTACH DATABASE ? AS {schema}", (str(path),))
        conn.execute(f"PRAGMA {schema}.cache_size = {memory.cache_pages}")
    conn.execute("PRAGMA temp_store = MEMORY")
    return conn
