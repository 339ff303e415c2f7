"""POSIX behaviour Swift relies on, through a real dss-tier mount with a cache small
enough that data moves between the SSD and the HDD while the tests run."""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import hashlib
import mmap
import os
import sqlite3
import stat
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

from swift_dss.dssio import get_backend
from tests.integration.tier_helpers import (  # noqa: F401
    MakeTier,
    Tier,
    make_tier,
    tiers,
    tmpfs,
)


@pytest.fixture(params=["dss", "hdd"])
def tier(make_tier: object, request: pytest.FixtureRequest) -> Tier:  # noqa: F811
    """A small cache in mode dss, and mode hdd, whose files the kernel serves itself
    (passthrough)."""
    t = make_tier()
    t.mount(cache_size="1MiB", mode=request.param)
    return t


def data(n: int, seed: int) -> bytes:
    return hashlib.shake_256(f"{seed}".encode()).digest(n)


def tree_digest(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def test_large_file_round_trip_and_final_write_back(tier: Tier) -> None:
    big = data(5 * 1024 * 1024 + 123, 1)
    (tier.mnt / "big").write_bytes(big)
    assert (tier.mnt / "big").read_bytes() == big
    tier.umount()
    assert (tier.hdd / "big").read_bytes() == big


def test_rename_over_an_existing_file(tier: Tier) -> None:
    a, b = tier.mnt / "a", tier.mnt / "b"
    a.write_bytes(data(20_000, 1))
    b.write_bytes(data(30_000, 2))
    with open(b, "rb") as held:
        os.rename(a, b)
        # The replaced file stays readable through an open descriptor.
        assert held.read() == data(30_000, 2)
    assert b.read_bytes() == data(20_000, 1)
    assert not a.exists()
    assert os.stat(b).st_nlink == 1


def test_large_xattrs(tier: Tier) -> None:
    p = tier.mnt / "obj"
    p.write_bytes(b"x")
    meta = data(9000, 3)
    os.setxattr(p, "user.swift.metadata", meta)
    os.setxattr(p, "user.swift.metadata1", meta[:100])
    assert os.getxattr(p, "user.swift.metadata") == meta
    assert {"user.swift.metadata", "user.swift.metadata1"} <= set(os.listxattr(p))
    os.removexattr(p, "user.swift.metadata1")
    assert "user.swift.metadata1" not in os.listxattr(p)
    assert os.getxattr(tier.hdd / "obj", "user.swift.metadata") == meta


def test_fsync_of_files_and_directories(tier: Tier) -> None:
    d = tier.mnt / "objects" / "123"
    d.mkdir(parents=True)
    fd = os.open(d / "f.data", os.O_CREAT | os.O_WRONLY, 0o644)
    try:
        os.write(fd, data(70_000, 4))
        os.fsync(fd)
        os.fdatasync(fd)
    finally:
        os.close(fd)
    dfd = os.open(d, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)
    assert (d / "f.data").read_bytes() == data(70_000, 4)


def test_mkstemp_then_rename_into_place(tier: Tier) -> None:
    tmpdir = tier.mnt / "tmp"
    final = tier.mnt / "objects" / "x.data"
    tmpdir.mkdir()
    final.parent.mkdir()
    for version in range(3):
        fd, name = tempfile.mkstemp(dir=tmpdir)
        with os.fdopen(fd, "wb") as f:
            f.write(data(50_000 + version, version))
            f.flush()
            os.fsync(f.fileno())
        os.rename(name, final)
        assert final.read_bytes() == data(50_000 + version, version)
    assert list(tmpdir.iterdir()) == []


def test_fallocate_and_holes(tier: Tier) -> None:
    p = tier.mnt / "pre"
    content = data(64 * 1024, 5)
    with open(p, "w+b") as f:
        os.posix_fallocate(f.fileno(), 0, 1 << 20)
        assert os.fstat(f.fileno()).st_size == 1 << 20
        f.write(content)
        f.flush()
        libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
        libc.fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int64, ctypes.c_int64]
        punch_hole_keep_size = 0x02 | 0x01
        # A hole across cached blocks, with partial blocks at both ends.
        r = libc.fallocate(f.fileno(), punch_hole_keep_size, 1000, 20_000)
        assert r == 0, os.strerror(ctypes.get_errno())
        f.seek(0)
        got = f.read(len(content))
    want = content[:1000] + bytes(20_000) + content[21_000:]
    assert got == want
    assert p.read_bytes()[: len(content)] == want
    assert os.stat(p).st_size == 1 << 20


