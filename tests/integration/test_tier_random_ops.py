"""Random file operations on a dss-tier mount, held against the same operations on a
reference directory (tmpfs): every read, size, error and attribute must agree, and after
a clean unmount and a fresh mount the files must still be what the reference holds.

Hypothesis draws the operation sequences (a state machine) and shrinks a failing one to
a short sequence. The cache is 1 MiB, so blocks are evicted and written back while the
sequence runs; writes carry classes that each mode caches, bypasses or places on the
SSD. `make test` runs a fixed draw per mode; `TIER_OPS_EXAMPLES` draws more
(`make properties`).
"""

from __future__ import annotations

import ctypes
import errno
import hashlib
import itertools
import mmap
import os
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from swift_dss.dssio import get_backend
from tests.integration.tier_helpers import (  # noqa: F401
    BIN,
    MakeTier,
    Tier,
    force_unmount,
    make_tier,
    tiers,
    tmpfs,
)

KIB = 1024
NAMES = ["f0", "f1", "d/g0", "d/g1"]
#: Classes of the reference policy: metadata and small files (SSD in tiered mode, kept by
#: dss), large ones (bypassed under pressure, HDD in tiered mode) and the default.
CLASSES = [0, 1, 25, 27, 29, 31]
EXAMPLES = int(os.environ.get("TIER_OPS_EXAMPLES", "10"))
#: Shrinking mounts a tier per attempt, hundreds of them: `make test` reports a failing
#: draw as drawn (at most 60 steps); TIER_OPS_SHRINK=1 shrinks it to a short sequence.
PHASES = [p for p in Phase if p != Phase.shrink or os.environ.get("TIER_OPS_SHRINK")]
TIER = get_backend("tier")
#: fallocate(2)'s modes as Swift and other writers use them: allocate (and grow the
#: file), allocate within its size, punch a hole, zero a range (tmpfs refuses that one,
#: and must do so on both sides).
KEEP_SIZE, PUNCH_HOLE, ZERO_RANGE = 0x01, 0x02, 0x10
FALLOCATE_MODES = [0, KEEP_SIZE, PUNCH_HOLE | KEEP_SIZE, ZERO_RANGE, ZERO_RANGE | KEEP_SIZE]
LIBC = ctypes.CDLL(None, use_errno=True)


def fallocate(fd: int, mode: int, offset: int, length: int) -> None:
    """fallocate(2), which the os module offers only as posix_fallocate (mode 0)."""
    if LIBC.fallocate(fd, mode, ctypes.c_int64(offset), ctypes.c_int64(length)) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))


names = st.sampled_from(NAMES)
offsets = st.one_of(st.integers(0, 1536 * KIB), st.integers(0, 300).map(lambda b: b * 4096))
lengths = st.one_of(st.sampled_from([1, 4096, 65536, 1 << 20]), st.integers(1, 300 * KIB))


def payload(n: int, seed: int) -> bytes:
    return hashlib.shake_256(seed.to_bytes(8, "little")).digest(n)


@dataclass
class Open:
    """One file open on both sides: `name` is what it was opened as (None once gone)."""

    name: str | None
    tier: int
    ref: int


