"""The tpch workload of `dss experiment fs` on a plain directory: the generator, the
database's files, the queries through the index tables against the same queries without
them, their plans, the run's policy and the report."""

from __future__ import annotations

import sqlite3
import tomllib
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from swift_dss.experiment import fs, tpch, tpch_memory, tpch_queries, tpch_report, tpch_run
from swift_dss.experiment.cluster import ExperimentError
from swift_dss.experiment.tpch_memory import HostMemory, connect
from swift_dss.policies import load_policy

SF = 0.005  # 1,000 parts, 7,500 orders, about 30,000 line items
PLAIN_MEMORY = HostMemory(drop_every=None)


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("tpch")
    tpch.stage(base / "staging.sqlite", SF, seed=1)
    tpch.load(base / "db", base / "staging.sqlite", HostMemory())
    return base / "db"


def _rows(scale: float, seed: int) -> dict[str, list[tuple[Any, ...]]]:
    out: dict[str, list[tuple[Any, ...]]] = {}
    for table, batch in tpch.generate(scale, seed, batch=1000):
        out.setdefault(table, []).extend(batch)
    return out


def test_generator_is_seeded_and_follows_tpch_cardinalities() -> None:
    rows = _rows(SF, 1)
    assert rows == _rows(SF, 1)
    assert rows["lineitem"] != _rows(SF, 2)["lineitem"]
    for table in ("region", "nation", "supplier", "customer", "part", "partsupp", "orders"):
        assert len(rows[table]) == tpch.cardinality(table, SF), table
    assert (len(rows["part"]), len(rows["orders"]), len(rows["supplier"])) == (1000, 7500, 50)
    assert len(rows["partsupp"]) == 4 * len(rows["part"])
    assert 3.7 < len(rows["lineitem"]) / len(rows["orders"]) < 4.3, "1-7 lines per order"
    assert [r[0] for r in rows["lineitem"]] == sorted(r[0] for r in rows["lineitem"])
    assert tpch.cardinality("supplier", 1e-6) == 4 and tpch.cardinality("orders", 1e-9) == 1


def test_generated_values_lie_in_tpch_domains() -> None:
    rows = _rows(0.01, 3)
    part, line = rows["part"], rows["lineitem"]
    assert {r[3] for r in part} == {f"Brand#{m}{n}" for m in range(1, 6) for n in range(1, 6)}
    assert {r[4] for r in part} <= set(tpch.TYPES) and {r[6] for r in part} <= set(tpch.CONTAINERS)
    assert {r[5] for r in part} == set(range(1, 51))
    assert {r[4] for r in line} == set(range(1, 51))
    assert {r[14] for r in line} == set(tpch.MODES)
    assert {r[13] for r in line} == set(tpch.INSTRUCTIONS)
    # The fractions the queries' predicates select, as in TPC-H.
    n = len(part)
    assert abs(sum(r[6] == "MED BOX" for r in part) / n - 1 / 40) < 0.01
    assert abs(sum(r[4].endswith("BRASS") for r in part) / n - 1 / 5) < 0.03
    air = sum(r[14] in ("AIR", "AIR REG") and r[13] == "DELIVER IN PERSON" for r in line)
    assert abs(air / len(line) - 1 / 28) < 0.01, "AIR REG is no ship mode, as in TPC-H"
    suppliers = {(r[0], r[1]) for r in rows["partsupp"]}
    assert all((r[1], r[2]) in suppliers for r in line), "a line's supplier supplies its part"
    # An order's status and total follow from its lines.
    lines: dict[int, list[tuple[Any, ...]]] = {}
    for r in line:
        lines.setdefault(r[0], []).append(r)
    for o in rows["orders"]:
        mine = lines[o[0]]
        status = {r[9] for r in mine}
        assert o[2] == (status.pop() if len(status) == 1 else "P")
        total = sum(r[5] * (1 + r[7]) * (1 - r[6]) for r in mine)
        assert o[3] == pytest.approx(total, abs=0.01 * len(mine))
    assert Counter(o[2] for o in rows["orders"]).keys() == {"F", "O", "P"}


