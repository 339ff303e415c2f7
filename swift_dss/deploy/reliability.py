"""Reliability scenarios on the local multi-node cluster, and `dss reliability run`.

Each scenario returns plain figures (counts, and lists naming every failure) so that the
tests assert on them and `run` writes them to DIR/reliability.json.
"""

from __future__ import annotations

import hashlib
import json
import random
import threading
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click
import requests

from swift_dss.deploy.bad_inputs import BadInput, corpus, mutations
from swift_dss.deploy.deploy_cli import tier_mode_option
from swift_dss.deploy.local_cluster import LocalCluster, LocalClusterConfig
from swift_dss.formats import ClassMap, classmap_from_headers, classmap_to_headers, from_sysmeta

ALLOWED = (0, *range(11, 32))
LOSS_KEYS = (
    "objects_lost",
    "objects_corrupt",
    "failed_gets_of_acknowledged_objects",
    "stale_reads_after_ssd_loss",
)
NEEDS_TIER = {
    "tier_daemon_kill": "needs dss-tier (kill -9 of the tier daemon during load)",
    "ssd_cache_loss": "needs dss-tier (loss of a node's SSD cache)",
    "tier_stats": "needs dss-tier (classes of rebuilt replicas in `dss-tier stats`)",
}
#: A daemon's memory counts as flat unless the last quarter of the soak holds more than
#: this much above the second quarter (after the warm-up), both as medians, ...
MEMORY_GROWTH_PCT = 20.0
#: ... and more than this in absolute terms (small daemons wobble by a few MiB).
MEMORY_GROWTH_MIN_KIB = 16 * 1024


class Client:
    """An authenticated session on the cluster's proxy (never an environment proxy)."""

    def __init__(self, cluster: LocalCluster) -> None:
        self.cluster = cluster
        self.session = requests.Session()
        self.session.trust_env = False
        self.url, self.token = cluster.get_token()

    def request(self, method: str, path: str, **kwargs: Any) -> requests.Response:
        headers = {"X-Auth-Token": self.token, **(kwargs.pop("headers", None) or {})}
        return self.session.request(
            method, f"{self.url}/{path}", headers=headers, timeout=60, **kwargs
        )

    def direct_head(self, node: str, part: int, path: str) -> requests.Response:
        return self.direct("HEAD", node, part, path)

    def direct(self, method: str, node: str, part: int, path: str) -> requests.Response:
        """METHOD straight to NODE's object server, past the proxy."""
        port = self.cluster.ports["object"]
        url = f"http://{self.cluster.node_ip(node)}:{port}/d1/{part}/{path}"
        headers = {"X-Backend-Storage-Policy-Index": "0"}
        return self.session.request(method, url, headers=headers, timeout=60)

    def thread_copy(self) -> Client:
        """The same login with a session of its own (requests sessions are not
        thread-safe)."""
        client = Client.__new__(Client)
        client.__dict__.update(self.__dict__)
        client.session = requests.Session()
        client.session.trust_env = False
        return client


@dataclass
class Stored:
    path: str  # container/object
    sha256: str
    size: int
    classes: ClassMap


def header_classes(headers: Any) -> ClassMap:
    """The class map a proxy HEAD/GET answered."""
    cmap = classmap_from_headers(
        headers.get("X-DSS-Object-Class"), headers.get("X-DSS-Range-Class")
    )
    return cmap or ClassMap()


def put(client: Client, path: str, data: bytes, cmap: ClassMap) -> Stored | None:
    resp = client.request("PUT", path, data=data, headers=classmap_to_headers(cmap))
    if resp.status_code != 201:
        return None
    return Stored(path, hashlib.sha256(data).hexdigest(), len(data), cmap)


def check_via_proxy(client: Client, obj: Stored) -> str | None:
    """None if the object GETs back intact with its classes, else what is wrong."""
    resp = client.request("GET", obj.path)
    if resp.status_code != 200:
        return f"{obj.path}: GET {resp.status_code}"
    if hashlib.sha256(resp.content).hexdigest() != obj.sha256:
        return f"{obj.path}: corrupt ({len(resp.content)} bytes, expected {obj.size})"
    if header_classes(resp.headers) != obj.classes:
        return f"{obj.path}: classes {header_classes(resp.headers)} != {obj.classes}"
    return None


