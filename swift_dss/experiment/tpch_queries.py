"""TPC-H queries 2, 17, 18 and 19 (the paper's I/O-intensive four) on the tpch database,
written for SQLite with their lookups through the index tables.

Each key lookup is an explicit join on an index table (`SEARCH ... USING PRIMARY KEY`),
then on the table's rowid; CROSS JOIN fixes SQLite's join order to the one written, the
plan an indexed PostgreSQL runs at these selectivities: Q2, Q17 and Q19 scan `part` and
look up its partsupp or lineitem rows, Q18 scans lineitem once for its large orders and
looks those up. Parameters are TPC-H's validation values (specification 2.4).
"""

from __future__ import annotations

import hashlib
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from swift_dss.experiment.tpch import INDEX_SUFFIX, TABLE_SUFFIX
from swift_dss.experiment.tpch_memory import HostMemory, connect


@dataclass(frozen=True)
class Query:
    name: str
    sql: str
    #: TPC-H's validation values of the query's substitution parameters.
    params: dict[str, Any]
    #: The database files the query reads (tables, then index tables).
    tables: tuple[str, ...]
    indexes: tuple[str, ...]


# The supplier's side of Q2, once for the rows (aliases o_X) and once for the cheapest
# cost (c_X): partsupp by part key, then its supplier, nation and region.
_Q2_SUPPLY = """partsupp_pk {a}psk
    CROSS JOIN partsupp {a}ps ON {a}ps.rowid = {a}psk.rid
    CROSS JOIN supplier_pk {a}sk ON {a}sk.s_suppkey = {a}ps.ps_suppkey
    CROSS JOIN supplier {a}s ON {a}s.rowid = {a}sk.rid
    CROSS JOIN nation {a}n ON {a}n.n_nationkey = {a}s.s_nationkey
    CROSS JOIN region {a}r ON {a}r.r_regionkey = {a}n.n_regionkey"""

Q2 = Query(
    "Q2",
    f"""
SELECT o_s.s_acctbal, o_s.s_name, o_n.n_name, p.p_partkey, p.p_mfgr, o_s.s_address,
       o_s.s_phone, o_s.s_comment
FROM part p CROSS JOIN {_Q2_SUPPLY.format(a="o_")}
WHERE p.p_size = :size AND p.p_type LIKE '%' || :type AND o_psk.ps_partkey = p.p_partkey
  AND o_r.r_name = :region
  AND o_ps.ps_supplycost = (
    SELECT min(c_ps.ps_supplycost) FROM {_Q2_SUPPLY.format(a="c_")}
    WHERE c_psk.ps_partkey = p.p_partkey AND c_r.r_name = :region)
ORDER BY o_s.s_acctbal DESC, o_n.n_name, o_s.s_name, p.p_partkey
LIMIT 100""",
    {"size": 15, "type": "BRASS", "region": "EUROPE"},
    ("part", "partsupp", "supplier", "nation", "region"),
    ("partsupp_pk", "supplier_pk"),
)

Q17 = Query(
    "Q17",
    """
SELECT sum(l.l_extendedprice) / 7.0 AS avg_yearly
FROM part p
CROSS JOIN lineitem_part lp ON lp.l_partkey = p.p_partkey
CROSS JOIN lineitem l ON l.rowid = lp.rid
WHERE p.p_brand = :brand AND p.p_container = :container
  AND l.l_quantity < (
    SELECT 0.2 * avg(l2.l_quantity)
    FROM lineitem_part lp2 CROSS JOIN lineitem l2 ON l2.rowid = lp2.rid
    WHERE lp2.l_partkey = p.p_partkey)""",
    {"brand": "Brand#23", "container": "MED BOX"},
    ("part", "lineitem"),
    ("lineitem_part",),
)

Q18 = Query(
    "Q18",
    """
WITH big AS MATERIALIZED (
    SELECT l_orderkey AS okey FROM lineitem
    GROUP BY l_orderkey HAVING sum(l_quantity) > :quantity)
SELECT c.c_name, c.c_custkey, o.o_orderkey, o.o_orderdate, o.o_totalprice,
       sum(l.l_quantity)
FROM big
CROSS JOIN orders_pk ok ON ok.o_orderkey = big.okey
CROSS JOIN orders o ON o.rowid = ok.rid
CROSS JOIN customer_pk ck ON ck.c_custkey = o.o_custkey
CROSS JOIN customer c ON c.rowid = ck.rid
CROSS JOIN lineitem_pk lk ON lk.l_orderkey = o.o_orderkey
CROSS JOIN lineitem l ON l.rowid = lk.rid
GROUP BY c.c_name, c.c_custkey, o.o_orderkey, o.o_orderdate, o.o_totalprice
ORDER BY o.o_totalprice DESC, o.o_orderdate
LIMIT 100""",
    {"quantity": 300},
    ("lineitem", "orders", "customer"),
    ("orders_pk", "customer_pk", "lineitem_pk"),
)

