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
from swift_dss.deploy.local_cluster import LocalCluster, LocalClusterConfig

from swift_dss.formats import ClassMap, classmap_from_headers, classmap_to_headers, from_sysmeta

ALLOWED = (0, *range(11, 32))
LOSS_KEYS = ("objects_lost", "objects_corrupt", "failed_gets_of_acknowledged_objects")
NOT_RUN = {
    "tier_daemon_kill": "needs dss-tier (kill -9 of the tier daemon during load)",
    "ssd_cache_loss": "needs dss-tier (loss of a node's SSD cache)",
    "soak": "needs dss-tier and the paper's workload at capacity for >= 10 min",
    "tier_stats": "needs dss-tier (classes of rebuilt replicas in `dss-tier stats`)",
}


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
        port = self.cluster.ports["object"]
        url = f"http://{self.cluster.node_ip(node)}:{port}/d1/{part}/{path}"
        return self.session.head(url, headers={"X-Backend-Storage-Policy-Index": "0"}, timeout=30)


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
    """Object hash -> (offset, length, class) of each write the record backend logged."""
    out: dict[str, list[tuple[int, int, int]]] = {}
    with open(log, "rb") as f:
        f.seek(start)
        for line in f.read().splitlines():
            rec = json.loads(line)
            parts = rec["path"].split("/")
            if rec["op"] != "write" or "objects" not in parts:
                continue
            # .../objects/PART/SUFFIX/HASH/<temp file>
            obj_hash = parts[parts.index("objects") + 3]
            out.setdefault(obj_hash, []).append((rec["offset"], rec["length"], rec["class"]))
    return out


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


def replicate_all(cluster: LocalCluster) -> int:
    for node in cluster.node_names:
        cluster.run_replicator(node)
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
    on_victim = [
        o
        for o in stored
        if victim in cluster.object_replicas(cluster.account, *o.path.split("/", 1))[1]
    ]
    log = cluster.record_log(victim)
    start = log.stat().st_size if log.exists() else 0
    cluster.wipe_device(victim)
    after_wipe = sum(
        client.direct_head(
            victim,
            cluster.object_replicas(cluster.account, *o.path.split("/", 1))[0],
            f"{cluster.account}/{o.path}",
        ).status_code
        == 200
        for o in on_victim
    )
    replicate_all(cluster)
    problems = [p for o in stored for p in replica_problems(cluster, client, o)]
    writes = recorded_writes(log, start) if log.exists() else {}
    wrong_writes = [
        o.path
        for o in on_victim
        if not writes_match(
            writes.get(cluster.object_hash(cluster.account, *o.path.split("/", 1)), []),
            o.classes,
            o.size,
        )
    ]
    via_proxy = [p for o in stored if (p := check_via_proxy(client, o))]
    return {
        "objects": len(stored),
        "replicas_checked": len(stored) * cluster.cfg.replicas,
        "problems_before_wipe": before,
        "replicas_on_victim": len(on_victim),
        "replicas_on_victim_after_wipe": after_wipe,
        "replica_problems": problems,
        "rebuilt_with_wrong_classes": wrong_writes,
        "proxy_problems": via_proxy,
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
        # A session per thread: requests sessions are not thread-safe.
        client = Client.__new__(Client)
        client.__dict__.update(self.client.__dict__)
        client.session = requests.Session()
        client.session.trust_env = False
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
    workers = [threading.Thread(target=load.worker, args=(i,)) for i in range(threads)]
    for t in workers:
        t.start()
    try:
        time.sleep(duration / 3)
        killed = cluster.kill_node(victim)
        with load.lock:
            acked_at_kill = len(load.acknowledged)
        time.sleep(duration * 2 / 3)
    finally:
        load.stop.set()
        for t in workers:
            t.join()
    while_down = [p for o in load.acknowledged if (p := check_via_proxy(client, o))]
    cluster.start_node(victim)
    replicate_all(cluster)
    after = [p for o in load.acknowledged if (p := check_via_proxy(client, o))]
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
        "objects_lost": sum(" GET 404" in p for p in problems),
        "objects_corrupt": sum("corrupt" in p for p in problems),
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
) -> dict[str, Any]:
    client = Client(cluster)
    started = time.time()
    wipe = classes_survive_wipe(cluster, client, objects=max(24, int(duration)))
    kill = node_killed_under_load(cluster, client, duration=duration)
    bad = abuse(cluster, client, extra, fuzz=fuzz)
    lost = wipe["objects_lost"] + kill["objects_lost"]
    summary = {
        "objects_acknowledged": wipe["objects"] + kill["objects_acknowledged"],
        "objects_lost": lost,
        "objects_corrupt": kill["objects_corrupt"],
        "faults_injected": 2,  # one device wiped, one storage node killed
        "bad_inputs_tried": bad["bad_inputs_tried"],
        "bad_inputs_5xx": len(bad["bad_inputs_5xx"]),
        "failed_gets_of_acknowledged_objects": len(kill["failed_gets_of_acknowledged_objects"]),
        "replicas_with_wrong_classes": len(wipe["replica_problems"])
        + len(wipe["rebuilt_with_wrong_classes"])
        + len(kill["replica_problems_after_repair"]),
        "refused_inputs_reaching_object_servers": len(bad["refused_reaching_object_servers"]),
        "policy_or_malformed_inputs_accepted": len(bad["fixed_inputs_accepted"])
        + len(bad["reclassification_changed_object"]),
    }
    bad_summary = {k: v for k, v in bad.items() if k != "results"}
    return {
        **summary,
        "cluster": {
            "storage_nodes": cluster.cfg.nodes,
            "replicas": cluster.cfg.replicas,
            "sync_method": "ssync",
            "dssio_backend": cluster.cfg.dssio_backend,
        },
        "duration_s": duration,
        "elapsed_s": round(time.time() - started, 1),
        "scenarios": {"device_wipe": wipe, "node_kill_under_load": kill, "abuse": bad_summary},
        "not_run": NOT_RUN,
    }