def proxy_problems(client: Client, objs: list[Stored]) -> list[str]:
    """What is wrong with each of ``objs`` read back through the proxy (none: [])."""
    return [p for o in objs if (p := check_via_proxy(client, o))]


def loss_counts(problems: list[str]) -> dict[str, int]:
    """Objects lost (a GET answered 404) and corrupt, from ``check_via_proxy``'s reports."""
    return {
        "objects_lost": sum(" GET 404" in p for p in problems),
        "objects_corrupt": sum("corrupt" in p for p in problems),
    }


# --- classes survive replication -------------------------------------------------------------


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


def data_files(cluster: LocalCluster, node: str, part: int, obj_hash: str) -> list[Path]:
    folder = cluster.device_path(node) / "objects" / str(part) / obj_hash[-3:] / obj_hash
    return sorted(folder.glob("*.data")) if folder.is_dir() else []


def recorded_writes(log: Path, start: int) -> dict[str, list[tuple[int, int, int]]]:
    """Object hash -> (offset, length, class) of each write the record backend logged.

    Swift writes a new object into a temporary file: an unnamed one in the object's own
    directory where the filesystem has O_TMPFILE (tmpfs: the path names the hash), else a
    named one in the device's tmp/ (FUSE, so a dss-tier mount). Writes of the latter are
    keyed by that file's path.
    """
    out: dict[str, list[tuple[int, int, int]]] = {}
    with open(log, "rb") as f:
        f.seek(start)
        for line in f.read().splitlines():
            rec = json.loads(line)
            parts = rec["path"].split("/")
            if rec["op"] != "write":
                continue
            if "objects" in parts:
                # .../objects/PART/SUFFIX/HASH/<temp file>
                key = parts[parts.index("objects") + 3]
            elif "tmp" in parts:
                key = rec["path"]
            else:
                continue
            out.setdefault(key, []).append((rec["offset"], rec["length"], rec["class"]))
    return out


def writes_of(
    writes: dict[str, list[tuple[int, int, int]]], obj_hash: str, size: int
) -> list[list[tuple[int, int, int]]]:
    """The candidates for one object's recorded writes: those keyed by its hash, or else
    those of each temporary file written to exactly SIZE bytes."""
    if obj_hash in writes:
        return [writes[obj_hash]]
    return [w for key, w in writes.items() if "/" in key and max(o + n for o, n, _ in w) == size]


def classes_of_bytes(cmap: ClassMap, size: int) -> list[int]:
    return [cmap.class_at(i) for i in range(size)]


def writes_match(writes: list[tuple[int, int, int]], cmap: ClassMap, size: int) -> bool:
    got: list[int | None] = [None] * size
    for offset, length, cls in writes:
        for i in range(offset, min(offset + length, size)):
            got[i] = cls
    return got == classes_of_bytes(cmap, size)


def replica_problems(cluster: LocalCluster, client: Client, obj: Stored) -> list[str]:
    """Every primary holds the object with its classes (object server and .data xattrs)."""
    from swift.obj.diskfile import read_metadata

    account = cluster.account
    container, name = obj.path.split("/", 1)
    part, nodes = cluster.object_replicas(account, container, name)
    obj_hash = cluster.object_hash(account, container, name)
    problems = []
    for node in nodes:
        head = client.direct_head(node, part, f"{account}/{obj.path}")
        if head.status_code != 200:
            problems.append(f"{obj.path} on {node}: HEAD {head.status_code}")
            continue
        if (from_sysmeta(head.headers) or ClassMap()) != obj.classes:
            problems.append(f"{obj.path} on {node}: object server reports other classes")
        files = data_files(cluster, node, part, obj_hash)
        if not files:
            problems.append(f"{obj.path} on {node}: no .data file")
            continue
        meta = read_metadata(str(files[-1]))
        if (from_sysmeta(meta) or ClassMap()) != obj.classes:
            problems.append(f"{obj.path} on {node}: .data xattrs hold other classes")
        if int(meta.get("Content-Length", -1)) != obj.size:
            problems.append(f"{obj.path} on {node}: .data has the wrong length")
    return problems