def test_one_file_per_structure_and_the_footprint_estimate(db: Path) -> None:
    names = sorted(p.name for p in db.iterdir())
    assert names == sorted(
        [f"{t.name}.tbl" for t in tpch.TABLES] + [i.file for i in tpch.INDEXES]
    ), "no journal left behind"
    with sqlite3.connect(db / "lineitem_part.idx") as conn:
        (sql,) = conn.execute("SELECT sql FROM sqlite_schema").fetchone()
        assert "WITHOUT ROWID" in sql
        entries = conn.execute("SELECT count(*) FROM lineitem_part").fetchone()[0]
    with sqlite3.connect(db / "lineitem.tbl") as conn:
        assert conn.execute("SELECT count(*) FROM lineitem").fetchone()[0] == entries
        assert conn.execute("SELECT count(*) FROM sqlite_schema").fetchone()[0] == 1, (
            "the table's file holds no index"
        )
    assert abs(tpch.footprint(db) / tpch.footprint_estimate(SF) - 1) < 0.2


# TPC-H's text of the four queries (SQLite), on the tables alone.
PLAIN = {
    "Q2": """
SELECT s_acctbal, s_name, n_name, p_partkey, p_mfgr, s_address, s_phone, s_comment
FROM part, supplier, partsupp, nation, region
WHERE p_partkey = ps_partkey AND s_suppkey = ps_suppkey AND p_size = :size
  AND p_type LIKE '%' || :type AND s_nationkey = n_nationkey AND n_regionkey = r_regionkey
  AND r_name = :region
  AND ps_supplycost = (
    SELECT min(ps_supplycost) FROM partsupp, supplier, nation, region
    WHERE p_partkey = ps_partkey AND s_suppkey = ps_suppkey AND s_nationkey = n_nationkey
      AND n_regionkey = r_regionkey AND r_name = :region)
ORDER BY s_acctbal DESC, n_name, s_name, p_partkey LIMIT 100""",
    "Q17": """
SELECT sum(l_extendedprice) / 7.0 FROM lineitem, part
WHERE p_partkey = l_partkey AND p_brand = :brand AND p_container = :container
  AND l_quantity < (SELECT 0.2 * avg(l_quantity) FROM lineitem WHERE l_partkey = p_partkey)""",
    "Q18": """
SELECT c_name, c_custkey, o_orderkey, o_orderdate, o_totalprice, sum(l_quantity)
FROM customer, orders, lineitem
WHERE o_orderkey IN (SELECT l_orderkey FROM lineitem GROUP BY l_orderkey
                     HAVING sum(l_quantity) > :quantity)
  AND c_custkey = o_custkey AND o_orderkey = l_orderkey
GROUP BY c_name, c_custkey, o_orderkey, o_orderdate, o_totalprice
ORDER BY o_totalprice DESC, o_orderdate LIMIT 100""",
    # The join term taken out of the three branches (as TPC-H kits write it), or SQLite
    # would join every line item with every part.
    "Q19": """
SELECT sum(l_extendedprice * (1 - l_discount)) FROM lineitem, part
WHERE p_partkey = l_partkey AND l_shipmode IN ('AIR', 'AIR REG')
  AND l_shipinstruct = 'DELIVER IN PERSON'
  AND ((p_brand = :brand1 AND p_container IN ('SM CASE', 'SM BOX', 'SM PACK', 'SM PKG')
        AND l_quantity >= :quantity1 AND l_quantity <= :quantity1 + 10
        AND p_size BETWEEN 1 AND 5)
    OR (p_brand = :brand2 AND p_container IN ('MED BAG', 'MED BOX', 'MED PKG', 'MED PACK')
        AND l_quantity >= :quantity2 AND l_quantity <= :quantity2 + 10
        AND p_size BETWEEN 1 AND 10)
    OR (p_brand = :brand3 AND p_container IN ('LG CASE', 'LG BOX', 'LG PACK', 'LG PKG')
        AND l_quantity >= :quantity3 AND l_quantity <= :quantity3 + 10
        AND p_size BETWEEN 1 AND 15))""",
}


