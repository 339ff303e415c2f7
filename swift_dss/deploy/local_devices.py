"""The storage nodes' devices of the local cluster, and what scenarios do to them.

Each node has one device, d1, in a shared tmpfs of its own (nodes/sN/devices): a plain
directory (tier mode none) or a dss-tier mount whose SSD and HDD directories sit on a
second tmpfs (nodes/sN/backing/d1/{ssd,hdd}). `NodeDevices` makes them, reads their tiers'
reports, and does what tests and reliability scenarios need: kill and restart a tier, replace
an SSD, blank a disk.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import Any

from swift_dss.deploy.devices import (
    mount_tier,
    mount_tmpfs,
    release_devices,
    run_quiet,
    wait_tier_mounted,
)
from swift_dss.deploy.local_cluster_config import ClusterError, LocalClusterConfig
from swift_dss.deploy.process_cluster import ProcessCluster
from swift_dss.deploy.saio_config import tier_binary, tier_errors
from swift_dss.dssio.detect import TIER_FSTYPE
from swift_dss.mountinfo import mount_type
from swift_dss.procinfo import read_proc
from swift_dss.tierctl import daemon, report
from swift_dss.tierctl.daemon import Daemon

DEVICE = "d1"
#: The tmpfs that holds a tier node's mount point (its data lives on the backing tmpfs).
MOUNTPOINTS_SIZE = "16m"


def node_name(index: int) -> str:
    return f"s{index}"


class NodeDevices(ProcessCluster):
    """A cluster of storage nodes on this machine, each with one device."""

    cfg: LocalClusterConfig

    # -- paths

    @property
    def node_names(self) -> list[str]:
        return [node_name(i) for i in range(1, self.cfg.nodes + 1)]

    def node_dir(self, node: str) -> Path:
        return self.dir / "nodes" / node

    def device_path(self, node: str) -> Path:
        return self.node_dir(node) / "devices" / DEVICE

    def backing_dir(self, node: str) -> Path:
        return self.node_dir(node) / "backing" / DEVICE

    def ssd_dir(self, node: str) -> Path:
        return self.backing_dir(node) / "ssd"

    def hdd_dir(self, node: str) -> Path:
        return self.backing_dir(node) / "hdd"

    def tier_log(self, node: str) -> Path:
        return self.node_dir(node) / "log" / f"tier-{DEVICE}.log"

    # -- making them

    def _provision_node(self, node: str) -> dict[str, Any] | None:
        """Make NODE's device; for a tier, return its daemon's record once started (the
        caller waits for the mounts, so that the daemons start side by side)."""
        devices = self.node_dir(node) / "devices"
        tiered = self.cfg.tier_mode is not None
        self._add_tmpfs(devices, MOUNTPOINTS_SIZE if tiered else self.cfg.devices_size)
        # Each server's namespace gets a copy of the mounts as they are when it starts
        # (`ip netns exec` unshares them); a shared mount here makes a tier mounted or
        # unmounted later (a restarted daemon) show there too.
        run_quiet(["mount", "--make-shared", str(devices)], f"sharing {devices}")
        (devices / DEVICE).mkdir()
        if not tiered:
            return None
        self._add_tmpfs(self.node_dir(node) / "backing", self.cfg.devices_size)
        return self._start_tier(node)

    def _add_tmpfs(self, path: Path, size: str) -> None:
        mount_tmpfs(path, size)
        self._state.data["mounts"].append({"path": str(path), "kind": "tmpfs"})
        self._state.save()

    def _start_tier(self, node: str) -> dict[str, Any]:
        """Start NODE's dss-tier daemon (recorded at once, replacing an earlier record)."""
        record = mount_tier(
            self.cfg.tier_config().tier_options(),
            tier_binary(),
            self.backing_dir(node),
            self.device_path(node),
            self.tier_log(node),
        )
        mounts = self._state.data["mounts"]
        old = [i for i, m in enumerate(mounts) if m["path"] == record["path"]]
        if old:
            mounts[old[0]] = record
        else:
            mounts.append(record)
        self._state.save()
        return record

    # -- the tiers

    def tier_record(self, node: str) -> dict[str, Any]:
        path = str(self.device_path(node))
        found = [m for m in self._state.mounts() if m["path"] == path and m["kind"] == "tier"]
        if not found:
            raise ClusterError(f"{node} has no dss-tier device (tier mode none)")
        return found[0]

    def tier_pid(self, node: str) -> int:
        return int(self.tier_record(node)["pid"])

    def tier_mounted(self, node: str) -> bool:
        return mount_type(self.device_path(node)) == TIER_FSTYPE

    def tier_alive(self, node: str) -> bool:
        """NODE's dss-tier daemon runs (its mount may outlive it, answering ENOTCONN)."""
        return daemon.alive(Daemon.from_record(self.tier_record(node)))

    def tier_stats(self, node: str) -> dict[str, Any]:
        """`dss-tier stats --json` of NODE's device."""
        with tier_errors(ClusterError):
            return report.stats(self.device_path(node), binary=tier_binary()).raw

    def tier_content(self, node: str) -> dict[str, Any]:
        """`dss-tier dump --json` of NODE's device: the cache's blocks by file and class."""
        with tier_errors(ClusterError):
            return report.dump(self.device_path(node), binary=tier_binary()).raw

    def kill_tier(self, node: str) -> None:
        """SIGKILL NODE's dss-tier daemon (a crash: no write-back, the journal stays as it
        is) and wait until its mount is gone, so that the node's servers answer 507."""
        record = self.tier_record(node)
        daemon.kill(Daemon.from_record(record))
        deadline = time.monotonic() + 30
        while (info := read_proc(int(record["pid"]))) and info[0] not in "ZX":
            if time.monotonic() > deadline:
                raise ClusterError(f"{node}'s dss-tier (pid {record['pid']}) survived SIGKILL")
            time.sleep(0.05)
        # FUSE's auto-unmount helper lets the dead mount go; whatever is left, this does.
        stuck = release_devices([record])
        if stuck:
            raise ClusterError(f"{node}'s dead dss-tier mount stays: {stuck}")

    def start_tier(self, node: str) -> str:
        """(Re)start NODE's dss-tier daemon on its SSD and HDD; return what it logged while
        mounting (a journal replay, an SSD loss)."""
        if self.tier_mounted(node):
            raise ClusterError(f"{node}'s dss-tier is already mounted")
        record = self._start_tier(node)
        wait_tier_mounted(record)
        with open(record["log"], "rb") as f:
            f.seek(record["log_start"])
            return f.read().decode(errors="replace")

    def wipe_ssd(self, node: str) -> int:
        """Empty NODE's SSD directory (a replaced SSD) while its tier is not mounted;
        return how many files went."""
        if self.tier_mounted(node):
            raise ClusterError(f"{node}'s dss-tier is mounted: kill or unmount it first")
        ssd = self.ssd_dir(node)
        gone = sum(1 for p in ssd.rglob("*") if p.is_file())
        shutil.rmtree(ssd)
        ssd.mkdir()
        return gone

    def invalidate_lost(self, node: str, files: list[str]) -> list[str]:
        """Make Swift rehash the partitions of FILES (paths on NODE's device that its tier
        set aside after an SSD loss), so that replication sees them missing; return the
        partitions. Swift caches each partition's hashes in hashes.pkl and would otherwise
        go on reporting the lost objects as present."""
        parts = sorted({"/".join(f.split("/")[:2]) for f in files if f.startswith("objects/")})
        for part in parts:
            (self.device_path(node) / part / "hashes.pkl").unlink(missing_ok=True)
        return parts

    def wipe_device(self, node: str) -> None:
        """Empty NODE's device as if its disk had been replaced by a blank one."""
        dev = self.device_path(node)
        for entry in dev.iterdir():
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry)
            else:
                entry.unlink()
