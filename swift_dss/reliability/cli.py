"""`dss reliability run`: every scenario in turn on a local cluster (one it starts, or one
already running), the summary of their loss figures, and the verdict on it."""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import click

from swift_dss.cli_types import POSITIVE, FiniteFloatRange, OutputDir
from swift_dss.deploy.bad_inputs import BadInput
from swift_dss.deploy.deploy_cli import tier_mode_option
from swift_dss.deploy.local_cluster import LocalCluster, LocalClusterConfig
from swift_dss.reliability.abuse import abuse
from swift_dss.reliability.client import ClusterClient
from swift_dss.reliability.scenarios import (
    classes_survive_wipe,
    node_killed_under_load,
    ssd_cache_lost,
    tier_killed_under_load,
)
from swift_dss.reliability.soak import soak

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


def run_all(
    cluster: LocalCluster,
    duration: float,
    fuzz: int,
    extra: Iterable[BadInput] = (),
    soak_duration: float = 0.0,
    soak_concurrency: int = 16,
) -> dict[str, Any]:
    """Every scenario in turn on CLUSTER; the summary's loss figures must all be 0."""
    client = ClusterClient(cluster)
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
@click.option("--out", type=OutputDir(), required=True)
@click.option(
    "--duration",
    type=POSITIVE,
    default=120.0,
    show_default=True,
    help="Seconds of PUT/GET load around the node kill and around the tier kill.",
)
@click.option(
    "--soak-duration",
    type=FiniteFloatRange(min=0),
    default=600.0,
    show_default=True,
    help="Seconds of the paper's workload at capacity, memory sampled; 0 skips it.",
)
@click.option(
    "--soak-concurrency",
    type=click.IntRange(min=1),
    default=16,
    show_default=True,
    help="Transfers in flight.",
)
@click.option(
    "--fuzz", type=click.IntRange(min=0), default=1000, show_default=True, help="Mutated inputs."
)
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
    own = cluster_dir is None
    # The cluster this command starts keeps its default replica count; each replica needs
    # a node of its own.
    replicas = LocalClusterConfig.replicas
    if own and nodes < replicas:
        raise click.BadParameter(
            f"must be at least {replicas} (one per replica), not {nodes}", param_hint="'--nodes'"
        )
    try:
        if own:
            cfg = LocalClusterConfig(dir=out / "cluster", nodes=nodes, tier_mode=tier_mode)
            cluster = LocalCluster(cfg)
            cluster.up()
        else:
            cluster = LocalCluster.load(cluster_dir)
    except Exception as err:
        if not own:
            raise click.ClickException(str(err)) from None
        raise click.ClickException(f"cannot start the cluster: {err}") from None
    out.mkdir(parents=True, exist_ok=True)
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