def test_hard_links(tier: Tier) -> None:
    a, b = tier.mnt / "a", tier.mnt / "b"
    with open(a, "wb") as f:
        f.write(data(10_000, 6))
        os.fsync(f.fileno())
    # The tier's own anchor link never shows in the link count.
    assert os.stat(a).st_nlink == 1
    os.link(a, b)
    assert os.stat(a).st_nlink == 2
    assert os.stat(a).st_ino == os.stat(b).st_ino
    with open(b, "r+b") as f:
        f.write(b"changed")
    assert a.read_bytes()[:7] == b"changed"
    a.unlink()
    assert os.stat(b).st_nlink == 1
    assert b.read_bytes() == b"changed" + data(10_000, 6)[7:]


def test_a_hard_link_outlives_a_rename_over_its_other_name(tier: Tier) -> None:
    """Renaming another file over one name of a hard-linked file leaves the file its other
    name: reads and writes through it reach the file, not the one that took the name."""
    a, link, c = tier.mnt / "a", tier.mnt / "link", tier.mnt / "c"
    a.write_bytes(b"the linked file")
    os.link(a, link)
    linked = os.stat(link).st_ino
    c.write_bytes(b"the file renamed over a")
    os.rename(c, a)
    assert os.stat(link).st_ino == linked and os.stat(link).st_nlink == 1
    assert link.read_bytes() == b"the linked file"
    with open(link, "r+b") as f:
        f.write(b"THE")
    assert link.read_bytes() == b"THE linked file"
    assert a.read_bytes() == b"the file renamed over a"
    tier.umount()
    assert (tier.hdd / "link").read_bytes() == b"THE linked file"
    assert (tier.hdd / "a").read_bytes() == b"the file renamed over a"


def test_an_open_file_whose_name_was_taken_reopens_as_itself(tier: Tier) -> None:
    """/proc/self/fd/N opens the file N is open on, even after its only name was renamed
    over: the tier opens it through its handle, not the file now at that name."""
    a, c = tier.mnt / "a", tier.mnt / "c"
    a.write_bytes(b"the first file")
    c.write_bytes(b"the second file")
    with open(a, "rb") as held:
        os.rename(c, a)
        with open(f"/proc/self/fd/{held.fileno()}", "rb") as again:
            assert again.read() == b"the first file"
    assert a.read_bytes() == b"the second file"


