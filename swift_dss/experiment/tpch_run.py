"""`dss experiment fs --workloads tpch`: the DSS paper's database run (SOSP'11, section
5.7) on dss-tier, with SQLite for PostgreSQL.

The paper classified PostgreSQL's I/O per structure: file-system metadata, tables, logs
and temporary tables at the highest priority, indexes at the lowest. Here the tier
classifies by file name (tpch.py keeps one structure per file): each run's policy is its
configuration's with two name rules put first, tables and journals to class 24 (USER0,
priority 2 in reference.toml) and index tables to class 31 (USER7, priority 9: the
lowest, at the cut-off, so bypassed under pressure). lru.toml gets the same rules, so
the cache content of lru and dss compares by class, and stays class-blind: it lists no
class priorities (every class takes default_priority 0), sets no cut-off, and the `lru`
mode makes every priority 0 whatever the file says.

The data is generated once per experiment into a staging file beside the devices (as
dbgen writes flat files once); each configuration then runs on a fresh mount: `load`
(tables filled from the staging file, then the index tables built from them), `cold`,
and `queries` (Q2, Q17, Q18, Q19 back to back, each timed and its counters kept).
"""

from __future__ import annotations

import sqlite3
import time
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from swift_dss.experiment import tpch, tpch_queries
from swift_dss.experiment.cluster import ExperimentError
from swift_dss.experiment.fs import (
    CONFIGS,
    FsOptions,
    Phase,
    Run,
    cache_bytes,
    cold,
    content_shares,
    mount_options,
    mounted,
    phase_between,
)
from swift_dss.experiment.policy_file import dumps
from swift_dss.experiment.tpch_memory import HostMemory
from swift_dss.policies import load_policy
from swift_dss.tierctl import report

#: TPC-H scale factor at --scale 1 (the paper's was 8): about 260 MiB of files.
SCALE_FACTOR = 0.2
TABLE_CLASS = 24
INDEX_CLASS = 31
#: Put first in the policy's [classify] name rules. A journal (`<file>-journal`) is the
#: paper's log: high priority, whichever file it belongs to.
NAME_RULES = (
    {"suffix": [tpch.TABLE_SUFFIX, "-journal"], "class": TABLE_CLASS},
    {"suffix": [tpch.INDEX_SUFFIX], "class": INDEX_CLASS},
)
CONTENT_GROUPS = (
    ("metadata", range(1, 11)),
    ("tables", (TABLE_CLASS,)),
    ("indexes", (INDEX_CLASS,)),
)
STAGING = "tpch-staging.sqlite"
MEMORY = HostMemory()


def policy(name: str) -> str:
    """The shipped policy NAME with NAME_RULES first among its name rules, as TOML."""
    data = load_policy(name)
    classify = data.setdefault("classify", {})
    classify["name"] = [dict(r) for r in NAME_RULES] + list(classify.get("name", []))
    text = dumps(data)
    if tomllib.loads(text) != data:
        raise ValueError(f"policy {name}: its TOML form does not read back the same")
    return text


def scale_factor(opts: FsOptions) -> float:
    return SCALE_FACTOR * opts.scale


def stage(devices: Path, opts: FsOptions, progress: Callable[[str], None]) -> dict[str, Any]:
    """Generate the database into DEVICES/STAGING: what the summary keeps of it."""
    sf = scale_factor(opts)
    progress(f"tpch: generating the data at scale factor {sf:g}")
    start = time.perf_counter()
    try:
        rows = tpch.stage(devices / STAGING, sf, opts.seed)
    except (sqlite3.Error, OSError) as err:
        raise ExperimentError(f"tpch: generating the data: {err}") from err
    seconds = time.perf_counter() - start
    progress(f"tpch: {sum(rows.values())} rows in {seconds:.1f} s")
    return {
        "scale_factor": sf,
        "rows": rows,
        "stage_seconds": seconds,
        "name_rules": [dict(r) for r in NAME_RULES],
        "sqlite_cache_pages_per_file": MEMORY.cache_pages,
        "kernel_cache_drop_every_steps": MEMORY.drop_every,
    }


def unstage(devices: Path) -> None:
    (devices / STAGING).unlink(missing_ok=True)


def run_one(
    config: str, opts: FsOptions, devices: Path, log: Path, progress: Callable[[str], None]
) -> Run:
    base = devices / "tpch" / config
    base.mkdir(parents=True, exist_ok=True)
    policy_file = base / "policy.toml"
    policy_file.write_text(policy(CONFIGS[config][1]))
    estimate = tpch.footprint_estimate(scale_factor(opts))
    cache = cache_bytes(config, estimate, opts.cache_pct_of("tpch"))
    options = mount_options(config, cache, opts, policy_file)
    with mounted(base, options, log, f"tpch on {config}") as (mnt, tier_bin):
        try:
            run = _measure(config, cache, devices / STAGING, mnt, tier_bin, progress)
        except sqlite3.Error as err:
            raise ExperimentError(f"tpch on {config}: SQLite: {err}") from err
    return run


def _measure(
    config: str,
    cache: int,
    staging: Path,
    mnt: Path,
    tier_bin: str,
    progress: Callable[[str], None],
) -> Run:
    """Load, cold and the queries on the tier mounted on MNT."""
    root = mnt / "db"
    s0 = report.stats(mnt, tier_bin)
    seconds = tpch.load(root, staging, MEMORY, lambda what: progress(f"tpch {config} load: {what}"))
    phases = {"load": phase_between(seconds, s0, report.stats(mnt, tier_bin))}
    size = tpch.footprint(root)
    phases["load"].bytes = size
    cold(mnt, tier_bin)
    queries: dict[str, Phase] = {}
    answers: dict[str, str] = {}
    first = before = report.stats(mnt, tier_bin)
    for q in tpch_queries.QUERIES:
        answer = tpch_queries.run(root, q, MEMORY)
        after = report.stats(mnt, tier_bin)
        queries[q.name] = phase_between(answer.seconds, before, after)
        answers[q.name] = answer.checksum
        progress(f"tpch {config} {q.name}: {answer.seconds:.1f} s")
        before = after
    phases["queries"] = phase_between(sum(p.seconds for p in queries.values()), first, before)
    content = content_shares(report.dump(mnt, tier_bin), CONTENT_GROUPS)
    files = len(tpch.TABLES) + len(tpch.INDEXES)
    return Run("tpch", config, files, size, cache, phases, content, queries, answers)
