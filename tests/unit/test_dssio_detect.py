"""dssio's backend auto-detection from /proc/self/mountinfo."""

from __future__ import annotations

import os
from pathlib import Path

from swift_dss import dssio
from swift_dss.dssio import detect

MOUNTINFO = """\
22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw
42 22 0:39 / /srv/node/sda1 rw,nosuid,nodev,relatime shared:30 - fuse.dss-tier dss-tier rw,user_id=0
43 22 0:40 / /srv/node/sdb1 rw,relatime - tmpfs tmpfs rw
"""


def test_mountinfo_is_parsed_by_device_number(tmp_path: Path) -> None:
    info = tmp_path / "mountinfo"
    info.write_text(MOUNTINFO)
    types = detect.mount_fstypes(str(info))
    assert types[os.makedev(0, 39)] == "fuse.dss-tier"
    assert types[os.makedev(0, 40)] == "tmpfs"
    assert types[os.makedev(254, 0)] == "ext4"


def test_tier_mounts_get_the_tier_backend_and_answers_are_cached(tmp_path: Path) -> None:
    info = tmp_path / "mountinfo"
    info.write_text(MOUNTINFO)
    detect.forget_detections()
    try:
        assert detect.backend_name_for_dev(os.makedev(0, 39), str(info)) == "tier"
        assert detect.backend_name_for_dev(os.makedev(0, 40), str(info)) == "none"
        info.write_text("")
        assert detect.backend_name_for_dev(os.makedev(0, 39), str(info)) == "tier"
    finally:
        detect.forget_detections()


def test_real_paths_here_are_not_tier(tmp_path: Path) -> None:
    assert dssio.detect_backend(tmp_path) == "none"
    assert dssio.detect_backend("/") == "none"