def _more(db: Path, name: str) -> list[dict[str, Any]]:
    """Beside the validation values, parameters taken from the data, so that the queries
    find rows at this small scale."""
    conn = sqlite3.connect(db / "part.tbl")
    try:
        parts = conn.execute("SELECT p_brand, p_container, p_size, p_type FROM part").fetchall()
    finally:
        conn.close()
    if name == "Q2":
        return [{"size": z, "type": t.split()[-1]} for _b, _c, z, t in parts[:2]]
    if name == "Q17":
        return [{"brand": b, "container": c} for b, c, _z, _t in parts[:3]]
    if name == "Q18":
        return [{"quantity": 250}, {"quantity": 200}]

    # A shipped-by-air line item of a part in each branch, and its quantity.
    conn = connect(tpch.table_files(db), PLAIN_MEMORY)
    try:
        found = conn.execute(
            "SELECT p_container, p_size, p_brand, l_quantity FROM lineitem, part "
            "WHERE p_partkey = l_partkey AND l_shipmode = 'AIR' "
            "AND l_shipinstruct = 'DELIVER IN PERSON'"
        ).fetchall()
    finally:
        conn.close()
    params: dict[str, Any] = {}
    for n, (prefix, size) in enumerate((("SM ", 5), ("MED ", 10), ("LG ", 15)), start=1):
        for c, z, b, q in found:
            if c.startswith(prefix) and z <= size:
                params |= {f"brand{n}": b, f"quantity{n}": q}
                break
    return [params]


def _plain(db: Path, sql: str, params: dict[str, Any]) -> list[tuple[Any, ...]]:
    conn = connect(tpch.table_files(db), PLAIN_MEMORY)
    try:
        return conn.execute(sql, params).fetchall()
    finally:
        conn.close()


def _same(a: list[tuple[Any, ...]], b: list[tuple[Any, ...]]) -> bool:
    if len(a) != len(b):
        return False
    return all(
        x == pytest.approx(y, rel=1e-9) if isinstance(x, float) else x == y
        for ra, rb in zip(a, b, strict=True)
        for x, y in zip(ra, rb, strict=True)
    )


@pytest.mark.parametrize("query", tpch_queries.QUERIES, ids=lambda q: q.name)
def test_queries_through_the_indexes_answer_as_tpch_text(db: Path, query: Any) -> None:
    answered = 0
    for extra in [{}, *_more(db, query.name)]:
        params = {**query.params, **extra}
        got = tpch_queries.run(db, query, PLAIN_MEMORY, extra)
        want = _plain(db, PLAIN[query.name], params)
        assert _same(got.rows, want), (query.name, extra, got.rows[:3], want[:3])
        answered += bool(want) and want[0][0] is not None
        assert got.checksum == tpch_queries.run(db, query, HostMemory(), extra).checksum
    assert answered >= 1, "the comparison saw rows"


@pytest.mark.parametrize("query", tpch_queries.QUERIES, ids=lambda q: q.name)
def test_plans_look_the_index_tables_up(db: Path, query: Any) -> None:
    steps = tpch_queries.access(db, query)
    for index in query.indexes:
        assert steps[index], f"{query.name} reads {index}"
        for step in steps[index]:
            assert step.startswith("SEARCH ") and "USING PRIMARY KEY (" in step, step
    for table in query.tables:
        for step in steps.get(table, []):
            assert (
                step.startswith("SCAN ")
                or "USING INTEGER PRIMARY KEY (rowid=?)" in step
                or (table in ("nation", "region"))
            ), step
    scans = {t for t, s in steps.items() for step in s if step.startswith("SCAN ")}
    # What the plan scans whole: part for Q2, Q17, Q19, lineitem once for Q18's grouping.
    assert scans - {"big"} == ({"lineitem"} if query.name == "Q18" else {"part"})