# The part-only half of each branch is repeated as a filter on the scan of part, as
# PostgreSQL derives it from the OR, so that only matching parts are looked up.
_Q19_BRANCHES = (
    ("brand1", "('SM CASE', 'SM BOX', 'SM PACK', 'SM PKG')", "quantity1", 5),
    ("brand2", "('MED BAG', 'MED BOX', 'MED PKG', 'MED PACK')", "quantity2", 10),
    ("brand3", "('LG CASE', 'LG BOX', 'LG PACK', 'LG PKG')", "quantity3", 15),
)
_Q19_PART = " OR ".join(
    f"(p.p_brand = :{b} AND p.p_container IN {c} AND p.p_size BETWEEN 1 AND {s})"
    for b, c, _q, s in _Q19_BRANCHES
)
_Q19_LINE = " OR ".join(
    f"(p.p_brand = :{b} AND p.p_container IN {c} AND p.p_size BETWEEN 1 AND {s}"
    f" AND l.l_quantity BETWEEN :{q} AND :{q} + 10)"
    for b, c, q, s in _Q19_BRANCHES
)
Q19 = Query(
    "Q19",
    f"""
SELECT sum(l.l_extendedprice * (1 - l.l_discount)) AS revenue
FROM part p
CROSS JOIN lineitem_part lp ON lp.l_partkey = p.p_partkey
CROSS JOIN lineitem l ON l.rowid = lp.rid
WHERE ({_Q19_PART})
  AND l.l_shipmode IN ('AIR', 'AIR REG') AND l.l_shipinstruct = 'DELIVER IN PERSON'
  AND ({_Q19_LINE})""",
    {"brand1": "Brand#12", "brand2": "Brand#23", "brand3": "Brand#34",
     "quantity1": 1, "quantity2": 10, "quantity3": 20},
    ("part", "lineitem"),
    ("lineitem_part",),
)  # fmt: skip

#: In the paper's order, run back to back.
QUERIES = (Q2, Q17, Q18, Q19)
QUERY = {q.name: q for q in QUERIES}


def files_of(root: Path, q: Query) -> dict[str, Path]:
    return {t: root / (t + TABLE_SUFFIX) for t in q.tables} | {
        i: root / (i + INDEX_SUFFIX) for i in q.indexes
    }


@dataclass
class Answer:
    seconds: float
    rows: list[tuple[Any, ...]]

    @property
    def checksum(self) -> str:
        return checksum(self.rows)


def checksum(rows: list[tuple[Any, ...]]) -> str:
    """A digest of result rows, amounts rounded to the cent (a sum's last bits depend on
    the order it adds in)."""
    text = repr([tuple(round(v, 2) if isinstance(v, float) else v for v in r) for r in rows])
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def run(root: Path, q: Query, memory: HostMemory, params: dict[str, Any] | None = None) -> Answer:
    """Q on the database in ROOT, on a connection of its own (the files it reads attached,
    SQLite's cache empty): its wall time and rows."""
    files = files_of(root, q)
    missing = [p.name for p in files.values() if not p.exists()]
    if missing:
        raise FileNotFoundError(f"{q.name}: no {', '.join(missing)} in {root}")
    conn = connect(files, memory)
    try:
        with memory.bound(conn, files.values()):
            start = time.perf_counter()
            rows = conn.execute(q.sql, {**q.params, **(params or {})}).fetchall()
            return Answer(time.perf_counter() - start, rows)
    finally:
        conn.close()


def plan(root: Path, q: Query) -> list[str]:
    """The details of Q's EXPLAIN QUERY PLAN (one line per step)."""
    conn = connect(files_of(root, q), HostMemory(drop_every=None))
    try:
        return [r[3] for r in conn.execute("EXPLAIN QUERY PLAN " + q.sql, q.params)]
    finally:
        conn.close()


_NAMED = re.compile(r"\b(?:FROM|JOIN)\s+(\w+)\s+(\w+)")
_NOT_ALIAS = {"CROSS", "JOIN", "ON", "WHERE", "GROUP", "ORDER", "LIMIT"}


def aliases(q: Query) -> dict[str, str]:
    """Alias -> table of each table Q reads (a table named without alias is its own)."""
    return {
        (table if alias.upper() in _NOT_ALIAS else alias): table
        for table, alias in _NAMED.findall(q.sql)
    }


def access(root: Path, q: Query) -> dict[str, list[str]]:
    """Per table Q reads: the SCAN and SEARCH steps of its plan that read it."""
    names = aliases(q)
    out: dict[str, list[str]] = {}
    for step in plan(root, q):
        words = step.split()
        if len(words) > 1 and words[0] in ("SCAN", "SEARCH") and words[1] in names:
            out.setdefault(names[words[1]], []).append(step)
    return out
