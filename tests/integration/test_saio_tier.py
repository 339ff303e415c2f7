"""The all-in-one cluster on dss-tier mounts: every device a tier, classes from Swift in the
tier's statistics, reclassification, a clean shutdown, the other tier modes, failed starts.

The module's cluster (two devices, two replicas, dssio `record` in front of the tier) is
shared by the tests in file order; the last of them stops it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from swift_dss.cli import main
from swift_dss.deploy.saio import Saio, SaioConfig, SaioError, mount_type
from swift_dss.dssio import TIER_FSTYPE
from swift_dss.mountinfo import mounts_under
from swift_dss.policies import load_policy
from swift_dss.sizes import parse_size
from swift_dss.tierctl import binary as tierctl_binary
from swift_dss.tierctl.options import cache_size_bytes

from .helpers import Swift, byte_classes, payload, recorded
from .tier_helpers import kill_with_its_helper

pytestmark = pytest.mark.integration

SIZE = 64 * 1024  # a whole number of the reference policy's 4 KiB blocks


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Saio]:
    base = tmp_path_factory.mktemp("saio-tier")
    cfg = SaioConfig(
        dir=base / "c",
        port=0,
        devices=2,
        replicas=2,
        dssio_backend="record",
        object_options={"dssio_record_log": str(base / "record.jsonl")},
    )
    saio = Saio(cfg)
    saio.record_log = base / "record.jsonl"
    try:
        saio.up()
        yield saio
    finally:
        if saio.state_path.exists():
            saio.down()


@pytest.fixture(scope="module")
def swift(cluster: Saio) -> Swift:
    return Swift.with_container(cluster, "c1")


def cli(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.output


def class_total(stats: dict[str, dict[str, Any]], cls: int, *keys: str) -> int:
    """KEYS of class CLS summed over every device's `dss-tier stats`."""
    return sum(
        sum(dev["classes"].get(str(cls), {}).get(key, 0) for key in keys) for dev in stats.values()
    )


def test_every_device_is_a_tier_mount(cluster: Saio) -> None:
    status = cluster.status()
    assert status["up"] and status["tier_mode"] == "dss"
    assert set(status["devices"]) == {"d1", "d2"}
    for name, dev in status["devices"].items():
        assert mount_type(cluster.dir / "devices" / name) == TIER_FSTYPE
        assert dev["mounted"] and dev["tier"]["mode"] == "dss"
        assert Path(f"/proc/{dev['tier']['pid']}").exists()
    # Each tier's SSD and HDD directories sit on the cluster's own tmpfs.
    assert mount_type(cluster.dir / "backing") == "tmpfs"
    stats = cluster.tier_stats()
    assert set(stats) == {"d1", "d2"}
    assert {s["mode"] for s in stats.values()} == {"dss"}
    assert {s["policy"] for s in stats.values()} == {"reference"}
    code, out = cli("saio", "status", "--dir", str(cluster.dir))
    assert code == 0, out
    assert out.count("dss-tier mode dss") == 2
    # On tier mounts the object server writes in pieces of 1 MiB, not Swift's 64 KiB, and
    # a body's transfer lets the worker's other requests in after every chunk.
    conf = (cluster.dir / "object-server.conf").read_text()
    assert "network_chunk_size = 1048576" in conf and "cooperative_period = 1" in conf


def test_put_classes_reach_the_tier(cluster: Saio, swift: Swift) -> None:
    before = cluster.tier_stats()
    with recorded(cluster.record_log) as io:
        resp = swift.request(
            "PUT", "c1/whole", data=payload(SIZE), headers={"X-DSS-Object-Class": "25"}
        )
        assert resp.status_code == 201
        resp = swift.request(
            "PUT", "c1/ranged", data=payload(SIZE), headers={"X-DSS-Range-Class": "0-64-29"}
        )
        assert resp.status_code == 201
    after = cluster.tier_stats()
    # The record backend logged each write and handed it to the tier with its class.
    writes = [e for e in io if e.op == "write"]
    assert writes and {e.cls for e in writes} == {0, 25, 29}
    assert all(e.path.startswith(str(cluster.dir / "devices")) for e in writes)
    backends = {json.loads(line)["backend"] for line in cluster.record_log.read_text().splitlines()}
    assert backends == {"tier"}
    # Both replicas' bytes of each class are in the cache or went past it to the HDD.
    for cls, size in ((25, SIZE), (29, 64 * 512)):
        grown = class_total(after, cls, "cached_bytes", "bypassed_bytes") - class_total(
            before, cls, "cached_bytes", "bypassed_bytes"
        )
        assert grown >= 2 * size, (cls, grown)


