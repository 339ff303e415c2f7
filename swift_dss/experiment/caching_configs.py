"""The caching experiment's configurations: which run, in what order, and the cluster each
runs on (the cache sizes, the policy variants measured beside the reference policy)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from swift_dss import policies
from swift_dss.experiment.cluster import ClusterSpec
from swift_dss.experiment.scale import MIB, Scale, WorkingSet, cache_bytes, size_arg

CACHE_PCTS = (5.0, 10.0)
#: On the all-in-one cluster HDD only runs with fewer clients: at 32, 24 PUTs queue on
#: each of its modelled HDD heads at about 1.8 s each, and some object servers did not
#: answer within the proxy's 120 s (docs/results.md). The testbed's four nodes serve the
#: same clients as the other configurations, so there it runs with all of them.
HDD_CONCURRENCY = 8
GIB = 1 << 30


@dataclass(frozen=True)
class Config:
    key: str  # "hdd", "ssd", "lru@10%", ...
    mode: str
    policy: str
    cache_pct: float | None  # None: no cache (HDD only, SSD only)
    #: Clients of the measured phases if fewer than the workload's (HDD only).
    concurrency: int | None = None

    @property
    def slug(self) -> str:
        return self.key.replace("@", "-").replace("%", "")


def pct_label(pct: float) -> str:
    return f"{pct:g}%"


#: Shipped policies named like this run as further DSS configurations ("dss-x@10%"):
#: variants of the reference policy (e.g. another base list) measured beside it.
EXTRA_POLICY_PREFIX = "dss-"


def extra_policies() -> tuple[str, ...]:
    return tuple(p for p in policies.available() if p.startswith(EXTRA_POLICY_PREFIX))


def select_variants(spec: str) -> tuple[str, ...]:
    """``all``, ``none`` or a comma list of shipped dss-* policy names."""
    shipped = extra_policies()
    if spec == "all":
        return shipped
    if spec == "none":
        return ()
    names = tuple(n.strip() for n in spec.split(",") if n.strip())
    if not names:
        raise ValueError(
            f"{spec!r} names no policy variant: none, all or some of {', '.join(shipped)}"
        )
    unknown = [n for n in names if n not in shipped]
    if unknown:
        raise ValueError(
            f"unknown policy variant {', '.join(unknown)}; shipped: {', '.join(shipped)}"
        )
    return names


def parse_pcts(text: str) -> tuple[float, ...]:
    """``--cache-pcts``: distinct cache sizes, each a share of the working set in (0, 100]."""
    try:
        pcts = tuple(float(p) for p in text.split(","))
    except ValueError:
        pcts = ()
    if not pcts or not all(0 < p <= 100 for p in pcts) or len(set(pcts)) != len(pcts):
        raise ValueError(f"{text!r}: expected distinct numbers above 0 and at most 100, e.g. 5,10")
    return pcts


def select_configs(only: str, every: list[Config]) -> list[str]:
    """``--only``: configuration keys (``lru@10%``) or modes (``dss``), each naming one."""
    names = [n.strip() for n in only.split(",") if n.strip()]
    known = list(dict.fromkeys([c.key for c in every] + [c.mode for c in every]))
    if not names:
        raise ValueError(f"{only!r} names no configuration; known: {', '.join(known)}")
    unknown = [n for n in names if n not in known]
    if unknown:
        variants = [v for n in unknown if (v := n.partition("@")[0]) in extra_policies()]
        hint = f" (a policy variant runs with --variants {variants[0]})" if variants else ""
        raise ValueError(f"unknown configuration {', '.join(unknown)}; "
                         f"known: {', '.join(known)}{hint}")  # fmt: skip
    return names


def configurations(
    pcts: tuple[float, ...] = CACHE_PCTS, extra: tuple[str, ...] = ()
) -> list[Config]:
    """In the order they run: the largest cache's DSS and LRU first (the paper's headline),
    then SSD only, the smaller caches, and HDD only last (it is the slowest to run); each
    EXTRA policy (mode dss) after LRU at the largest cache only (the paper's headline size;
    each costs as much run time as DSS)."""
    out = []
    for n, pct in enumerate(sorted(pcts, reverse=True)):
        out.append(Config(f"dss@{pct_label(pct)}", "dss", "reference", pct))
        out.append(Config(f"lru@{pct_label(pct)}", "lru", "lru", pct))
        if n == 0:
            out.extend(Config(f"{name}@{pct_label(pct)}", "dss", name, pct) for name in extra)
            out.append(Config("ssd", "ssd", "reference", None))
    out.append(Config("hdd", "hdd", "reference", None, HDD_CONCURRENCY))
    return out


def cluster_spec(cfg: Config, ws: WorkingSet, scale: Scale) -> ClusterSpec:
    per_device = ws.per_device(scale.replicas, scale.devices)
    if cfg.mode == "ssd":
        # Everything pinned: the data, Swift's databases and the tier's metadata blocks.
        cache = math.ceil(per_device * 1.25) + 256 * MIB
    elif cfg.mode == "hdd":
        cache = 16 * MIB  # unused
    else:
        cache = cache_bytes(ws, scale, cfg.cache_pct or 0)
    # tmpfs only takes what is written: the limit just has to be out of the way.
    backing = 2 * ws.bytes * scale.replicas + scale.devices * cache + 2 * GIB
    return ClusterSpec(
        mode=cfg.mode,
        policy=cfg.policy,
        cache_size=size_arg(cache),
        devices=scale.devices,
        replicas=scale.replicas,
        workers=scale.workers,
        devices_size=f"{math.ceil(backing / GIB)}g",
    )
