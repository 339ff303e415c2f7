"""The all-in-one cluster's rings: one object ring per storage policy, named as Swift looks
for them, each placing its replicas on distinct devices of the object server."""

from __future__ import annotations

from pathlib import Path

import pytest
from swift.common.ring import RingData

from swift_dss.deploy.rings import build_rings, object_ring_name, storage_policies
from swift_dss.deploy.swift_config import render

PORTS = {"account": 6012, "container": 6011, "object": 6010}


def test_object_ring_names_follow_swift() -> None:
    assert object_ring_name(0) == "object"
    assert object_ring_name(1) == "object-1"
    assert object_ring_name(12) == "object-12"


def test_one_object_ring_per_policy(tmp_path: Path) -> None:
    paths = build_rings(tmp_path, ["d1", "d2", "d3"], PORTS, 2, policies=(0, 1))
    assert sorted(p.name for p in paths) == [
        "account.ring.gz",
        "container.ring.gz",
        "object-1.ring.gz",
        "object.ring.gz",
    ]
    for stem in ("object", "object-1"):
        ring = RingData.load(str(tmp_path / f"{stem}.ring.gz"))
        assert ring.replica_count == 2
        assert {d["port"] for d in ring.devs} == {PORTS["object"]}
        # Each partition's two replicas on two devices.
        for part in range(2**ring.part_power):
            assert len({ids[part] for ids in ring._replica2part2dev_id}) == 2
    account = RingData.load(str(tmp_path / "account.ring.gz"))
    assert {d["port"] for d in account.devs} == {PORTS["account"]}


def test_default_is_policy_zero_only(tmp_path: Path) -> None:
    build_rings(tmp_path, ["d1"], PORTS, 1)
    assert (tmp_path / "object.ring.gz").exists()
    assert not (tmp_path / "object-1.ring.gz").exists()


def test_more_replicas_than_devices_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="2 replicas need at least 2 devices"):
        build_rings(tmp_path, ["d1"], PORTS, 2, policies=(0, 1))


def test_the_clusters_swift_conf_names_the_policies_rings_are_built_for(tmp_path: Path) -> None:
    conf = tmp_path / "swift.conf"
    render("swift.conf", conf, {"hash_prefix": "p", "hash_suffix": "s"})
    assert storage_policies(conf) == [0, 1]
