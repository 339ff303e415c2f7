"""Objects the scenarios store, and the checks of them: read back through the proxy, on
every primary replica (object server and .data xattrs), in a node's dssio record log and
in the blocks its tier caches; the loss figures drawn from what the checks found."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from swift_dss.client.classes import class_headers, classes_from_headers
from swift_dss.deploy.local_cluster import LocalCluster
from swift_dss.formats import ClassMap, from_sysmeta
from swift_dss.reliability.client import ClusterClient


@dataclass
class Stored:
    path: str  # container/object
    sha256: str
    size: int
    classes: ClassMap


def put(client: ClusterClient, path: str, data: bytes, cmap: ClassMap) -> Stored | None:
    """DATA stored as PATH with CMAP's classes; None unless the cluster answered 201 (no
    answer at all raises DssError)."""
    # The status alone decides, not DssClient.upload's ETag check: a PUT the cluster
    # acknowledged with other bytes than were sent must count as acknowledged, and then
    # as corrupt when read back, not as a PUT that failed.
    resp = client.request("PUT", *path.split("/", 1), headers=class_headers(cmap), body=data)
    if resp.status != 201:
        return None
    return Stored(path, hashlib.sha256(data).hexdigest(), len(data), cmap)


def check_via_proxy(client: ClusterClient, obj: Stored) -> str | None:
    """None if the object GETs back intact with its classes, else what is wrong."""
    resp = client.request("GET", *obj.path.split("/", 1))
    if resp.status != 200:
        return f"{obj.path}: GET {resp.status}"
    if hashlib.sha256(resp.body).hexdigest() != obj.sha256:
        return f"{obj.path}: corrupt ({len(resp.body)} bytes, expected {obj.size})"
    classes = classes_from_headers(resp.headers)
    if classes != obj.classes:
        return f"{obj.path}: classes {classes} != {obj.classes}"
    return None


def proxy_problems(client: ClusterClient, objs: list[Stored]) -> list[str]:
    """What is wrong with each of ``objs`` read back through the proxy (none: [])."""
    return [p for o in objs if (p := check_via_proxy(client, o))]


def loss_counts(problems: list[str]) -> dict[str, int]:
    """Objects lost (a GET answered 404) and corrupt, from ``check_via_proxy``'s reports."""
    return {
        "objects_lost": sum(" GET 404" in p for p in problems),
        "objects_corrupt": sum("corrupt" in p for p in problems),
    }


def replicas_of(cluster: LocalCluster, obj: Stored) -> tuple[int, list[str]]:
    return cluster.object_replicas(cluster.account, *obj.path.split("/", 1))


def data_files(cluster: LocalCluster, node: str, part: int, obj_hash: str) -> list[Path]:
    folder = cluster.device_path(node) / "objects" / str(part) / obj_hash[-3:] / obj_hash
    return sorted(folder.glob("*.data")) if folder.is_dir() else []


def replica_problems(cluster: LocalCluster, client: ClusterClient, obj: Stored) -> list[str]:
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


def replica_content_problems(
    cluster: LocalCluster, client: ClusterClient, obj: Stored
) -> list[str]:
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


# --- the classes a rebuilt replica was written with (dssio's record log) ----------------------


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


# --- the classes a tier took in (`dss-tier stats` and `dss-tier dump`) ------------------------


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
