"""`dss deploy generate`: rings, every node's Swift configs and its systemd units, from an
inventory.

Output, one root-like tree per node so that an operator copies it into place as it is:

    OUT/rings/{account,container,object}.{builder,ring.gz}   keep the builders safe
    OUT/nodes/NODE/etc/swift/...                             swift.conf, *-server.conf, rings
    OUT/nodes/NODE/etc/systemd/system/...                    units and swift-dss.target
    OUT/nodes/NODE/etc/rsyncd.conf                           storage nodes (database replication)
    OUT/manifest.json                                        nodes, roles, files, units
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from swift.common.utils import config_true_value

from swift_dss.deploy.inventory import Device, Inventory, ProxyNode, StorageNode
from swift_dss.deploy.object_tuning import object_options
from swift_dss.deploy.rings import RING_NAMES, build_ring_from_devices
from swift_dss.deploy.swift_config import (
    CONTAINER_PIPELINE,
    OBJECT_PIPELINE,
    PIPELINE,
    ini_lines,
    ini_value,
    render_text,
    timed_proxy,
    timed_server,
)
from swift_dss.deploy.tempauth import tempauth_options
from swift_dss.deploy.unit_syntax import exec_line, exec_word, specifiers_escaped

#: Storage node daemons: (unit name, console script, config file).
STORAGE_DAEMONS = (
    ("swift-account-server", "swift-account-server", "account-server.conf"),
    ("swift-account-replicator", "swift-account-replicator", "account-server.conf"),
    ("swift-account-auditor", "swift-account-auditor", "account-server.conf"),
    ("swift-account-reaper", "swift-account-reaper", "account-server.conf"),
    ("swift-container-server", "swift-container-server", "container-server.conf"),
    ("swift-container-replicator", "swift-container-replicator", "container-server.conf"),
    ("swift-container-updater", "swift-container-updater", "container-server.conf"),
    ("swift-container-auditor", "swift-container-auditor", "container-server.conf"),
    ("swift-object-server", "swift-object-server", "object-server.conf"),
    ("swift-object-replicator", "swift-object-replicator", "object-server.conf"),
    ("swift-object-updater", "swift-object-updater", "object-server.conf"),
    ("swift-object-auditor", "swift-object-auditor", "object-server.conf"),
)


@dataclass
class NodePaths:
    """Where a node keeps its configs, devices and recon cache (a real node: the inventory's
    paths; the local cluster: directories of its own per node)."""

    swift_dir: str
    devices: str
    recon_cache: str = "/var/cache/swift"

    @classmethod
    def of(cls, inv: Inventory) -> NodePaths:
        return cls(inv.cluster.swift_dir, inv.cluster.devices_root)


# --- configs ---------------------------------------------------------------------------------


def swift_conf(inv: Inventory) -> str:
    return render_text(
        "cluster-swift.conf",
        {
            "hash_prefix": ini_value(inv.cluster.hash_path_prefix),
            "hash_suffix": ini_value(inv.cluster.hash_path_suffix),
        },
    )


def _common(inv: Inventory, paths: NodePaths, node: str) -> dict[str, object]:
    return {
        "node": node,
        "workers": ini_value(inv.cluster.workers),
        "user": ini_value(inv.cluster.user),
        "swift_dir": ini_value(paths.swift_dir),
        "devices": ini_value(paths.devices),
        "recon_cache": ini_value(paths.recon_cache),
        "mount_check": "true" if inv.cluster.mount_check else "false",
    }


def pipelines(inv: Inventory) -> dict[str, str]:
    """The pipelines of the proxies and of the object and container servers."""
    plain = {"proxy": PIPELINE, "object": OBJECT_PIPELINE, "container": CONTAINER_PIPELINE}
    if not inv.cluster.put_timing:
        return plain
    timed = {k: timed_server(v) for k, v in plain.items() if k != "proxy"}
    return {"proxy": timed_proxy(PIPELINE), **timed}


def proxy_configs(
    inv: Inventory, proxy: ProxyNode, paths: NodePaths, bind_ip: str | None = None
) -> dict[str, str]:
    """swift.conf and proxy-server.conf of PROXY."""
    users = tempauth_options(inv.tempauth_users)
    values = {
        **_common(inv, paths, proxy.name),
        "workers": ini_value(inv.cluster.proxy_workers or inv.cluster.workers),
        "proxy_settings": ini_lines(inv.proxy_server),
        "bind_ip": bind_ip or proxy.bind_ip,
        "bind_port": proxy.port,
        "pipeline": pipelines(inv)["proxy"],
        "dss_settings": ini_lines(inv.dss),
        "memcache_servers": ini_value(",".join(inv.memcache_servers)),
        "memcache_settings": ini_lines(inv.memcache),
        "tempauth_users": ini_lines(users),
    }
    return {
        "swift.conf": swift_conf(inv),
        "proxy-server.conf": render_text("node-proxy-server.conf", values),
    }


def storage_configs(inv: Inventory, node: StorageNode, paths: NodePaths) -> dict[str, str]:
    """swift.conf, account-, container- and object-server.conf and rsyncd.conf of NODE."""
    ports = inv.cluster.ports
    common = {**_common(inv, paths, node.name), "bind_ip": node.ip}
    replicator = {
        k: v for k, v in inv.cluster.replicator.items() if k != "sync_method"
    }  # ssync is not negotiable: it is what classifies replicas
    tiered = any(d.tiered for d in node.devices)
    object_settings = {"dssio_backend": "auto", **object_options(inv.object_server, tiered)}
    return {
        "swift.conf": swift_conf(inv),
        "account-server.conf": render_text(
            "node-account-server.conf", {**common, "bind_port": ports["account"]}
        ),
        "container-server.conf": render_text(
            "node-container-server.conf",
            {**common, "bind_port": ports["container"], "pipeline": pipelines(inv)["container"]},
        ),
        "object-server.conf": render_text(
            "node-object-server.conf",
            {
                **common,
                "bind_port": ports["object"],
                "pipeline": pipelines(inv)["object"],
                "object_settings": ini_lines(object_settings),
                "replicator_settings": ini_lines(replicator),
            },
        ),
        "rsyncd.conf": render_text(
            "rsyncd.conf",
            {**common, "replication_ip": node.replication_ip or node.ip},
        ),
    }


# --- rings -----------------------------------------------------------------------------------


def ring_devices(inv: Inventory, ring: str) -> list[dict[str, Any]]:
    port = inv.cluster.ports[ring]
    devs = []
    for node, dev in inv.devices:
        entry: dict[str, Any] = {
            "region": node.region,
            "zone": node.zone,
            "ip": node.ip,
            "port": port,
            "device": dev.name,
            "weight": dev.weight,
            "meta": node.name,
        }
        if node.replication_ip:
            entry.update(replication_ip=node.replication_ip, replication_port=port)
        devs.append(entry)
    return devs


def build_cluster_rings(inv: Inventory, dest: Path) -> list[Path]:
    """The account, container and object rings of INV in DEST; returns the .ring.gz files."""
    dest.mkdir(parents=True, exist_ok=True)
    out = []
    for ring in RING_NAMES:
        path = dest / ring
        build_ring_from_devices(
            path,
            ring_devices(inv, ring),
            inv.cluster.replicas,
            inv.cluster.part_power,
            inv.cluster.min_part_hours,
        )
        out.append(path.with_suffix(".ring.gz"))
    return out


# --- systemd units ---------------------------------------------------------------------------

#: The WSGI servers: `swift-reload` re-executes their manager process under the same pid, which
#: starts new workers on the new code and lets the old ones finish their requests.
WSGI_SERVERS = frozenset(
    {"swift-proxy-server", "swift-account-server", "swift-container-server", "swift-object-server"}
)


def reload_line(inv: Inventory, unit: str) -> str:
    """ExecReload= for a WSGI server's unit; nothing for the other daemons (restart those)."""
    if unit not in WSGI_SERVERS:
        return ""
    # $MAINPID stays outside the quoting: systemd substitutes it.
    return f"ExecReload={exec_word(f'{inv.cluster.bin_dir}/swift-reload')} $MAINPID"