def replica_content_problems(cluster: LocalCluster, client: Client, obj: Stored) -> list[str]:
    """Every primary serves the object's exact bytes (a GET straight to its object
    server)."""
    account = cluster.account
    container, name = obj.path.split("/", 1)
    part, nodes = cluster.object_replicas(account, container, name)
    problems = []
    for node in nodes:
        resp = client.direct("GET", node, part, f"{account}/{obj.path}")
        if resp.status_code != 200:
            problems.append(f"{obj.path} on {node}: GET {resp.status_code}")
        elif hashlib.sha256(resp.content).hexdigest() != obj.sha256:
            problems.append(f"{obj.path} on {node}: corrupt ({len(resp.content)} bytes)")
    return problems


def replicas_of(cluster: LocalCluster, obj: Stored) -> tuple[int, list[str]]:
    return cluster.object_replicas(cluster.account, *obj.path.split("/", 1))


def class_growth(before: dict[str, Any], after: dict[str, Any]) -> dict[int, int]:
    """Bytes per class that a tier took in between two `dss-tier stats`: cached,
    bypassed to the HDD or evicted (files removed in between would count against it)."""
    keys = ("cached_bytes", "bypassed_bytes", "evicted_bytes")
    out = {}
    for cls in set(before["classes"]) | set(after["classes"]):
        grown = sum(
            after["classes"].get(cls, {}).get(k, 0) - before["classes"].get(cls, {}).get(k, 0)
            for k in keys
        )
        out[int(cls)] = grown
    return out


def block_classes(obj: Stored, block_size: int) -> list[set[int]]:
    """The classes of the bytes of each BLOCK_SIZE block of OBJ's data."""
    return [
        {obj.classes.class_at(i) for i in range(start, min(start + block_size, obj.size), 512)}
        for start in range(0, obj.size, block_size)
    ]


def whole_block_classes(obj: Stored, block_size: int) -> set[int]:
    """The classes other than 0 that some block of OBJ holds alone: what a tier must have
    been told (a block of several classes takes one of them)."""
    return {
        c for classes in block_classes(obj, block_size) if len(classes) == 1 for c in classes
    } - {0}


def tier_block_problems(cluster: LocalCluster, node: str, obj: Stored) -> tuple[int, list[str]]:
    """(blocks checked, problems): each block of OBJ's .data file that NODE's tier caches
    carries the class the object gives every byte of that block (`dss-tier dump`).
    Blocks that mix classes, or hold class 0 (the tier classifies those itself), are
    left out."""
    account = cluster.account
    container, name = obj.path.split("/", 1)
    part, _ = cluster.object_replicas(account, container, name)
    obj_hash = cluster.object_hash(account, container, name)
    folder = cluster.hdd_dir(node) / "objects" / str(part) / obj_hash[-3:] / obj_hash
    files = sorted(folder.glob("*.data")) if folder.is_dir() else []
    if not files:
        return 0, [f"{obj.path} on {node}: no .data file on the tier's HDD"]
    content = cluster.tier_content(node)
    bs = content["block_size"]
    ino = files[-1].stat().st_ino
    blocks = block_classes(obj, bs)
    checked, problems = 0, []
    for ext in content["extents"]:
        if ext["file"] != ino:
            continue
        for index in range(ext["index"], min(ext["index"] + ext["blocks"], len(blocks))):
            classes = set(blocks[index])
            if len(classes) != 1 or classes == {0}:
                continue
            checked += 1
            if ext["class"] not in classes:
                problems.append(
                    f"{obj.path} on {node}: block {index} cached as class {ext['class']}, "
                    f"the object gives it {classes.pop()}"
                )
    return checked, problems


def replicate_all(cluster: LocalCluster, databases: bool = False) -> int:
    """A replication pass on every node: objects, and with DATABASES account and container
    databases first (after a fault that destroyed some)."""
    kinds = ("account", "container", "object") if databases else ("object",)
    for kind in kinds:
        cluster.run_replicators(cluster.node_names, kind)
    return len(cluster.node_names)