def test_checksums_ignore_the_last_bits_of_sums() -> None:
    assert tpch_queries.checksum([(1.0000000001, "a")]) == tpch_queries.checksum([(1.0, "a")])
    assert tpch_queries.checksum([(1.01, "a")]) != tpch_queries.checksum([(1.0, "a")])


def test_missing_files_and_memory_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(FileNotFoundError, match=r"Q17: no part\.tbl, lineitem\.tbl"):
        tpch_queries.run(tmp_path, tpch_queries.QUERY["Q17"], PLAIN_MEMORY)
    files = {"a": tmp_path / "a.tbl", "b": tmp_path / "b.idx"}
    conn = connect(files, HostMemory(cache_pages=77))
    drops: list[int] = []
    monkeypatch.setattr(tpch_memory.os, "posix_fadvise", lambda fd, *_a: drops.append(fd))
    try:
        assert conn.execute("PRAGMA b.cache_size").fetchone()[0] == 77
        assert conn.execute("PRAGMA temp_store").fetchone()[0] == 2, "MEMORY"
        conn.execute("CREATE TABLE a.t (x)")
        with HostMemory(drop_every=100).bound(conn, files.values()):
            conn.execute(
                "WITH RECURSIVE s(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM s LIMIT 5000) "
                "INSERT INTO a.t SELECT x FROM s"
            )
        assert len(drops) > 20, "dropped during the statement, not only at its end"
        n = len(drops)
        with PLAIN_MEMORY.bound(conn, files.values()):
            conn.execute("SELECT count(*) FROM a.t").fetchone()
        assert len(drops) == n
    finally:
        conn.close()


def _classify(policy: dict[str, Any], name: str) -> int | None:
    """The class the tier gives file data of NAME by the policy's name rules."""
    for rule in policy["classify"]["name"]:
        if any(name.endswith(s) for s in rule["suffix"]):
            return int(rule["class"])
    return None


@pytest.mark.parametrize("name", sorted({policy for _mode, policy in fs.CONFIGS.values()}))
def test_run_policy_puts_the_structure_rules_first(name: str) -> None:
    shipped = load_policy(name)
    got = tomllib.loads(tpch_run.policy(name))
    rules = got["classify"]["name"]
    assert rules[:2] == [dict(r) for r in tpch_run.NAME_RULES]
    assert rules[2:] == shipped["classify"]["name"]
    assert {k: v for k, v in got.items() if k != "classify"} == {
        k: v for k, v in shipped.items() if k != "classify"
    }
    for file, cls in (
        ("lineitem.tbl", 24), ("lineitem.tbl-journal", 24), ("lineitem_part.idx", 31),
        ("lineitem_part.idx-journal", 24), ("container.db", 5),
    ):  # fmt: skip
        assert _classify(got, file) == cls, file


def test_priorities_of_the_classes() -> None:
    ref = tomllib.loads(tpch_run.policy("reference"))
    prio = {e["ids"]: e["priority"] for e in ref["classes"] if isinstance(e["ids"], int)}
    assert prio[24] == 2 and prio[31] == 9 >= ref["bypass_priority"], "indexes bypass"
    lru = tomllib.loads(tpch_run.policy("lru"))
    # Class-blind: no class has a priority of its own, nothing bypasses.
    assert "classes" not in lru and "bypass_priority" not in lru
    assert lru["default_priority"] == 0 and lru["mode"] == "lru"
    assert fs.CONFIGS["lru"] == ("lru", "lru") and fs.CONFIGS["dss"][1] == "reference"