class TierAgainstReference(RuleBasedStateMachine):
    def __init__(self, t: Tier, mode: str) -> None:
        super().__init__()
        self.mode = mode
        self.t = t
        self.t.mount(cache_size="1MiB", mode=mode)
        self.ref = self.t.base / "ref"
        self.ref.mkdir()
        for root in (self.t.mnt, self.ref):
            (root / "d").mkdir()
        self.open: list[Open] = []

    # --- both sides ----------------------------------------------------------------------

    def both(self, op: Callable[[Path], Any]) -> tuple[Any, Any]:
        """OP on the tier and on the reference; an error on one side must be the other's."""
        out = []
        for root in (self.t.mnt, self.ref):
            try:
                out.append(("ok", op(root)))
            except OSError as e:
                out.append(("error", errno.errorcode.get(e.errno or 0, e.errno)))
        (tier_kind, tier_value), (ref_kind, ref_value) = out
        assert tier_kind == ref_kind, f"tier {out[0]}, reference {out[1]}"
        if tier_kind == "error":
            assert tier_value == ref_value
        return tier_value, ref_value

    def assert_same_file(self, name: str) -> None:
        tier, ref = self.t.mnt / name, self.ref / name
        assert tier.exists() == ref.exists(), name
        if ref.exists():
            assert tier.read_bytes() == ref.read_bytes(), name

    def close(self, o: Open) -> None:
        TIER.release(o.tier)
        os.close(o.tier)
        os.close(o.ref)
        self.open.remove(o)

    # --- by name -------------------------------------------------------------------------

    def written(self, tier: int, ref: int, at: int, body: bytes, write: Callable[[], int]) -> None:
        """WRITE writes BODY at AT into the tier's file open as TIER; the reference's, open
        as REF, takes the same write, and the two must say the same."""
        assert write() == os.pwrite(ref, body, at)

    def by_name(self, name: str, flags: int, use: Callable[[int, int], None]) -> None:
        """USE(tier, ref) on NAME opened with FLAGS on both sides, if both can open it."""
        opened: list[int] = []
        try:
            self.both(lambda root: opened.append(os.open(root / name, os.O_RDWR | flags, 0o644)))
            if opened:
                use(*opened)
        finally:
            for fd in opened:
                os.close(fd)

    @rule(name=names, offset=offsets, length=lengths, cls=st.sampled_from(CLASSES),
          seed=st.integers(0, 2**32))  # fmt: skip
    def write(self, name: str, offset: int, length: int, cls: int, seed: int) -> None:
        body = payload(length, seed)

        def use(tier: int, ref: int) -> None:
            self.written(tier, ref, offset, body, lambda: TIER.pdwrite(tier, cls, body, offset))
            TIER.release(tier)

        self.by_name(name, os.O_CREAT, use)

    @rule(name=names, length=st.sampled_from([1, 777, 4096, 70_000]), seed=st.integers(0, 99))
    def append(self, name: str, length: int, seed: int) -> None:
        body = payload(length, seed)

        def use(tier: int, ref: int) -> None:
            self.written(tier, ref, os.fstat(ref).st_size, body, lambda: os.write(tier, body))

        self.by_name(name, os.O_APPEND | os.O_CREAT, use)

    @rule(name=names, length=st.sampled_from([0, 10, 5000]))
    def open_truncating(self, name: str, length: int) -> None:
        body = payload(length, 7)

        def use(tier: int, ref: int) -> None:
            self.written(tier, ref, 0, body, lambda: os.write(tier, body))

        self.by_name(name, os.O_TRUNC, use)

    @rule(name=names, size=st.one_of(st.just(0), st.integers(0, 1800 * KIB)))
    def truncate(self, name: str, size: int) -> None:
        self.both(lambda root: os.truncate(root / name, size))

    @rule(name=names, to=names)
    def rename(self, name: str, to: str) -> None:
        self.both(lambda root: os.rename(root / name, root / to))
        for o in self.open:
            if o.name == to and to != name:
                o.name = None
            elif o.name == name:
                o.name = to

    @rule(name=names)
    def unlink(self, name: str) -> None:
        self.both(lambda root: os.unlink(root / name))
        for o in self.open:
            if o.name == name:
                o.name = None

    @rule(name=names, to=names)
    def link(self, name: str, to: str) -> None:
        self.both(lambda root: os.link(root / name, root / to))

    @rule(name=names, size=st.integers(0, 3000))
    def xattr(self, name: str, size: int) -> None:
        value = payload(size, size)
        self.both(lambda root: os.setxattr(root / name, "user.k", value))
        tier, ref = self.both(lambda root: os.getxattr(root / name, "user.k"))
        assert tier == ref

    @rule()
    def move_directory_away_and_back(self) -> None:
        self.both(lambda root: os.rename(root / "d", root / "e"))
        self.both(lambda root: os.rename(root / "e", root / "d"))

    @rule()
    def flush(self) -> None:
        subprocess.run([str(BIN), "flush", str(self.t.mnt)], check=True, capture_output=True)

    @invariant()
    def every_file_agrees(self) -> None:
        for name in NAMES:
            self.assert_same_file(name)

    # --- through open files --------------------------------------------------------------

    @precondition(lambda self: len(self.open) < 4)
    @rule(name=names)
    def open_file(self, name: str) -> None:
        if (self.ref / name).exists():
            tier = os.open(self.t.mnt / name, os.O_RDWR)
            self.open.append(Open(name, tier, os.open(self.ref / name, os.O_RDWR)))

    @precondition(lambda self: self.open)
    @rule(data=st.data())
    def close_file(self, data: st.DataObject) -> None:
        self.close(data.draw(st.sampled_from(self.open)))

    @precondition(lambda self: self.open)
    @rule(data=st.data(), offset=offsets, length=lengths, cls=st.sampled_from(CLASSES),
          seed=st.integers(0, 2**32))  # fmt: skip
    def write_open(
        self, data: st.DataObject, offset: int, length: int, cls: int, seed: int
    ) -> None:
        o = data.draw(st.sampled_from(self.open))
        body = payload(length, seed)
        self.written(o.tier, o.ref, offset, body, lambda: TIER.pdwrite(o.tier, cls, body, offset))

    @precondition(lambda self: self.open)
    @rule(data=st.data(), offset=st.integers(0, 2000 * KIB), length=st.integers(1, 400 * KIB))
    def read_open(self, data: st.DataObject, offset: int, length: int) -> None:
        o = data.draw(st.sampled_from(self.open))
        # The kernel's pages must not answer for the tier.
        os.posix_fadvise(o.tier, 0, 0, os.POSIX_FADV_DONTNEED)
        assert os.pread(o.tier, length, offset) == os.pread(o.ref, length, offset)
        assert os.fstat(o.tier).st_size == os.fstat(o.ref).st_size

    @precondition(lambda self: self.open)
    @rule(data=st.data(), size=st.integers(0, 1800 * KIB))
    def truncate_open(self, data: st.DataObject, size: int) -> None:
        o = data.draw(st.sampled_from(self.open))
        os.ftruncate(o.tier, size)
        os.ftruncate(o.ref, size)

    @precondition(lambda self: self.open)
    @rule(data=st.data(), offset=offsets, length=lengths, mode=st.sampled_from(FALLOCATE_MODES))
    def fallocate_open(self, data: st.DataObject, offset: int, length: int, mode: int) -> None:
        o = data.draw(st.sampled_from(self.open))
        out = []
        for fd in (o.tier, o.ref):
            try:
                fallocate(fd, mode, offset, length)
                out.append(None)
            except OSError as e:
                out.append(e.errno)
        assert out[0] == out[1], f"tier {out[0]}, reference {out[1]}"

    @precondition(lambda self: self.open)
    @rule(data=st.data(), seed=st.integers(0, 99))
    def write_mapped(self, data: st.DataObject, seed: int) -> None:
        o = data.draw(st.sampled_from(self.open))
        size = os.fstat(o.ref).st_size
        if size == 0:
            return
        start = seed * size // 100
        body = payload(min(size - start, 20_000), seed)
        for fd in (o.tier, o.ref):
            with mmap.mmap(fd, size) as m:
                m[start : start + len(body)] = body
                m.flush()

    @precondition(lambda self: self.open)
    @rule(data=st.data(), offset=st.integers(0, 1536 * KIB), length=st.integers(1, 512 * KIB),
          cls=st.sampled_from(CLASSES))  # fmt: skip
    def reclassify_open(self, data: st.DataObject, offset: int, length: int, cls: int) -> None:
        TIER.reclassify(data.draw(st.sampled_from(self.open)).tier, offset, length, cls)

    @precondition(lambda self: self.open)
    @rule(data=st.data())
    def fsync_open(self, data: st.DataObject) -> None:
        os.fsync(data.draw(st.sampled_from(self.open)).tier)

    @precondition(lambda self: self.open)
    @rule(data=st.data())
    def reopen_through_proc(self, data: st.DataObject) -> None:
        o = data.draw(st.sampled_from(self.open))
        tier, ref = (Path(f"/proc/self/fd/{fd}").read_bytes() for fd in (o.tier, o.ref))
        assert tier == ref

    # --- the end -------------------------------------------------------------------------

    def teardown(self) -> None:
        try:
            for o in list(self.open):
                self.close(o)
            self.every_file_agrees()
            self.t.umount()
            if self.mode in ("dss", "lru", "hdd"):
                # A clean unmount wrote every block home.
                for name in NAMES:
                    ref = self.ref / name
                    assert (self.t.hdd / name).exists() == ref.exists(), name
                    if ref.exists():
                        assert (self.t.hdd / name).read_bytes() == ref.read_bytes(), name
            self.t.mount(cache_size="1MiB", mode=self.mode)
            self.every_file_agrees()
            self.t.umount()
        finally:
            for o in list(self.open):
                self.close(o)
            self.release()

    def release(self) -> None:
        """A failed draw leaves its mount: every draw's goes before the next, and its
        files too, or many draws would fill the tmpfs."""
        self.t.kill()
        shutil.rmtree(self.t.base)