def test_classes_reach_the_tier_under_the_second_storage_policy(
    cluster: Saio, swift: Swift
) -> None:
    made = swift.request("PUT", "c-silver", headers={"X-Storage-Policy": "silver"})
    assert made.status_code == 201
    assert swift.request("HEAD", "c-silver").headers["X-Storage-Policy"] == "silver"
    body = payload(SIZE, seed=1)
    with recorded(cluster.record_log) as io:
        resp = swift.request("PUT", "c-silver/o", data=body, headers={"X-DSS-Object-Class": "27"})
        assert resp.status_code == 201
    # Both replicas went through dssio with the class, into policy 1's temporary files,
    # and were committed to its object directory.
    writes = [e for e in io if e.op == "write" and e.cls == 27]
    assert writes and all("/tmp-1/" in e.path for e in writes)
    assert len({e.path.split("/tmp-1/")[0] for e in writes}) == 2
    for device in ("d1", "d2"):
        assert list((cluster.dir / "devices" / device / "objects-1").rglob("*.data"))
    got = swift.request("GET", "c-silver/o")
    assert got.status_code == 200 and got.content == body
    assert got.headers["X-DSS-Object-Class"] == "27"


def test_container_databases_get_the_policys_default_class(cluster: Saio, swift: Swift) -> None:
    rules = load_policy("reference")["classify"]["name"]
    db_class = next(r["class"] for r in rules if ".db" in r["suffix"])
    before = cluster.tier_stats()
    assert swift.request("PUT", "c-db").status_code == 201
    assert swift.request("PUT", "c-db/o", data=b"x" * 100).status_code == 201
    after = cluster.tier_stats()
    keys = ("cached_bytes", "bypassed_bytes", "written_back_bytes", "hits", "misses")
    assert class_total(after, db_class, *keys) > class_total(before, db_class, *keys)


def test_post_reclassification_moves_bytes_between_classes(cluster: Saio, swift: Swift) -> None:
    name = "c1/moving"
    resp = swift.request("PUT", name, data=payload(SIZE), headers={"X-DSS-Object-Class": "24"})
    assert resp.status_code == 201
    before = cluster.tier_stats()
    with recorded(cluster.record_log) as io:
        resp = swift.request("POST", name, headers={"X-DSS-Object-Class": "26"})
        assert resp.status_code == 202
    after = cluster.tier_stats()
    assert byte_classes(io, "reclassify", SIZE) == [26] * SIZE
    assert class_total(before, 24, "cached_bytes") - class_total(after, 24, "cached_bytes") >= (
        2 * SIZE
    )
    assert class_total(after, 26, "cached_bytes") - class_total(before, 26, "cached_bytes") >= (
        2 * SIZE
    )
    assert swift.request("GET", name).content == payload(SIZE)


def test_down_unmounts_every_tier(cluster: Saio) -> None:
    pids = [d["tier"]["pid"] for d in cluster.status()["devices"].values()]
    code, out = cli("saio", "down", "--dir", str(cluster.dir))
    assert code == 0, out
    assert mounts_under(cluster.dir) == []
    # `dss-tier umount` returned only once each daemon had written back and exited.
    for pid in pids:
        stat = Path(f"/proc/{pid}/stat")
        assert not stat.exists() or stat.read_text().rsplit(")", 1)[1].split()[0] in "ZX"
    assert not cluster.state_path.exists()
    assert not [line for line in (cluster.dir / "log" / "tier-d1.log").read_text().splitlines()]


def test_a_device_whose_daemon_died_is_reported_and_replaced(tmp_path: Path) -> None:
    """A tier daemon killed with the fusermount3 that would have unmounted its mount leaves
    the mount listed: status says the device does not serve, and down then up make a
    cluster that serves."""
    cluster = Saio(SaioConfig(dir=tmp_path / "c", port=0, devices_size="512m"))
    try:
        cluster.up()
        swift = Swift.with_container(cluster, "c")
        data = os.urandom(100_000)
        assert swift.request("PUT", "c/o", data=data).status_code == 201
        device = cluster.status()["devices"]["d1"]
        kill_with_its_helper(device["tier"]["pid"], device["path"])
        status = cluster.status()
        assert not status["up"]
        assert status["devices"]["d1"]["mounted"] and "error" in status["devices"]["d1"]["tier"]
        code, out = cli("saio", "status", "--dir", str(cluster.dir))
        assert code == 1 and "DAEMON DOES NOT ANSWER" in out, out
        cluster.down()
        assert mounts_under(cluster.dir) == []
        cluster = Saio(SaioConfig(dir=tmp_path / "c", port=0, devices_size="512m"))
        cluster.up()
        assert cluster.status()["up"]
        # A new cluster (its devices start empty): it serves.
        swift = Swift.with_container(cluster, "c")
        assert swift.request("PUT", "c/o", data=data).status_code == 201
        assert swift.request("GET", "c/o").content == data
    finally:
        if cluster.state_path.exists():
            cluster.down()
    assert mounts_under(tmp_path / "c") == []


