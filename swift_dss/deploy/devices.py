"""The clusters' Swift devices on this machine: tmpfs mounts, and dss-tier mounts whose SSD
and HDD directories sit on a tmpfs; provisioned for the all-in-one cluster, and released
again newest first, even after a partial provisioning.

A cluster's state file records every mount as it is made: {"path", "kind": "tmpfs"}, or a
tier daemon's record (swift_dss.tierctl.daemon.Daemon.record, kind "tier").
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

from swift_dss.deploy.saio_config import SaioConfig, SaioError, tier_binary, tier_errors
from swift_dss.mountinfo import mount_type
from swift_dss.tierctl import daemon
from swift_dss.tierctl.daemon import Daemon
from swift_dss.tierctl.options import MountOptions


def device_names(count: int) -> list[str]:
    return [f"d{i}" for i in range(1, count + 1)]


def run_quiet(cmd: list[str], what: str) -> None:
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        reason = (proc.stderr or proc.stdout).strip().splitlines()
        raise SaioError(f"{what} failed: {reason[-1] if reason else f'exit {proc.returncode}'}")


def mount_tmpfs(path: Path, size: str) -> None:
    path.mkdir(parents=True, exist_ok=True)
    run_quiet(
        ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs", str(path)],
        f"mounting a tmpfs on {path}",
    )


def mount_tier(
    options: MountOptions, tier: str, backing: Path, mountpoint: Path, log: Path
) -> dict[str, Any]:
    """Start a dss-tier daemon mounting BACKING/ssd and BACKING/hdd on MOUNTPOINT and return
    its mount record, without waiting for the mount (`wait_tier_mounted` does)."""
    return daemon.spawn(tier, backing / "ssd", backing / "hdd", mountpoint, options, log).record()


def wait_tier_mounted(record: dict[str, Any], error: type[Exception] = SaioError) -> None:
    """Return once the tier of RECORD shows its mount; ERROR saying why it did not."""
    with tier_errors(error):
        daemon.wait_mounted(Daemon.from_record(record))


def provision_devices(cfg: SaioConfig, record: list[dict[str, Any]], log_dir: Path) -> list[str]:
    """Make the Swift devices under DIR/devices; return their names.

    Every mount made is appended to RECORD as soon as it is started, so that
    `release_devices` can undo a partial provisioning. Devices must support large user
    xattrs, which rules out ext4 here: plain devices are directories on a tmpfs; with a
    tier mode each device is a dss-tier mount whose SSD and HDD directories sit on a tmpfs.
    """
    names = device_names(cfg.devices)
    devices = cfg.dir / "devices"
    if cfg.tier_mode is None:
        mount_tmpfs(devices, cfg.devices_size)
        record.append({"path": str(devices), "kind": "tmpfs"})
        for name in names:
            (devices / name).mkdir()
        return names

    tier = tier_binary()
    options = cfg.tier_options()
    backing = cfg.dir / "backing"
    mount_tmpfs(backing, cfg.devices_size)
    record.append({"path": str(backing), "kind": "tmpfs"})
    started = []
    for name in names:
        log = log_dir / f"tier-{name}.log"
        mount = mount_tier(options, tier, backing / name, devices / name, log)
        record.append(mount)
        started.append(mount)
    # The daemons start side by side; then each must show its mount.
    for mount in started:
        wait_tier_mounted(mount)
    return names


def release_devices(record: list[dict[str, Any]], discard: bool = False) -> list[str]:
    """Undo the mounts in RECORD, newest first; return the paths that are still mounted.
    DISCARD kills the tier daemons first, skipping their write-back."""
    if discard:
        daemon.discard([Daemon.from_record(m) for m in record if m["kind"] == daemon.KIND])
    stuck = []
    for mount in reversed(record):
        path = mount["path"]
        tier = Daemon.from_record(mount) if mount["kind"] == daemon.KIND else None
        if tier is not None:
            daemon.settle(tier)
            daemon.unmount(path)
        if mount_type(path) is not None:
            subprocess.run(["umount", path], capture_output=True, check=False)
        if tier is not None and mount_type(path) is None:
            daemon.stop(tier)
        if mount_type(path) is not None:
            # Still busy (a straggler holds a file open), or its daemon is dead: detach it
            # now, free it when unused.
            subprocess.run(["umount", "--lazy", path], capture_output=True, check=False)
        if mount_type(path) is not None:
            stuck.append(path)
    daemon.reap()
    return stuck