def tier_unit_name(dev: Device) -> str:
    return f"dss-tier-{dev.name}.service"


def tier_command(inv: Inventory, dev: Device, mountpoint: str) -> list[str]:
    """`dss-tier mount` for DEV as docs/tier.md opens with it (foreground)."""
    opts = {**inv.tier, **dev.tier}
    cmd = [
        f"{inv.cluster.bin_dir}/dss-tier",
        "mount",
        "--ssd",
        str(dev.ssd),
        "--hdd",
        str(dev.hdd),
        "--cache-size",
        opts["cache_size"],
        "--policy",
        opts["policy"],
        "--mode",
        opts.get("mode", "dss"),
    ]
    for key in ("ssd_model", "hdd_model", "meta_memory", "meta_writes"):
        if key in opts:
            cmd += [f"--{key.replace('_', '-')}", opts[key]]
    if config_true_value(opts.get("warm")):
        cmd.append("--warm")
    return [*cmd, mountpoint]


def storage_units(inv: Inventory, node: StorageNode, paths: NodePaths) -> dict[str, str]:
    units: dict[str, str] = {}
    tier_units = [tier_unit_name(d) for d in node.devices if d.tiered]
    servers = [name for name, _, _ in STORAGE_DAEMONS]
    for dev in node.devices:
        if not dev.tiered:
            continue
        mountpoint = f"{paths.devices}/{dev.name}"
        units[tier_unit_name(dev)] = render_text(
            "systemd-dss-tier-unit.conf",
            {
                "unit": tier_unit_name(dev),
                "node": node.name,
                "device": dev.name,
                # The inventory refuses ssd and hdd paths that RequiresMountsFor= cannot hold.
                "ssd": specifiers_escaped(str(dev.ssd)),
                "hdd": specifiers_escaped(str(dev.hdd)),
                "mountpoint": exec_word(mountpoint),
                "before": " ".join(f"{s}.service" for s in servers),
                "tier": exec_word(f"{inv.cluster.bin_dir}/dss-tier"),
                "exec_start": exec_line(tier_command(inv, dev, mountpoint)),
            },
        )
    for unit, script, conf in STORAGE_DAEMONS:
        # Every daemon touches the devices (databases and objects alike).
        units[f"{unit}.service"] = render_text(
            "systemd-swift-unit.conf",
            {
                "unit": f"{unit}.service",
                "node": node.name,
                "description": f"Swift {script.removeprefix('swift-')} ({node.name})",
                "after": " ".join(tier_units),
                "requires": f"Requires={' '.join(tier_units)}" if tier_units else "",
                "exec_start": exec_line(
                    [f"{inv.cluster.bin_dir}/{script}", f"{paths.swift_dir}/{conf}"]
                ),
                "reload": reload_line(inv, unit),
            },
        )
    units["swift-dss.target"] = render_text(
        "systemd-target-unit.conf",
        {"node": node.name, "role": "storage node", "units": " ".join(sorted(units))},
    )
    return units