@pytest.mark.parametrize("mode", ["hdd", "ssd", "lru", "tiered"])
def test_other_tier_modes_serve(mode: str, tmp_path: Path) -> None:
    cfg = SaioConfig(dir=tmp_path / "c", port=0, tier_mode=mode, devices_size="512m")
    cluster = Saio(cfg)
    try:
        cluster.up()
        swift = Swift.connect(cluster)
        assert swift.request("PUT", "c").status_code == 201
        data = os.urandom(300_000)
        resp = swift.request("PUT", "c/o", data=data, headers={"X-DSS-Object-Class": "27"})
        assert resp.status_code == 201
        assert swift.request("GET", "c/o").content == data
        stats = cluster.tier_stats()["d1"]
        assert stats["mode"] == mode
        if mode == "hdd":
            # Models off: the kernel wrote and read the object's data on the HDD itself
            # (passthrough), which the per-class counters do not see.
            assert stats["passthrough"] and stats["passthrough_opens"] > 0
        else:
            assert "27" in stats["classes"]
            assert stats["passthrough_opens"] == 0
        if mode == "ssd":
            # Everything is pinned on the SSD, so its cache is the whole backing tmpfs.
            assert stats["cache_entries"] * stats["block_size"] == parse_size("512m")
        else:
            assert stats["cache_entries"] * stats["block_size"] == parse_size("256MiB")
    finally:
        cluster.down()
    assert mounts_under(cfg.dir) == []


def test_failed_mount_leaves_nothing_behind(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "bad"\nblock_size = 3\n')
    cfg = SaioConfig(dir=tmp_path / "c", port=0, devices=2, tier_policy=str(bad))
    with pytest.raises(
        SaioError, match=r"mount of \S+/d1 failed: dss-tier: \S+bad.toml.*low_water"
    ):
        Saio(cfg).up()
    assert mounts_under(cfg.dir) == []
    assert not (cfg.dir / "saio.json").exists()


def test_missing_tier_binary_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tierctl_binary, "find", lambda: None)
    code, out = cli("saio", "up", "--dir", str(tmp_path / "c"), "--port", "0")
    assert code == 1
    assert out.startswith("Error: the dss-tier binary is missing") and out.count("\n") == 1
    assert not (tmp_path / "c").exists()


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"tier_policy": "no-such-policy"}, "no policy file 'no-such-policy'"),
        ({"tier_cache_size": "lots"}, "tier cache size 'lots'"),
        ({"tier_ssd_model": "floppy"}, "unknown SSD model 'floppy'"),
        ({"tier_mode": "fast"}, "unknown tier mode 'fast'"),
    ],
)
def test_bad_tier_settings_are_refused_before_anything_starts(
    tmp_path: Path, change: dict[str, str], message: str
) -> None:
    cfg = SaioConfig(dir=tmp_path / "c", port=0, **change)
    with pytest.raises(SaioError, match=message):
        Saio(cfg).up()
    assert not cfg.dir.exists()


def test_cache_size_defaults_to_the_backing_tmpfs_only_in_mode_ssd(tmp_path: Path) -> None:
    def cache(**kw: Any) -> str:
        return SaioConfig(dir=tmp_path, devices_size="2g", **kw).tier_cache()

    assert cache() == "256MiB"
    assert cache(tier_mode="ssd") == "2g"
    assert cache(tier_mode="ssd", tier_cache_size="1GiB") == "1GiB"
    assert cache(tier_mode="lru", tier_cache_size="64MiB") == "64MiB"
    assert [cache_size_bytes(s) for s in ("256MiB", "4g", "4096", "1 k", "lots", "1.5G")] == [
        256 << 20,
        4 << 30,
        4096,
        1024,
        0,
        0,
    ]
