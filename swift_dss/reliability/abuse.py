"""Abuse of the proxy: the policy and malformed inputs of the bad-input corpus and seeded
mutations of valid ones, each PUT to a fresh object, and attempts to reclassify an existing
object into classes the policy refuses."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from typing import Any

from swift_dss.client.api import DssError
from swift_dss.client.classes import classes_from_headers
from swift_dss.deploy.bad_inputs import BadInput, corpus, mutations
from swift_dss.deploy.local_cluster import LocalCluster
from swift_dss.formats import ClassMap
from swift_dss.reliability.checks import put
from swift_dss.reliability.client import ClusterClient


def object_server_lines(cluster: LocalCluster) -> str:
    return "".join(
        cluster.server_log(n, "object-server").read_text(errors="replace")
        for n in cluster.node_names
    )


def abuse(
    cluster: LocalCluster,
    client: ClusterClient,
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
            # DssClient.request sends each header byte as given, malformed ones included.
            code = client.request(
                bad.method, container, f"bad-{i}", headers=bad.headers, body=bad.body
            ).status
        except DssError as err:
            code = 0
            results.append({"name": bad.name, "object": name, "status": code, "error": str(err)})
            continue
        results.append({"name": bad.name, "object": name, "status": code, "fixed": i < len(fixed)})
    refused = [r for r in results if 400 <= r["status"] < 500]
    logs = object_server_lines(cluster)
    reached = [
        r["name"] for r in refused if f'/{r["object"]}"' in logs or f"/{r['object']} " in logs
    ]
    stored = [
        r["name"]
        for r in refused
        if client.request("HEAD", *r["object"].split("/", 1)).status != 404
    ]
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
    cluster: LocalCluster, client: ClusterClient, container: str
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
                code = client.request(method, container, "existing", headers=headers).status
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
    classes = classes_from_headers(client.request("HEAD", container, "existing").headers)
    if classes != ClassMap.build(25):
        out["changed"].append(f"{path}: classes now {classes}")
    return out