def proxy_units(inv: Inventory, proxy: ProxyNode, paths: NodePaths) -> dict[str, str]:
    units = {
        "swift-proxy-server.service": render_text(
            "systemd-swift-unit.conf",
            {
                "unit": "swift-proxy-server.service",
                "node": proxy.name,
                "description": f"Swift proxy with dss ({proxy.name})",
                "after": "memcached.service",
                "requires": "",
                "exec_start": exec_line(
                    [
                        f"{inv.cluster.bin_dir}/swift-proxy-server",
                        f"{paths.swift_dir}/proxy-server.conf",
                    ]
                ),
                "reload": reload_line(inv, "swift-proxy-server"),
            },
        )
    }
    units["swift-dss.target"] = render_text(
        "systemd-target-unit.conf",
        {"node": proxy.name, "role": "proxy", "units": " ".join(sorted(units))},
    )
    return units


# --- the whole tree --------------------------------------------------------------------------


def _write(root: Path, rel: str, text: str) -> str:
    path = root / rel.lstrip("/")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return "/" + rel.lstrip("/")


def generate(inv: Inventory, out: Path) -> dict[str, Any]:
    """Write rings, configs and units for every node of INV under OUT; return the manifest.

    A new OUT appears whole or not at all: the tree is written beside it under a hidden
    name and renamed into place. An existing OUT is written into, file by file.
    """
    out = Path(out)
    if out.exists():
        return _generate_into(inv, out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.parent / f".{out.name}.{os.getpid()}-{secrets.token_hex(4)}"
    tmp.mkdir()
    try:
        manifest = _generate_into(inv, tmp)
        tmp.rename(out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return manifest


def _generate_into(inv: Inventory, out: Path) -> dict[str, Any]:
    rings = build_cluster_rings(inv, out / "rings")
    paths = NodePaths.of(inv)
    unit_dir = "/etc/systemd/system"
    manifest: dict[str, Any] = {"replicas": inv.cluster.replicas, "nodes": {}}
    nodes: list[tuple[str, str, dict[str, str], dict[str, str]]] = []
    for proxy in inv.proxies:
        nodes.append(
            ("proxy", proxy.name, proxy_configs(inv, proxy, paths), proxy_units(inv, proxy, paths))
        )
    for node in inv.storage:
        nodes.append(
            (
                "storage",
                node.name,
                storage_configs(inv, node, paths),
                storage_units(inv, node, paths),
            )
        )
    for role, name, configs, units in nodes:
        root = out / "nodes" / name
        written = []
        for fname, text in configs.items():
            target = "/etc/rsyncd.conf" if fname == "rsyncd.conf" else f"{paths.swift_dir}/{fname}"
            written.append(_write(root, target, text))
        for ring in rings:
            dest = root / paths.swift_dir.lstrip("/") / ring.name
            shutil.copyfile(ring, dest)
            written.append(f"{paths.swift_dir}/{ring.name}")
        for unit, text in units.items():
            written.append(_write(root, f"{unit_dir}/{unit}", text))
        entry: dict[str, Any] = {"role": role, "files": sorted(written), "units": sorted(units)}
        if role == "storage":
            node = next(n for n in inv.storage if n.name == name)
            entry["ip"] = node.ip
            entry["devices"] = {
                d.name: {"mountpoint": f"{paths.devices}/{d.name}", "ssd": d.ssd, "hdd": d.hdd}
                for d in node.devices
            }
        else:
            entry["ip"] = next(p.ip for p in inv.proxies if p.name == name)
        manifest["nodes"][name] = entry
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    return manifest
