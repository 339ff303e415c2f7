"""The fault scenarios: a device wiped and rebuilt by replication, a storage node and a tier
daemon each SIGKILLed under PUT/GET load, a node's SSD cache lost. Each returns its figures
and lists naming every failure."""

from __future__ import annotations

import hashlib
import random
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from swift_dss.client.api import DssError
from swift_dss.deploy.local_cluster import LocalCluster
from swift_dss.formats import ClassMap
from swift_dss.reliability.checks import (
    Stored,
    check_via_proxy,
    class_growth,
    loss_counts,
    proxy_problems,
    put,
    recorded_writes,
    replica_content_problems,
    replica_problems,
    replicas_of,
    tier_block_problems,
    whole_block_classes,
    writes_match,
    writes_of,
)
from swift_dss.reliability.client import ClusterClient

#: The classes the local cluster's operator policy lets a client set.
ALLOWED = (0, *range(11, 32))


def random_classes(rng: random.Random, size: int) -> ClassMap:
    sectors = max(1, size // 512)
    if rng.random() < 0.4 or sectors < 4:
        return ClassMap.build(rng.choice(ALLOWED))
    cuts = sorted(rng.sample(range(1, sectors), min(3, sectors - 1)))
    starts = [0, *cuts]
    ranges = [
        (a, b - a, rng.choice(ALLOWED[1:]))
        for a, b in zip(starts, [*cuts, sectors], strict=True)
        if rng.random() < 0.7
    ]
    return ClassMap.build(rng.choice(ALLOWED), ranges, size=size)


def replicate_all(cluster: LocalCluster, databases: bool = False) -> int:
    """A replication pass on every node: objects, and with DATABASES account and container
    databases first (after a fault that destroyed some)."""
    kinds = ("account", "container", "object") if databases else ("object",)
    for kind in kinds:
        cluster.run_replicators(cluster.node_names, kind)
    return len(cluster.node_names)


# --- classes survive replication -------------------------------------------------------------


def classes_survive_wipe(
    cluster: LocalCluster,
    client: ClusterClient,
    objects: int = 24,
    victim: str = "s2",
    seed: int = 1,
) -> dict[str, Any]:
    """Store classified objects, wipe VICTIM's device, replicate; check every replica."""
    rng = random.Random(seed)
    container = f"repl-{uuid.uuid4().hex[:8]}"
    client.request("PUT", container)
    stored = []
    for i in range(objects):
        size = 2048 + 1031 * i  # distinct sizes, several sectors each
        data = rng.randbytes(size)
        obj = put(client, f"{container}/o{i}", data, random_classes(rng, size))
        if obj is None:
            raise RuntimeError(f"PUT {container}/o{i} failed on a healthy cluster")
        stored.append(obj)
    before = [p for o in stored for p in replica_problems(cluster, client, o)]
    on_victim = [o for o in stored if victim in replicas_of(cluster, o)[1]]
    log = cluster.record_log(victim)
    start = log.stat().st_size if log.exists() else 0
    cluster.wipe_device(victim)
    after_wipe = sum(
        client.direct_head(
            victim, replicas_of(cluster, o)[0], f"{cluster.account}/{o.path}"
        ).status_code
        == 200
        for o in on_victim
    )
    tiered = cluster.cfg.tier_mode is not None
    stats_before = cluster.tier_stats(victim) if tiered else None
    replicate_all(cluster, databases=True)
    problems = [p for o in stored for p in replica_problems(cluster, client, o)]
    tier: dict[str, Any] | None = None
    if stats_before is not None:
        grown = class_growth(stats_before, cluster.tier_stats(victim))
        bs = stats_before["block_size"]
        wanted = {c for o in on_victim for c in whole_block_classes(o, bs)}
        checks = [tier_block_problems(cluster, victim, o) for o in on_victim]
        tier = {
            "classes_of_rebuilt_replicas": sorted(wanted),
            "bytes_per_class_taken_in": {str(c): grown[c] for c in sorted(grown) if grown[c]},
            "classes_missing_from_stats": sorted(c for c in wanted if grown.get(c, 0) <= 0),
            "cached_blocks_checked": sum(n for n, _ in checks),
            "cached_blocks_with_wrong_class": [p for _, ps in checks for p in ps],
        }
    writes = recorded_writes(log, start) if log.exists() else {}
    wrong_writes = [
        o.path
        for o in on_victim
        # Another file of the same size written with this object's class map, byte for
        # byte, is too unlikely to count.
        if not any(
            writes_match(w, o.classes, o.size)
            for w in writes_of(
                writes, cluster.object_hash(cluster.account, *o.path.split("/", 1)), o.size
            )
        )
    ]
    via_proxy = proxy_problems(client, stored)
    return {
        "objects": len(stored),
        "replicas_checked": len(stored) * cluster.cfg.replicas,
        "problems_before_wipe": before,
        "replicas_on_victim": len(on_victim),
        "replicas_on_victim_after_wipe": after_wipe,
        "replica_problems": problems,
        "rebuilt_with_wrong_classes": wrong_writes,
        "proxy_problems": via_proxy,
        "tier": tier,
        "objects_lost": sum("HEAD 404" in p for p in problems),
    }


# --- PUT/GET load ----------------------------------------------------------------------------


@dataclass
class Load:
    client: ClusterClient
    container: str
    seed: int
    acknowledged: list[Stored] = field(default_factory=list)
    puts_failed: int = 0
    gets: int = 0
    failed_gets: list[str] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def worker(self, index: int) -> None:
        client = self.client.thread_copy()
        try:
            self._work(client, index)
        finally:
            client.close()

    def _work(self, client: ClusterClient, index: int) -> None:
        rng = random.Random(self.seed * 1000 + index)
        n = 0
        while not self.stop.is_set():
            with self.lock:
                known = list(self.acknowledged)
            if known and rng.random() < 0.5:
                obj = rng.choice(known)
                try:
                    problem = check_via_proxy(client, obj)
                except DssError as err:
                    problem = f"{obj.path}: {err}"
                with self.lock:
                    self.gets += 1
                    if problem:
                        self.failed_gets.append(problem)
                continue
            size = rng.choice((512, 4096, 65536)) + rng.randrange(4096)
            data = rng.randbytes(size)
            path = f"{self.container}/w{index}-{n}"
            n += 1
            try:
                obj = put(client, path, data, random_classes(rng, size))
            except DssError:
                obj = None
            with self.lock:
                if obj is None:
                    self.puts_failed += 1
                else:
                    self.acknowledged.append(obj)

    def start(self, threads: int) -> list[threading.Thread]:
        workers = [threading.Thread(target=self.worker, args=(i,)) for i in range(threads)]
        for t in workers:
            t.start()
        return workers

    def finish(self, workers: list[threading.Thread]) -> None:
        self.stop.set()
        for t in workers:
            t.join()

    def acked(self) -> int:
        with self.lock:
            return len(self.acknowledged)


# --- a storage node killed under load --------------------------------------------------------


def node_killed_under_load(
    cluster: LocalCluster,
    client: ClusterClient,
    duration: float = 20.0,
    victim: str = "s3",
    threads: int = 3,
    seed: int = 2,
) -> dict[str, Any]:
    """PUT/GET load; VICTIM's servers SIGKILLed a third of the way in; then verify all,
    restart VICTIM, replicate and verify every replica."""
    container = f"load-{uuid.uuid4().hex[:8]}"
    client.request("PUT", container)
    load = Load(client, container, seed)
    workers = load.start(threads)
    try:
        time.sleep(duration / 3)
        killed = cluster.kill_node(victim)
        acked_at_kill = load.acked()
        time.sleep(duration * 2 / 3)
    finally:
        load.finish(workers)
    while_down = proxy_problems(client, load.acknowledged)
    cluster.start_node(victim)
    replicate_all(cluster)
    after = proxy_problems(client, load.acknowledged)
    replicas = [p for o in load.acknowledged for p in replica_problems(cluster, client, o)]
    problems = while_down + after
    return {
        "duration_s": duration,
        "victim": victim,
        "processes_killed": killed,
        "objects_acknowledged": len(load.acknowledged),
        "acknowledged_before_kill": acked_at_kill,
        "puts_failed": load.puts_failed,
        "gets_during_load": load.gets,
        "failed_gets_of_acknowledged_objects": load.failed_gets,
        "problems_while_node_down": while_down,
        "problems_after_repair": after,
        "replica_problems_after_repair": replicas,
        **loss_counts(problems),
    }


# --- the tier daemon killed under load ------------------------------------------------------


def tier_killed_under_load(
    cluster: LocalCluster,
    client: ClusterClient,
    duration: float = 20.0,
    victim: str = "s1",
    threads: int = 3,
    seed: int = 4,
) -> dict[str, Any]:
    """PUT/GET load; VICTIM's dss-tier SIGKILLed a third of the way in (its servers answer
    507 meanwhile) and restarted on its journal at two thirds; then verify every
    acknowledged object through the proxy and on every primary, before and after
    replication."""
    container = f"tierkill-{uuid.uuid4().hex[:8]}"
    client.request("PUT", container)
    load = Load(client, container, seed)
    # Some data on the victim's cache before the kill, so that the replay has work.
    workers = load.start(threads)
    try:
        time.sleep(duration / 3)
        dirty_before = cluster.tier_stats(victim)["dirty_entries"]
        cluster.kill_tier(victim)
        acked_at_kill = load.acked()
        time.sleep(duration / 3)
        replay_log = cluster.start_tier(victim)
        acked_at_restart = load.acked()
        time.sleep(duration / 3)
    finally:
        load.finish(workers)
    replay = [line for line in replay_log.splitlines() if "journal replayed" in line]
    after_restart = proxy_problems(client, load.acknowledged)
    replicate_all(cluster)
    after = proxy_problems(client, load.acknowledged)
    replicas = [p for o in load.acknowledged for p in replica_problems(cluster, client, o)]
    contents = [p for o in load.acknowledged for p in replica_content_problems(cluster, client, o)]
    problems = after_restart + after + contents
    return {
        "duration_s": duration,
        "victim": victim,
        "dirty_blocks_at_kill": dirty_before,
        "journal_replay": replay,
        "objects_acknowledged": len(load.acknowledged),
        "acknowledged_before_kill": acked_at_kill,
        "acknowledged_while_tier_down": acked_at_restart - acked_at_kill,
        "puts_failed": load.puts_failed,
        "gets_during_load": load.gets,
        "failed_gets_of_acknowledged_objects": load.failed_gets,
        "problems_after_restart": after_restart,
        "problems_after_repair": after,
        "replica_problems_after_repair": replicas + contents,
        **loss_counts(problems),
    }


# --- a node's SSD cache lost -----------------------------------------------------------------


def ssd_cache_lost(
    cluster: LocalCluster,
    client: ClusterClient,
    objects: int = 24,
    victim: str = "s4",
    seed: int = 5,
) -> dict[str, Any]:
    """Store objects (their replicas on VICTIM still dirty in its SSD cache), SIGKILL
    VICTIM's dss-tier, empty its SSD, remount: the tier must report the loss and never
    serve a stale copy; then Swift's replicators restore every replica."""
    rng = random.Random(seed)
    container = f"ssdloss-{uuid.uuid4().hex[:8]}"
    client.request("PUT", container)
    stored = []
    for i in range(objects):
        size = 3000 + 977 * i
        obj = put(client, f"{container}/o{i}", rng.randbytes(size), random_classes(rng, size))
        if obj is None:
            raise RuntimeError(f"PUT {container}/o{i} failed on a healthy cluster")
        stored.append(obj)
    on_victim = [o for o in stored if victim in replicas_of(cluster, o)[1]]
    dirty = cluster.tier_stats(victim)["dirty_entries"]
    cluster.kill_tier(victim)
    wiped = cluster.wipe_ssd(victim)
    mount_log = cluster.start_tier(victim)
    stats = cluster.tier_stats(victim)
    events = stats.get("ssd_loss") or []
    lost_files = [f for ev in events for f in ev["files"]]
    # Before any repair: the victim answers each of its objects with the right bytes or
    # not at all, never with what its HDD held before the lost write-back.
    stale, missing_on_victim = [], 0
    for o in on_victim:
        part, _ = replicas_of(cluster, o)
        resp = client.direct("GET", victim, part, f"{cluster.account}/{o.path}")
        if resp.status_code == 404:
            missing_on_victim += 1
        elif resp.status_code != 200 or hashlib.sha256(resp.content).hexdigest() != o.sha256:
            stale.append(f"{o.path} on {victim}: GET {resp.status_code}, wrong bytes")
    before_repair = proxy_problems(client, stored)
    partitions = cluster.invalidate_lost(victim, lost_files)
    replicate_all(cluster, databases=True)
    after = proxy_problems(client, stored)
    replicas = [p for o in stored for p in replica_problems(cluster, client, o)]
    contents = [p for o in stored for p in replica_content_problems(cluster, client, o)]
    problems = before_repair + after + contents
    return {
        "victim": victim,
        "objects": len(stored),
        "replicas_on_victim": len(on_victim),
        "dirty_blocks_at_kill": dirty,
        "ssd_files_wiped": wiped,
        "tier_reported": [line for line in mount_log.splitlines() if "SSD cache lost" in line],
        "loss_events_in_stats": len(events),
        "files_set_aside": len(lost_files),
        "object_files_set_aside": sum(f.endswith(".data") for f in lost_files),
        "replicas_missing_on_victim_before_repair": missing_on_victim,
        "stale_reads": stale,
        "failed_gets_of_acknowledged_objects": before_repair,
        "partitions_rehashed": len(partitions),
        "problems_after_repair": after,
        "replica_problems_after_repair": replicas + contents,
        **loss_counts(problems),
    }