def test_cache_share_and_bad_options() -> None:
    opts = fs.FsOptions()
    assert opts.cache_pct_of("tpch") == pytest.approx(27.586, abs=0.001)
    assert opts.cache_pct_of("sfs") == 10.0
    assert fs.FsOptions(cache_pct=5).cache_pct_of("tpch") == 5
    est = tpch.footprint_estimate(0.2)
    assert fs.cache_bytes("dss", est, 100 * 8 / 29) == pytest.approx(est * 8 / 29, rel=0.01)
    assert fs.cache_bytes("ssd", est, 1) > 3 * est
    assert "tpch" in fs.DEFAULT_WORKLOADS
    for bad in (
        fs.FsOptions(workloads=("tpch", "tpcc")),
        fs.FsOptions(scale=0),
        fs.FsOptions(cache_pct=101),
    ):
        with pytest.raises(ExperimentError):
            fs.check_options(bad)
    fs.check_options(fs.FsOptions(workloads=("tpch",), configs=("hdd", "dss")))


def _run(config: str, seconds: float, content: dict[str, float], answer: str = "x") -> dict:
    phase = {
        "seconds": seconds, "ops": 0, "bytes": 0, "read_hit_ratio": 0.5,
        "write_back_share": 0.1, "hdd_busy_s": 1.0, "ssd_busy_s": 0.5, "latency_p95_ms": {},
    }  # fmt: skip
    return {
        "workload": "tpch", "config": config, "files": 14, "pool_bytes": 100 << 20,
        "cache_bytes": 28 << 20, "phases": {"load": phase, "queries": phase},
        "content": content,
        "queries": {q: {**phase, "seconds": seconds / 4} for q in tpch_report.QUERY_NAMES},
        "answers": {q: answer for q in tpch_report.QUERY_NAMES},
    }  # fmt: skip


def test_report_sets_the_runs_beside_the_papers(tmp_path: Path) -> None:
    from swift_dss.experiment import fs_report

    summary = {
        "options": {"ssd_model": "intel710", "hdd_model": "st1000nm0011", "cache_pct": None,
                    "threads": 8},
        "count_scale": {},
        "cache_pct": {"tpch": 100 * 8 / 29},
        "tpch": {"scale_factor": 0.2, "sqlite_cache_pages_per_file": 256},
        "runs": [
            _run("hdd", 100.0, {}),
            _run("lru", 80.0, {"tables": 0.3, "indexes": 0.7}),
            _run("dss", 40.0, {"metadata": 0.01, "tables": 0.98, "indexes": 0.01}),
        ],
    }  # fmt: skip
    got = {s["what"]: s for s in fs_report.speedups(summary)}
    assert got["tpch: dss over lru"]["measured"] == pytest.approx(2.0)
    assert got["tpch: dss over lru"]["paper"] == pytest.approx(463 / 386)
    assert got["tpch: lru over hdd"]["paper"] == pytest.approx(680 / 463)
    assert got["tpch: dss over hdd"]["paper"] == pytest.approx(680 / 386)
    assert tpch_report.same_answers(summary) == dict.fromkeys(tpch_report.QUERY_NAMES, True)
    text = fs_report.write_report(tmp_path, summary).read_text()
    assert "| dss | 28 | 40.0 (386) | 10.0 | 10.0 | 10.0 | 10.0 | 50% | 10% |" in text
    assert "| lru | 0.0% | 30.0% | 70.0% | 0.0% |" in text
    assert "| tpch: dss over lru | 2.00 | 1.20 |" in text
    assert "tpch 27.6%" in text and "same rows" in text
    assert (tmp_path / "fs.png").stat().st_size > 0 and (tmp_path / "content.png").exists()
    summary["runs"][2] = _run("dss", 40.0, {}, answer="y")
    assert tpch_report.same_answers(summary)["Q2"] is False
    assert "differ between configurations in Q2, Q17" in "\n".join(tpch_report.section(summary))