def failures(report: dict[str, Any]) -> list[str]:
    keys = (
        *LOSS_KEYS,
        "bad_inputs_5xx",
        "replicas_with_wrong_classes",
        "refused_inputs_reaching_object_servers",
        "policy_or_malformed_inputs_accepted",
    )
    return [f"{k} = {report[k]}" for k in keys if report[k]]


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
    help="Seconds of PUT/GET load around the node kill.",
)
@click.option("--fuzz", type=int, default=1000, show_default=True, help="Mutated inputs.")
@click.option("--nodes", type=int, default=4, show_default=True)
@click.option(
    "--cluster",
    "cluster_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Use the running local cluster in this directory instead of starting one.",
)
def run(out: Path, duration: float, fuzz: int, nodes: int, cluster_dir: Path | None) -> None:
    """Run every scenario and write OUT/reliability.json; exit 1 on any loss or 5xx."""
    out.mkdir(parents=True, exist_ok=True)
    own = cluster_dir is None
    try:
        if own:
            cluster = LocalCluster(LocalClusterConfig(dir=out / "cluster", nodes=nodes))
            cluster.up()
        else:
            cluster = LocalCluster.load(cluster_dir)
    except Exception as err:
        raise click.ClickException(f"cannot start the cluster: {err}") from None
    try:
        report = run_all(cluster, duration, fuzz)
    finally:
        if own:
            cluster.down()
    path = out / "reliability.json"
    path.write_text(json.dumps(report, indent=2) + "\n")
    for key in ("objects_acknowledged", "faults_injected", "bad_inputs_tried", *LOSS_KEYS):
        click.echo(f"{key:<40} {report[key]}")
    click.echo(f"bad_inputs_5xx{'':<26} {report['bad_inputs_5xx']}")
    click.echo(f"not run: {', '.join(NOT_RUN)} (need dss-tier)")
    click.echo(f"wrote {path}")
    bad = failures(report)
    if bad:
        raise click.ClickException("; ".join(bad))


__all__ = ["abuse", "classes_survive_wipe", "node_killed_under_load", "reliability", "run_all"]