@pytest.mark.parametrize("mode", ["tiered", "ssd", "dss"])
def test_an_open_file_keeps_its_data_when_its_last_name_goes(
    make_tier: MakeTier,  # noqa: F811
    mode: str,
) -> None:
    """A GET still reading an object whose file a newer PUT or a DELETE removed: the
    handle reads what the file held, also where its blocks' only copy is on the SSD
    (tiered placement, ssd mode), and once the last handle goes the blocks go too."""
    t = make_tier()
    t.mount(cache_size="1MiB", mode=mode)
    tier_backend = get_backend("tier")
    body = data(300_000, 11)
    fd = os.open(t.mnt / "obj", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        # Class 25 is placed on the SSD in tiered mode and cached in dss mode.
        tier_backend.pdwrite(fd, 25, body, 0)
        os.fsync(fd)
        ino = os.fstat(fd).st_ino
        os.unlink(t.mnt / "obj")
        # The kernel's pages must not answer for the tier.
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        assert os.pread(fd, len(body), 0) == body
        assert os.fstat(fd).st_size == len(body)
        tier_backend.pdwrite(fd, 25, b"new", 7)
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        assert os.pread(fd, 10, 0) == body[:7] + b"new"
        assert any(e["file"] == ino for e in t.dump()["extents"])
    finally:
        tier_backend.release(fd)
        os.close(fd)
    # The release reaches the daemon after close returns.
    deadline = time.monotonic() + 10
    while any(e["file"] == ino for e in t.dump()["extents"]):
        assert time.monotonic() < deadline, "the removed file's blocks stayed cached"
        time.sleep(0.05)


def test_an_open_file_with_no_name_left_takes_requests_by_inode(tier: Tier) -> None:
    """fstat, fchmod, ftruncate, futimens and the f*xattr calls reach a file whose only
    name was renamed over, never the file that took the name."""
    a, c = tier.mnt / "a", tier.mnt / "c"
    a.write_bytes(data(50_000, 12))
    c.write_bytes(b"the file that takes the name")
    with open(a, "r+b") as f:
        os.rename(c, a)
        fd = f.fileno()
        assert os.fstat(fd).st_size == 50_000
        os.fchmod(fd, 0o600)
        os.ftruncate(fd, 1000)
        os.utime(fd, (1_000_000, 2_000_000))
        os.setxattr(fd, "user.k", b"v")
        assert os.getxattr(fd, "user.k") == b"v"
        assert "user.k" in os.listxattr(fd)
        st = os.fstat(fd)
        assert (st.st_size, st.st_mode & 0o777, st.st_mtime) == (1000, 0o600, 2_000_000)
        os.removexattr(fd, "user.k")
        assert "user.k" not in os.listxattr(fd)
    st = os.stat(a)
    assert a.read_bytes() == b"the file that takes the name"
    assert st.st_size == 28 and st.st_mtime != 2_000_000 and os.listxattr(a) == []


def test_an_open_file_answers_for_itself_while_names_change_under_it(tier: Tier) -> None:
    """A writer puts new files in place by renaming them over one name and unlinks older
    ones (Swift's pattern); a reader opens the name and asks its descriptor for the file's
    xattr and size. Each answer is the opened file's, never ENOENT nor another file's:
    the name the tier checked can change between its check and its call."""
    d = tier.mnt / "objects"
    d.mkdir()
    done = threading.Event()
    failures: list[str] = []

    def write() -> None:
        try:
            for i in range(1, 4000):
                tmp = d / f"tmp{i}"
                tmp.write_bytes(b"%08d" % i * (1 + i % 3))
                os.setxattr(tmp, "user.swift.metadata", b"%08d" % i)
                os.rename(tmp, d / "current")
                if i % 2:
                    os.link(d / "current", d / f"{i}.data")
                    os.unlink(d / f"{i}.data")
        finally:
            done.set()

    writer = threading.Thread(target=write)
    writer.start()
    reads = 0
    while not done.is_set():
        try:
            fd = os.open(d / "current", os.O_RDONLY)
        except FileNotFoundError:
            continue
        try:
            own = os.pread(fd, 8, 0)
            reads += 1
            if not own.isdigit():
                failures.append(f"read {own!r} from a file written whole before its rename")
                continue
            try:
                value = os.getxattr(fd, "user.swift.metadata")
            except OSError as err:
                failures.append(f"fgetxattr of file {own!r}: {err}")
                continue
            if value != own:
                failures.append(f"fgetxattr of file {own!r} answered {value!r}")
            if os.fstat(fd).st_size != 8 * (1 + int(own) % 3):
                failures.append(f"fstat of file {own!r}: {os.fstat(fd).st_size}")
        finally:
            os.close(fd)
    writer.join()
    assert reads > 100
    assert not failures, f"{len(failures)} of {reads} reads: {failures[:5]}"


def test_a_second_name_made_on_the_hdd_is_looked_up(tier: Tier) -> None:
    """A file the kernel knows by one name, found by another the HDD gained behind the
    tier's back: the lookup records the new name without hanging the request."""
    (tier.mnt / "a").write_bytes(b"one file")
    os.stat(tier.mnt / "a")
    os.link(tier.hdd / "a", tier.hdd / "b")
    # In a child, so that a hung request fails this test instead of hanging the run: the
    # daemon is killed, which ends the request with ENOTCONN.
    probe = "import os, sys; print(os.stat(sys.argv[1]).st_nlink)"
    child = subprocess.Popen([sys.executable, "-c", probe, str(tier.mnt / "b")],
                             stdout=subprocess.PIPE, text=True)  # fmt: skip
    try:
        out, _ = child.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        assert tier.proc is not None
        tier.proc.kill()
        child.communicate()
        pytest.fail("a lookup of the second name never returned")
    assert out.strip() == "2"
    assert (tier.mnt / "b").read_bytes() == b"one file"
    assert os.stat(tier.mnt / "a").st_ino == os.stat(tier.mnt / "b").st_ino


def test_inode_operations_follow_renames(tier: Tier) -> None:
    """Requests by inode (fsetxattr on an open file) reach the file where it now is: after
    a rename of the file itself, of a hard link to it, and of a directory above it."""
    d1 = tier.mnt / "d1"
    d1.mkdir()
    (d1 / "a").write_bytes(b"a")
    fd = os.open(d1 / "a", os.O_RDONLY)
    try:
        os.rename(d1 / "a", d1 / "b")
        os.setxattr(fd, "user.step", b"1")
        assert os.getxattr(tier.hdd / "d1" / "b", "user.step") == b"1"
        os.link(d1 / "b", tier.mnt / "c")
        os.rename(tier.mnt / "c", tier.mnt / "e")
        os.unlink(d1 / "b")
        os.setxattr(fd, "user.step", b"2")
        assert os.getxattr(tier.hdd / "e", "user.step") == b"2"
        os.rename(tier.mnt / "e", d1 / "f")
        os.rename(d1, tier.mnt / "d2")
        os.setxattr(fd, "user.step", b"3")
        assert os.getxattr(tier.hdd / "d2" / "f", "user.step") == b"3"
        assert (tier.mnt / "d2" / "f").read_bytes() == b"a"
    finally:
        os.close(fd)


def test_sqlite_locking_from_two_processes(tier: Tier) -> None:
    db = tier.mnt / "container.db"
    con = sqlite3.connect(db, timeout=0.2, isolation_level=None)
    con.execute("CREATE TABLE t (k INTEGER PRIMARY KEY, v TEXT)")
    con.execute("BEGIN IMMEDIATE")
    con.execute("INSERT INTO t (v) VALUES ('parent')")
    other = (
        "import sqlite3, sys\n"
        "c = sqlite3.connect(sys.argv[1], timeout=0.2, isolation_level=None)\n"
        "try:\n"
        "    c.execute('BEGIN IMMEDIATE'); c.execute(\"INSERT INTO t (v) VALUES ('child')\")\n"
        "    c.execute('COMMIT'); print('ok')\n"
        "except sqlite3.OperationalError as e:\n"
        "    print(e)\n"
    )
    run = [sys.executable, "-c", other, str(db)]
    locked = subprocess.run(run, capture_output=True, text=True, check=True)
    assert "locked" in locked.stdout
    con.execute("COMMIT")
    done = subprocess.run(run, capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "ok"
    rows = [r[0] for r in con.execute("SELECT v FROM t ORDER BY k")]
    assert rows == ["parent", "child"]
    assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    con.close()


def test_rsync_of_a_tree(tier: Tier, tmp_path: Path) -> None:
    src = tmp_path / "src"
    for i in range(30):
        d = src / f"d{i % 4}" / f"e{i % 3}"
        d.mkdir(parents=True, exist_ok=True)
        (d / f"f{i}").write_bytes(data(i * 7919, i))
    os.symlink("d0", src / "link")
    subprocess.run(["rsync", "-a", f"{src}/", f"{tier.mnt}/copy/"], check=True)
    assert tree_digest(tier.mnt / "copy") == tree_digest(src)
    assert os.readlink(tier.mnt / "copy" / "link") == "d0"
    back = tmp_path / "back"
    subprocess.run(["rsync", "-a", f"{tier.mnt}/copy/", f"{back}/"], check=True)
    assert tree_digest(back) == tree_digest(src)
    # rsync's check pass finds nothing to send the second time.
    again = subprocess.run(
        ["rsync", "-a", "--itemize-changes", f"{src}/", f"{tier.mnt}/copy/"],
        check=True,
        capture_output=True,
        text=True,
    )
    assert again.stdout.strip() == ""


def test_a_symlinks_own_times(tier: Tier) -> None:
    (tier.mnt / "target").write_bytes(b"t")
    before = os.stat(tier.mnt / "target").st_mtime_ns
    os.symlink("target", tier.mnt / "link")
    os.symlink("not-yet", tier.mnt / "dangling")
    os.utime(tier.mnt / "link", ns=(1_000_000_000, 2_000_000_000), follow_symlinks=False)
    os.utime(tier.mnt / "dangling", ns=(3_000_000_000, 4_000_000_000), follow_symlinks=False)
    assert os.lstat(tier.mnt / "link").st_mtime_ns == 2_000_000_000
    assert os.lstat(tier.mnt / "dangling").st_mtime_ns == 4_000_000_000
    assert os.stat(tier.mnt / "target").st_mtime_ns == before


def test_the_tiers_own_directory_is_hidden(tier: Tier) -> None:
    with open(tier.mnt / "f", "wb") as f:
        f.write(b"x" * 5000)
        os.fsync(f.fileno())
    assert ".dss-tier" not in os.listdir(tier.mnt)
    with pytest.raises(FileNotFoundError):
        os.stat(tier.mnt / ".dss-tier")
    assert (tier.hdd / ".dss-tier" / "anchors").is_dir()


def test_truncate_then_grow_reads_zeros(tier: Tier) -> None:
    p = tier.mnt / "t"
    p.write_bytes(data(10_000, 7))
    with open(p, "r+b") as f:
        f.truncate(5000)
        f.seek(9000)
        f.write(b"end")
    got = p.read_bytes()
    assert got == data(10_000, 7)[:5000] + bytes(4000) + b"end"
    with pytest.raises(OSError) as e:
        os.rmdir(tier.mnt / "t")
    assert e.value.errno == errno.ENOTDIR


def _as_nobody(code: str, fd: int) -> None:
    """Run ``code`` on descriptor ``fd`` in a child that has given up root (and with it
    CAP_FSETID), as Swift's servers run."""
    prelude = "import os, sys\nos.setgid(65534)\nos.setuid(65534)\nfd = int(sys.argv[1])\n"
    subprocess.run([sys.executable, "-c", prelude + code, str(fd)], pass_fds=(fd,), check=True)


@pytest.mark.parametrize("change", ["os.pwrite(fd, b'y', 0)", "os.ftruncate(fd, 50)"])
def test_an_unprivileged_change_drops_set_id_bits(tier: Tier, change: str) -> None:
    p = tier.mnt / "suid"
    p.write_bytes(b"x" * 100)
    os.chmod(p, 0o6755)
    fd = os.open(p, os.O_WRONLY)
    try:
        _as_nobody(change, fd)
    finally:
        os.close(fd)
    assert os.stat(tier.hdd / "suid").st_mode & 0o7777 == 0o755
    assert os.stat(p).st_mode & 0o7777 == 0o755
    # Root keeps them, as on any local file system.
    os.chmod(p, 0o6755)
    with open(p, "r+b") as f:
        f.write(b"z")
    assert os.stat(p).st_mode & 0o7777 == 0o6755


def test_an_exclusively_created_file_reads_the_same_through_every_handle(tier: Tier) -> None:
    p = tier.mnt / "excl"
    content = data(70_000, 8)
    fd = os.open(p, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        os.pwrite(fd, content, 0)
        assert os.pread(fd, len(content), 0) == content
        assert p.read_bytes() == content
        # Written again after another handle cached the old bytes: a later open sees
        # the new ones.
        os.pwrite(fd, b"new", 100)
        assert p.read_bytes() == content[:100] + b"new" + content[103:]
        with mmap.mmap(fd, 4096) as m:
            m[:5] = b"mmapd"
            m.flush()
        assert os.pread(fd, 5, 0) == b"mmapd"
        os.fsync(fd)
    finally:
        os.close(fd)
    tier.umount()
    assert (tier.hdd / "excl").read_bytes()[:8] == b"mmapd" + content[5:8]


def test_names_looked_up_before_they_exist(tier: Tier) -> None:
    d = tier.mnt / "d"
    d.mkdir()
    for name in ("f", "g", "sub", "l"):
        assert not (d / name).exists()
    (d / "f").write_bytes(b"1")
    assert (d / "f").read_bytes() == b"1"
    os.rename(d / "f", d / "g")
    assert not (d / "f").exists()
    assert (d / "g").read_bytes() == b"1"
    (d / "sub").mkdir()
    os.link(d / "g", d / "f")
    os.symlink("g", d / "l")
    assert sorted(os.listdir(d)) == ["f", "g", "l", "sub"]
    assert (d / "l").read_bytes() == b"1"
    (d / "f").unlink()
    assert not (d / "f").exists()


def test_mknod_of_fifos_devices_and_regular_files(tier: Tier) -> None:
    os.mkfifo(tier.mnt / "fifo", 0o640)
    assert stat.S_ISFIFO(os.stat(tier.mnt / "fifo").st_mode)
    assert stat.S_ISFIFO(os.stat(tier.hdd / "fifo").st_mode)
    os.mknod(tier.mnt / "null", 0o600 | stat.S_IFCHR, os.makedev(1, 3))
    for p in (tier.mnt / "null", tier.hdd / "null"):
        st = os.stat(p)
        assert stat.S_ISCHR(st.st_mode)
        assert (os.major(st.st_rdev), os.minor(st.st_rdev)) == (1, 3)
    os.mknod(tier.mnt / "plain", 0o644)
    assert stat.S_ISREG(os.stat(tier.mnt / "plain").st_mode)
    (tier.mnt / "plain").write_bytes(b"abc")
    assert (tier.mnt / "plain").read_bytes() == b"abc"
    # A FIFO on the mount carries data between its two ends.
    pid = os.fork()
    if pid == 0:
        with open(tier.mnt / "fifo", "wb") as w:
            w.write(b"through the fifo")
        os._exit(0)
    with open(tier.mnt / "fifo", "rb") as r:
        assert r.read() == b"through the fifo"
    assert os.waitpid(pid, 0)[1] == 0
    with pytest.raises(FileExistsError):
        os.mkfifo(tier.mnt / "fifo")


def test_o_tmpfile_is_refused_the_way_swift_falls_back_from(tier: Tier) -> None:
    # FUSE's TMPFILE request is not in the FUSE library the tier is built on; Swift
    # takes exactly these errors as "use mkstemp() and rename()" (tested above).
    with pytest.raises(OSError) as e:
        os.open(tier.mnt, os.O_TMPFILE | os.O_WRONLY, 0o600)
    assert e.value.errno in (errno.EOPNOTSUPP, errno.EISDIR, errno.EINVAL)
    assert os.listdir(tier.mnt) == []