class TierOnAFillingSsd(TierAgainstReference):
    """The same operations while something else fills the SSD's file system and frees it
    again. A write the tier cannot take wholly is short, or fails with ENOSPC, which the
    reference (a tmpfs with room) never does. So each write is held to this: the bytes
    the tier says it wrote hold the new ones; the rest of the write's range holds its
    new or its old bytes, no others (a block cached before the write may have taken
    them); every other byte is as it was. The reference then takes what the tier holds,
    and the sequence goes on. (mmap's writes reach the tier later, from the kernel: they
    are left out.)"""

    def __init__(self, t: Tier, mode: str) -> None:
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", t.ssd], check=True)
        self.filler = t.ssd / "filler"
        super().__init__(t, mode)

    @rule()
    def fill_ssd(self) -> None:
        with open(self.filler, "ab", buffering=0) as f:
            for chunk in (bytes(64 * KIB), bytes(4096)):
                try:
                    while True:
                        f.write(chunk)
                except OSError as e:
                    assert e.errno == errno.ENOSPC, e

    @rule()
    def free_ssd(self) -> None:
        self.filler.unlink(missing_ok=True)

    def written(self, tier: int, ref: int, at: int, body: bytes, write: Callable[[], int]) -> None:
        """WRITE writes BODY at AT into the tier's file open as TIER; REF is the
        reference's."""
        old = os.pread(ref, 4 << 20, 0)
        try:
            n = write()
        except OSError as e:
            assert e.errno == errno.ENOSPC, e
            n = 0
        os.posix_fadvise(tier, 0, 0, os.POSIX_FADV_DONTNEED)
        now = os.pread(tier, 4 << 20, 0)
        assert max(len(old), at + n) <= len(now) <= max(len(old), at + len(body))
        assert now[at : at + n] == body[:n]
        was = old.ljust(len(now), b"\0")
        for i in range(len(now)):
            new = body[i - at] if at <= i < at + len(body) else was[i]
            assert now[i] in (was[i], new), f"byte {i}: {now[i]}, neither {was[i]} nor {new}"
        # Emptied first: an O_APPEND file's writes all go to its end.
        os.ftruncate(ref, 0)
        os.pwrite(ref, now, 0)

    def write_mapped(self, data: st.DataObject, seed: int) -> None:
        """The rule's name, shadowed: mmap's writes are left out here (see above)."""
        raise AssertionError("not a rule here")

    def release(self) -> None:
        self.t.kill()
        force_unmount(self.t.ssd)
        shutil.rmtree(self.t.base)


@pytest.mark.parametrize("mode", ["dss", "lru", "tiered", "ssd"])
def test_random_operations_on_a_filling_ssd_keep_every_byte_old_or_new(
    make_tier: MakeTier,  # noqa: F811
    mode: str,
) -> None:
    runs = itertools.count()
    run_state_machine_as_test(
        lambda: TierOnAFillingSsd(make_tier(name=f"run{next(runs)}"), mode),
        settings=settings(max_examples=EXAMPLES, stateful_step_count=60, phases=PHASES),
    )


@pytest.mark.parametrize("mode", ["dss", "lru", "tiered", "ssd", "hdd"])
def test_random_operations_agree_with_a_reference_directory(
    make_tier: MakeTier,  # noqa: F811
    mode: str,
) -> None:
    runs = itertools.count()
    run_state_machine_as_test(
        lambda: TierAgainstReference(make_tier(name=f"run{next(runs)}"), mode),
        settings=settings(max_examples=EXAMPLES, stateful_step_count=60, phases=PHASES),
    )
