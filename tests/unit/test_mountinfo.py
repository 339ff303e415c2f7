"""Mountinfo parsing: escaped paths, device numbers, lines that are not entries."""

from __future__ import annotations

import os
from pathlib import Path

from swift_dss import mountinfo
from swift_dss.dssio import detect

TEXT = (
    "22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw\n"
    r"42 22 0:39 / /srv/my\040node/a\134b rw,nosuid shared:30 - fuse.dss-tier"
    r" dss-tier:/hdd\040dir rw,user_id=0" + "\n"
    r"43 22 0:40 / /srv/tab\011and\012newline rw - tmpfs tmpfs rw" + "\n"
    "this line is not an entry\n"
    "44 22 0:41 / /no/separator rw tmpfs tmpfs rw\n"
    "45 22 zero:41 / /bad/device rw - tmpfs tmpfs rw\n"
    "46 22 0:42 / /srv/top rw - tmpfs tmpfs rw\n"
    "47 46 0:43 / /srv/top rw - fuse.dss-tier dss-tier:/h rw\n"
)


def test_escaped_paths_are_undone() -> None:
    entries = {e.mount_id: e for e in mountinfo.parse(TEXT)}
    tier = entries[42]
    assert tier.mount_point == "/srv/my node/a\\b"
    assert tier.source == "dss-tier:/hdd dir"
    assert tier.fstype == "fuse.dss-tier"
    assert (tier.parent_id, tier.major, tier.minor, tier.root) == (22, 0, 39, "/")
    assert tier.st_dev == os.makedev(0, 39)
    assert entries[43].mount_point == "/srv/tab\tand\nnewline"
    assert mountinfo.unescape(r"a\040b\134\011") == "a b\\\t"


def test_lines_that_are_not_entries_are_left_out() -> None:
    ids = [e.mount_id for e in mountinfo.parse(TEXT)]
    assert ids == [22, 42, 43, 46, 47]
    assert mountinfo.parse_line("this line is not an entry") is None
    assert mountinfo.parse_line("1 2 3:4 / /x rw - ") is None
    assert mountinfo.parse_line("1 2 3:4 / /x rw - tmpfs").source == ""


def test_a_file_by_any_path(tmp_path: Path) -> None:
    info = tmp_path / "mountinfo"
    info.write_text(TEXT)
    assert mountinfo.mount_type("/srv/my node/a\\b", str(info)) == "fuse.dss-tier"
    # The topmost of two mounts on one point counts.
    assert mountinfo.mount_type("/srv/top", str(info)) == "fuse.dss-tier"
    assert mountinfo.mount_type("/srv/none", str(info)) is None
    assert mountinfo.mounts_under("/srv", str(info)) == [
        "/srv/my node/a\\b",
        "/srv/tab\tand\nnewline",
        "/srv/top",
        "/srv/top",
    ]
    types = detect.mount_fstypes(str(info))
    assert types[os.makedev(0, 39)] == "fuse.dss-tier"
    assert os.makedev(0, 41) not in types


def test_this_process_sees_its_root() -> None:
    assert mountinfo.mount_type("/") is not None
    assert any(e.mount_point == "/" for e in mountinfo.read())