def classes_survive_wipe(
    cluster: LocalCluster, client: Client, objects: int = 24, victim: str = "s2", seed: int = 1
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


# --- a storage node killed under load --------------------------------------------------------


@dataclass
class Load:
    client: Client
    container: str
    seed: int
    acknowledged: list[Stored] = field(default_factory=list)
    puts_failed: int = 0
    gets: int = 0
    failed_gets: list[str] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def worker(self, index: int) -> None:
        rng = random.Random(self.seed * 1000 + index)
        client = self.client.thread_copy()
        n = 0
        while not self.stop.is_set():
            with self.lock:
                known = list(self.acknowledged)
            if known and rng.random() < 0.5:
                obj = rng.choice(known)
                try:
                    problem = check_via_proxy(client, obj)
                except requests.RequestException as err:
                    problem = f"{obj.path}: {type(err).__name__}"
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
            except requests.RequestException:
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


def node_killed_under_load(
    cluster: LocalCluster,
    client: Client,
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
    client: Client,
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
    cluster: LocalCluster, client: Client, objects: int = 24, victim: str = "s4", seed: int = 5
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


# --- the soak --------------------------------------------------------------------------------


def soak_workload(duration: float, concurrency: int, scale: float, prefill: int) -> Any:
    """The paper's workload (object types, sizes, classes) as a steady state: a prefill,
    then DURATION seconds of GET:PUT:DELETE 2:1:1 (the data set stays the same size)."""
    from dataclasses import replace

    from swift_dss.loadgen.workload import Phase, load

    paper = load("paper").with_options(scale=scale, concurrency=concurrency, containers=10)
    phases = (
        Phase("create", (("create_containers", 1.0),)),
        Phase("prefill", (("put", 1.0),), count=prefill),
        Phase("steady", (("get", 2.0), ("put", 1.0), ("delete", 1.0)), duration=duration),
        Phase("delete", (("delete", 1.0),)),
    )
    return replace(paper, phases=phases, container_prefix=f"soak{uuid.uuid4().hex[:6]}")


def memory_verdict(samples: list[tuple[float, dict[str, int]]]) -> dict[str, dict[str, Any]]:
    """Per process: RSS medians of the second and the last quarter of the samples, and
    whether it grew by more than MEMORY_GROWTH_PCT and MEMORY_GROWTH_MIN_KIB."""
    out: dict[str, dict[str, Any]] = {}
    n = len(samples)
    if n < 8:
        return out
    q2, q4 = samples[n // 4 : n // 2], samples[3 * n // 4 :]
    for name in samples[0][1]:
        early = sorted(s[1].get(name, 0) for s in q2)[len(q2) // 2]
        late = sorted(s[1].get(name, 0) for s in q4)[len(q4) // 2]
        grew = late - early
        out[name] = {
            "rss_kib_second_quarter": early,
            "rss_kib_last_quarter": late,
            "rss_kib_max": max(s[1].get(name, 0) for s in samples),
            "growing": grew > MEMORY_GROWTH_MIN_KIB and grew > early * MEMORY_GROWTH_PCT / 100,
        }
    return out


def soak(
    cluster: LocalCluster,
    duration: float = 600.0,
    concurrency: int = 16,
    scale: float = 0.01,
    prefill: int = 400,
    interval: float = 10.0,
) -> dict[str, Any]:
    """The paper's workload at the cluster's capacity (closed loop, CONCURRENCY transfers
    in flight, GETs verified byte for byte) for DURATION seconds, every daemon's resident
    memory sampled every INTERVAL seconds."""
    from swift_dss.loadgen.protocols import Credentials
    from swift_dss.loadgen.runner import run as run_workload

    # A short soak (a test's) gets a prefill in proportion.
    workload = soak_workload(duration, concurrency, scale, min(prefill, max(20, int(duration * 2))))
    creds = Credentials(cluster.user, cluster.key, auth_url=cluster.auth_url)
    samples: list[tuple[float, dict[str, int]]] = []
    done = threading.Event()

    def sample() -> None:
        t0 = time.monotonic()
        while not done.is_set():
            samples.append((round(time.monotonic() - t0, 1), cluster.daemon_rss_kib()))
            done.wait(interval)

    sampler = threading.Thread(target=sample)
    sampler.start()
    try:
        result = run_workload(workload, cluster.proxy_url, "swift", creds, verify=True)
    finally:
        done.set()
        sampler.join()
    rows = [r for r in result.recorder.rows() if r["type"] is None]
    memory = memory_verdict(samples)
    steady = [r for r in rows if r["phase"] == "steady"]
    return {
        "workload": "paper",
        "duration_s": duration,
        "concurrency": concurrency,
        "scale": scale,
        "requests": sum(r["ops"] for r in rows),
        "failures": sum(r["failures"] for r in rows),
        "failures_by_phase_and_op": {
            f"{r['phase']}/{r['op']}": {k: v for k, v in r["codes"].items() if k[:1] != "2"}
            for r in rows
            if r["failures"]
        },
        "steady_ops_per_s": round(sum(r["ops_per_s"] for r in steady), 1),
        "steady_mbps": round(sum(r["mbps"] for r in steady), 2),
        "puts_acknowledged": sum(r["ops"] - r["failures"] for r in rows if r["op"] == "put"),
        "gets_verified": sum(r["ops"] - r["failures"] for r in rows if r["op"] == "get"),
        "rss_samples": len(samples),
        "memory": memory,
        "tier_memory_growing": sorted(
            n for n, m in memory.items() if n.endswith("/dss-tier") and m["growing"]
        ),
        "server_memory_growing": sorted(
            n for n, m in memory.items() if not n.endswith("/dss-tier") and m["growing"]
        ),
        "warnings": result.warnings,
        "rss_series": [{"t": t, **rss} for t, rss in samples],
    }


# --- abuse -----------------------------------------------------------------------------------


def object_server_lines(cluster: LocalCluster) -> str:
    return "".join(
        cluster.server_log(n, "object-server").read_text(errors="replace")
        for n in cluster.node_names
    )


def abuse(
    cluster: LocalCluster,
    client: Client,
    extra: Iterable[BadInput] = (),
    fuzz: int = 200,
    seed: int = 3,
) -> dict[str, Any]:
    """Policy and malformed inputs, then FUZZ mutated ones, each PUT to a fresh object: never
    a 5xx; every refused one absent from the object servers' access logs and from the
    cluster. Reclassification attempts on an existing object must leave it as it was."""
    container = f"abuse-{uuid.uuid4().hex[:8]}"
    client.request("PUT", container)
    fixed = [*corpus(), *extra]
    results = []
    for i, bad in enumerate([*fixed, *mutations(seed, fuzz)]):
        name = f"{container}/bad-{i}"
        try:
            status = client.request(bad.method, name, headers=bad.headers, data=bad.body)
            code = status.status_code
        except requests.RequestException as err:
            code = 0
            results.append({"name": bad.name, "object": name, "status": code, "error": str(err)})
            continue
        results.append({"name": bad.name, "object": name, "status": code, "fixed": i < len(fixed)})
    refused = [r for r in results if 400 <= r["status"] < 500]
    logs = object_server_lines(cluster)
    reached = [
        r["name"] for r in refused if f'/{r["object"]}"' in logs or f"/{r['object']} " in logs
    ]
    stored = [r["name"] for r in refused if client.request("HEAD", r["object"]).status_code != 404]
    reclass = reclassification_attempts(cluster, client, container)
    return {
        "bad_inputs_tried": len(results) + reclass["tried"],
        "fixed_inputs": len(fixed),
        "fuzzed_inputs": fuzz,
        "bad_inputs_5xx": [r["name"] for r in results if r["status"] >= 500]
        + reclass["server_errors"],
        "no_answer": [r["name"] for r in results if r["status"] == 0],
        "fixed_inputs_accepted": [
            r["name"] for r in results if r.get("fixed") and r["status"] < 400
        ],
        "fuzzed_inputs_accepted": sum(
            1 for r in results if not r.get("fixed") and 200 <= r["status"] < 300
        ),
        "refused_reaching_object_servers": reached + reclass["reached"],
        "refused_but_stored": stored,
        "reclassification_changed_object": reclass["changed"],
        "results": results,
    }


def reclassification_attempts(
    cluster: LocalCluster, client: Client, container: str
) -> dict[str, Any]:
    """Reserved and disallowed classes by POST and GET on an existing object: 403, no POST
    reaches an object server, the object keeps its classes."""
    path = f"{container}/existing"
    data = bytes(4096)
    put(client, path, data, ClassMap.build(25))
    out: dict[str, Any] = {"tried": 0, "server_errors": [], "reached": [], "changed": []}
    for cls in (1, 5, 10, 32, 255):
        for method in ("POST", "GET"):
            for headers in ({"X-DSS-Object-Class": str(cls)}, {"X-DSS-Range-Class": f"0-1-{cls}"}):
                out["tried"] += 1
                code = client.request(method, path, headers=headers).status_code
                if code >= 500 or code != 403:
                    out["server_errors" if code >= 500 else "changed"].append(
                        f"{method} {headers}: {code}"
                    )
    posts = [
        line
        for line in object_server_lines(cluster).splitlines()
        if f"/{path}" in line and '"POST ' in line
    ]
    out["reached"] += posts
    head = client.request("HEAD", path)
    if header_classes(head.headers) != ClassMap.build(25):
        out["changed"].append(f"{path}: classes now {header_classes(head.headers)}")
    return out


# --- the whole run ---------------------------------------------------------------------------


def run_all(
    cluster: LocalCluster,
    duration: float,
    fuzz: int,
    extra: Iterable[BadInput] = (),
    soak_duration: float = 0.0,
    soak_concurrency: int = 16,
) -> dict[str, Any]:
    """Every scenario in turn on CLUSTER; the summary's loss figures must all be 0."""
    client = Client(cluster)
    started = time.time()
    tiered = cluster.cfg.tier_mode is not None
    wipe = classes_survive_wipe(cluster, client, objects=max(24, int(duration)))
    kill = node_killed_under_load(cluster, client, duration=duration)
    scenarios: dict[str, Any] = {"device_wipe": wipe, "node_kill_under_load": kill}
    not_run: dict[str, str] = {}
    if tiered:
        scenarios["tier_kill_under_load"] = tier_killed_under_load(cluster, client, duration)
        scenarios["ssd_cache_loss"] = ssd_cache_lost(cluster, client, max(24, int(duration)))
    else:
        not_run.update(NEEDS_TIER)
    bad = abuse(cluster, client, extra, fuzz=fuzz)
    scenarios["abuse"] = {k: v for k, v in bad.items() if k != "results"}
    if soak_duration > 0:
        scenarios["soak"] = soak(cluster, soak_duration, soak_concurrency)
    else:
        not_run["soak"] = "not asked for (--soak-duration 0)"
    loads = [
        s for k, s in scenarios.items() if k in ("node_kill_under_load", "tier_kill_under_load")
    ]
    loss = scenarios.get("ssd_cache_loss")
    soaked = scenarios.get("soak")
    tier_wipe = wipe["tier"] or {}
    soak_get_failures = (
        sum(
            sum(codes.values())
            for key, codes in soaked["failures_by_phase_and_op"].items()
            if key.endswith("/get")
        )
        if soaked
        else 0
    )
    summary = {
        "objects_acknowledged": wipe["objects"]
        + sum(s["objects_acknowledged"] for s in loads)
        + (loss["objects"] if loss else 0)
        + (soaked["puts_acknowledged"] if soaked else 0),
        "objects_lost": wipe["objects_lost"]
        + sum(s["objects_lost"] for s in loads)
        + (loss["objects_lost"] if loss else 0),
        "objects_corrupt": sum(s["objects_corrupt"] for s in loads)
        + (loss["objects_corrupt"] if loss else 0)
        + sum(
            codes.get("corrupt", 0)
            for codes in (soaked or {}).get("failures_by_phase_and_op", {}).values()
        ),
        # A device wiped, a node killed, a tier daemon killed, an SSD lost.
        "faults_injected": 2 + (2 if tiered else 0),
        "bad_inputs_tried": bad["bad_inputs_tried"],
        "bad_inputs_5xx": len(bad["bad_inputs_5xx"]),
        "failed_gets_of_acknowledged_objects": sum(
            len(s["failed_gets_of_acknowledged_objects"]) for s in loads
        )
        + (len(loss["failed_gets_of_acknowledged_objects"]) if loss else 0)
        + soak_get_failures,
        "stale_reads_after_ssd_loss": len(loss["stale_reads"]) if loss else 0,
        "ssd_loss_reported": bool(loss and loss["loss_events_in_stats"]) if loss else None,
        "replicas_with_wrong_classes": len(wipe["replica_problems"])
        + len(wipe["rebuilt_with_wrong_classes"])
        + len(tier_wipe.get("classes_missing_from_stats", []))
        + len(tier_wipe.get("cached_blocks_with_wrong_class", []))
        + sum(len(s["replica_problems_after_repair"]) for s in loads)
        + (len(loss["replica_problems_after_repair"]) if loss else 0),
        "soak_failures": soaked["failures"] if soaked else 0,
        "soak_tier_memory_growing": len(soaked["tier_memory_growing"]) if soaked else 0,
        "refused_inputs_reaching_object_servers": len(bad["refused_reaching_object_servers"]),
        "policy_or_malformed_inputs_accepted": len(bad["fixed_inputs_accepted"])
        + len(bad["reclassification_changed_object"]),
    }
    return {
        **summary,
        "cluster": {
            "storage_nodes": cluster.cfg.nodes,
            "replicas": cluster.cfg.replicas,
            "sync_method": "ssync",
            "dssio_backend": cluster.cfg.dssio_backend,
            "tier_mode": cluster.cfg.tier_mode or "none",
            "tier_cache_size": cluster.cfg.tier_cache_size if tiered else None,
        },
        "duration_s": duration,
        "soak_duration_s": soak_duration,
        "elapsed_s": round(time.time() - started, 1),
        "scenarios": scenarios,
        "not_run": not_run,
    }


def failures(report: dict[str, Any]) -> list[str]:
    keys = (
        *LOSS_KEYS,
        "bad_inputs_5xx",
        "replicas_with_wrong_classes",
        "soak_failures",
        "soak_tier_memory_growing",
        "refused_inputs_reaching_object_servers",
        "policy_or_malformed_inputs_accepted",
    )
    out = [f"{k} = {report[k]}" for k in keys if report[k]]
    if report["ssd_loss_reported"] is False:
        out.append("the tier did not report the loss of its SSD")
    return out


@click.group()
def reliability() -> None:
    """Faults, load and bad input on a local multi-node cluster."""


@reliability.command()
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), required=True)
@click.option(
    "--duration",
    type=float,
    default=120.0,
    show_default=True,
    help="Seconds of PUT/GET load around the node kill and around the tier kill.",
)
@click.option(
    "--soak-duration",
    type=float,
    default=600.0,
    show_default=True,
    help="Seconds of the paper's workload at capacity, memory sampled; 0 skips it.",
)
@click.option(
    "--soak-concurrency", type=int, default=16, show_default=True, help="Transfers in flight."
)
@click.option("--fuzz", type=int, default=1000, show_default=True, help="Mutated inputs.")
@click.option("--nodes", type=int, default=4, show_default=True)
@tier_mode_option("dss-tier mode of the cluster it starts; none skips the tier scenarios.")
@click.option(
    "--cluster",
    "cluster_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Use the running local cluster in this directory instead of starting one.",
)
def run(
    out: Path,
    duration: float,
    soak_duration: float,
    soak_concurrency: int,
    fuzz: int,
    nodes: int,
    tier_mode: str,
    cluster_dir: Path | None,
) -> None:
    """Run every scenario and write OUT/reliability.json; exit 1 on any loss or 5xx."""
    if duration <= 0 or soak_duration < 0 or soak_concurrency < 1 or fuzz < 0:
        raise click.UsageError(
            "--duration must be > 0, --soak-duration >= 0, --soak-concurrency >= 1, --fuzz >= 0"
        )
    out.mkdir(parents=True, exist_ok=True)
    own = cluster_dir is None
    try:
        if own:
            cfg = LocalClusterConfig(dir=out / "cluster", nodes=nodes, tier_mode=tier_mode)
            cluster = LocalCluster(cfg)
            cluster.up()
        else:
            cluster = LocalCluster.load(cluster_dir)
    except Exception as err:
        raise click.ClickException(f"cannot start the cluster: {err}") from None
    try:
        report = run_all(
            cluster, duration, fuzz, soak_duration=soak_duration, soak_concurrency=soak_concurrency
        )
    finally:
        if own:
            cluster.down()
    path = out / "reliability.json"
    path.write_text(json.dumps(report, indent=2) + "\n")
    for key in ("objects_acknowledged", "faults_injected", "bad_inputs_tried", *LOSS_KEYS):
        click.echo(f"{key:<40} {report[key]}")
    for key in ("bad_inputs_5xx", "soak_failures", "soak_tier_memory_growing"):
        click.echo(f"{key:<40} {report[key]}")
    if report["not_run"]:
        click.echo(f"not run: {', '.join(report['not_run'])}")
    click.echo(f"wrote {path}")
    bad = failures(report)
    if bad:
        raise click.ClickException("; ".join(bad))


__all__ = [
    "abuse",
    "classes_survive_wipe",
    "node_killed_under_load",
    "reliability",
    "run_all",
    "soak",
    "ssd_cache_lost",
    "tier_killed_under_load",
]
