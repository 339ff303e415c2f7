"""A TPC-H-like database on SQLite for `dss experiment fs --workloads tpch`: the DSS
paper's database run (SOSP'11, section 5.7), one file per structure.

The tier classifies per file, by name, while SQLite keeps a table's indexes inside the
table's file. So each table is a database file of its own, `<table>.tbl`, and each index
the queries use is an index table in a file of its own, `<index>.idx`: a WITHOUT ROWID
table of the key columns and the table row's rowid (`rid`), ordered by both, which the
queries join on explicitly. Tables are plain rowid tables, keys ordinary columns, so
every key lookup goes through an index file as in PostgreSQL, where a table is a heap
and each key a b-tree of its own. As in the paper, the indexes are built after the data.

The generator is seeded and follows TPC-H's cardinalities (times the scale factor) and
the value domains the four queries' predicates test (brands, containers, sizes, types,
quantities, ship modes and instructions, regions), so that they select the fractions
they select in TPC-H; free text is sliced from a fixed random text of TPC-H's lengths.
"""

from __future__ import annotations

import datetime
import random
import sqlite3
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from swift_dss.experiment.tpch_memory import HostMemory, connect

TABLE_SUFFIX = ".tbl"
INDEX_SUFFIX = ".idx"


@dataclass(frozen=True)
class Table:
    name: str
    #: Column names, comma-separated (as CREATE TABLE takes them).
    columns: str
    #: Rows at scale factor 1 (None: a fixed table, region and nation).
    rows_sf1: int | None

    @property
    def width(self) -> int:
        return self.columns.count(",") + 1


@dataclass(frozen=True)
class Index:
    """An index table: KEY columns of TABLE, then the row's rowid."""

    name: str
    table: str
    key: tuple[str, ...]

    @property
    def file(self) -> str:
        return self.name + INDEX_SUFFIX


#: In loading order: a table after the tables it references (lineitem last, after orders).
TABLES = (
    Table("region", "r_regionkey, r_name, r_comment", None),
    Table("nation", "n_nationkey, n_name, n_regionkey, n_comment", None),
    Table(
        "supplier",
        "s_suppkey, s_name, s_address, s_nationkey, s_phone, s_acctbal, s_comment",
        10_000,
    ),
    Table(
        "customer",
        "c_custkey, c_name, c_address, c_nationkey, c_phone, c_acctbal, c_mktsegment, c_comment",
        150_000,
    ),
    Table(
        "part",
        "p_partkey, p_name, p_mfgr, p_brand, p_type, p_size, p_container, p_retailprice, p_comment",
        200_000,
    ),
    Table("partsupp", "ps_partkey, ps_suppkey, ps_availqty, ps_supplycost, ps_comment", 800_000),
    Table(
        "orders",
        "o_orderkey, o_custkey, o_orderstatus, o_totalprice, o_orderdate, o_orderpriority, "
        "o_clerk, o_shippriority, o_comment",
        1_500_000,
    ),
    Table(
        "lineitem",
        "l_orderkey, l_partkey, l_suppkey, l_linenumber, l_quantity, l_extendedprice, "
        "l_discount, l_tax, l_returnflag, l_linestatus, l_shipdate, l_commitdate, "
        "l_receiptdate, l_shipinstruct, l_shipmode, l_comment",
        6_000_000,
    ),
)
TABLE = {t.name: t for t in TABLES}

#: The indexes the four queries look rows up by (PostgreSQL's primary keys, and the
#: foreign-key index on l_partkey); no other index is built.
INDEXES = (
    Index("supplier_pk", "supplier", ("s_suppkey",)),
    Index("partsupp_pk", "partsupp", ("ps_partkey", "ps_suppkey")),
    Index("customer_pk", "customer", ("c_custkey",)),
    Index("orders_pk", "orders", ("o_orderkey",)),
    Index("lineitem_pk", "lineitem", ("l_orderkey", "l_linenumber")),
    Index("lineitem_part", "lineitem", ("l_partkey",)),
)

#: Bytes on disk per row and per index entry, measured at scale 0.05 (SQLite 3.40, 4 KiB
#: pages): the cache is sized from the footprint before the data exists.
ROW_BYTES = {
    "supplier": 172, "customer": 171, "part": 125, "partsupp": 155,
    "lineitem": 133, "orders": 114,
}  # fmt: skip
INDEX_ENTRY_BYTES = 14

# TPC-H's value domains (specification 4.2.2.13 and 4.2.3).
REGIONS = ("AFRICA", "AMERICA", "ASIA", "EUROPE", "MIDDLE EAST")
NATIONS = (
    ("ALGERIA", 0), ("ARGENTINA", 1), ("BRAZIL", 1), ("CANADA", 1), ("EGYPT", 4),
    ("ETHIOPIA", 0), ("FRANCE", 3), ("GERMANY", 3), ("INDIA", 2), ("INDONESIA", 2),
    ("IRAN", 4), ("IRAQ", 4), ("JAPAN", 2), ("JORDAN", 4), ("KENYA", 0), ("MOROCCO", 0),
    ("MOZAMBIQUE", 0), ("PERU", 1), ("CHINA", 2), ("ROMANIA", 3), ("SAUDI ARABIA", 4),
    ("VIETNAM", 2), ("RUSSIA", 3), ("UNITED KINGDOM", 3), ("UNITED STATES", 1),
)  # fmt: skip
TYPES = [
    f"{a} {b} {c}"
    for a in ("STANDARD", "SMALL", "MEDIUM", "LARGE", "ECONOMY", "PROMO")
    for b in ("ANODIZED", "BURNISHED", "PLATED", "POLISHED", "BRUSHED")
    for c in ("TIN", "NICKEL", "BRASS", "STEEL", "COPPER")
]
CONTAINERS = [
    f"{a} {b}"
    for a in ("SM", "LG", "MED", "JUMBO", "WRAP")
    for b in ("CASE", "BOX", "BAG", "JAR", "PKG", "PACK", "CAN", "DRUM")
]
SEGMENTS = ("AUTOMOBILE", "BUILDING", "FURNITURE", "MACHINERY", "HOUSEHOLD")
PRIORITIES = ("1-URGENT", "2-HIGH", "3-MEDIUM", "4-NOT SPECIFIED", "5-LOW")
INSTRUCTIONS = ("DELIVER IN PERSON", "COLLECT COD", "NONE", "TAKE BACK RETURN")
MODES = ("REG AIR", "AIR", "RAIL", "SHIP", "TRUCK", "MAIL", "FOB")
COLORS = (
    "almond", "antique", "aquamarine", "azure", "beige", "bisque", "black", "blanched",
    "blue", "blush", "brown", "burlywood", "burnished", "chartreuse", "chiffon",
    "chocolate", "coral", "cornflower", "cornsilk", "cream", "cyan", "dark", "deep",
    "dim", "dodger", "drab", "firebrick", "floral", "forest", "frosted", "gainsboro",
    "ghost", "goldenrod", "green", "grey", "honeydew", "hot", "indian", "ivory",
    "khaki", "lace", "lavender", "lawn", "lemon", "light", "lime", "linen", "magenta",
    "maroon", "medium", "metallic", "midnight", "mint", "misty", "moccasin", "navajo",
    "navy", "olive", "orange", "orchid", "pale", "papaya", "peach", "peru", "pink",
    "plum", "powder", "puff", "purple", "red", "rose", "rosy", "royal", "saddle",
    "salmon", "sandy", "seashell", "sienna", "sky", "slate", "smoke", "snow", "spring",
    "steel", "tan", "thistle", "tomato", "turquoise", "violet", "wheat", "white",
    "yellow",
)  # fmt: skip
WORDS = (
    "furiously", "quickly", "carefully", "blithely", "slyly", "fluffily", "regular",
    "final", "express", "special", "pending", "ironic", "even", "bold", "silent",
    "unusual", "packages", "requests", "accounts", "deposits", "foxes", "ideas",
    "theodolites", "pinto", "beans", "instructions", "dependencies", "excuses",
    "platelets", "asymptotes", "courts", "dolphins", "sleep", "wake", "are", "cajole",
    "haggle", "nag", "use", "boost", "affix", "detect", "integrate", "among", "across",
    "above", "along", "after", "against", "about",
)  # fmt: skip
DAY0 = datetime.date(1992, 1, 1)
#: Orders span 1992-01-01 to 1998-08-02 (the end date less 151 days); TPC-H's current date.
ORDER_DAYS = (datetime.date(1998, 8, 2) - DAY0).days + 1
CURRENT_DAY = (datetime.date(1995, 6, 17) - DAY0).days
DATES = [(DAY0 + datetime.timedelta(days=d)).isoformat() for d in range(ORDER_DAYS + 160)]


def cardinality(table: str, scale: float) -> int:
    """Rows of TABLE at SCALE (at least 4 suppliers, for partsupp's four per part)."""
    t = TABLE[table]
    if t.rows_sf1 is None:
        return len(REGIONS) if table == "region" else len(NATIONS)
    return max(4 if table == "supplier" else 1, round(t.rows_sf1 * scale))


def footprint_estimate(scale: float) -> int:
    """Bytes of every file once loaded and indexed (ROW_BYTES, INDEX_ENTRY_BYTES)."""
    rows = {t: cardinality(t, scale) for t in ROW_BYTES}
    tables = sum(ROW_BYTES[t] * n for t, n in rows.items())
    entries = sum(rows[i.table] for i in INDEXES)
    return tables + INDEX_ENTRY_BYTES * entries + 4096 * (len(TABLES) + len(INDEXES)) * 2


class _Draw:
    """Columns of random values from one seeded stream."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.text = " ".join(self.rng.choices(WORDS, k=200_000))
        self.alnum = "".join(
            self.rng.choices("abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMN ,", k=1 << 16)
        )

    def ints(self, low: int, high: int, n: int) -> list[int]:
        """N integers in [LOW, HIGH]."""
        return self.rng.choices(range(low, high + 1), k=n)

    def money(self, low: int, high: int, n: int) -> list[float]:
        """N amounts in [LOW, HIGH] cents, as dollars."""
        return [c / 100 for c in self.ints(low, high, n)]

    def pick(self, values: Sequence[str], n: int) -> list[str]:
        return self.rng.choices(values, k=n)

    def comments(self, low: int, high: int, n: int) -> list[str]:
        """N slices of the text, LOW to HIGH characters long."""
        text = self.text
        span = len(text) - high
        return [
            text[o : o + ln]
            for o, ln in zip(self.ints(0, span, n), self.ints(low, high, n), strict=True)
        ]

    def addresses(self, n: int) -> list[str]:
        s, span = self.alnum, len(self.alnum) - 40
        starts, lengths = self.ints(0, span, n), self.ints(10, 40, n)
        return [s[o : o + ln] for o, ln in zip(starts, lengths, strict=True)]

    def phones(self, nations: list[int]) -> list[str]:
        n = len(nations)
        a, b, c = self.ints(100, 999, n), self.ints(100, 999, n), self.ints(1000, 9999, n)
        return [f"{k + 10}-{x}-{y}-{z}" for k, x, y, z in zip(nations, a, b, c, strict=True)]


Rows = list[tuple[object, ...]]


def retail_price(partkey: int) -> float:
    """TPC-H's p_retailprice, a function of the key (lineitem's prices derive from it)."""
    return (90_000 + (partkey // 10) % 20_001 + 100 * (partkey % 1_000)) / 100


def supplier_of(partkey: int, i: int, suppliers: int) -> int:
    """The I-th (0-3) supplier of a part, TPC-H's formula for ps_suppkey."""
    return (partkey + i * (suppliers // 4 + (partkey - 1) // suppliers)) % suppliers + 1


def _batches(n: int, size: int) -> Iterator[tuple[int, int]]:
    for start in range(0, n, size):
        yield start, min(n, start + size)


def generate(scale: float, seed: int, batch: int = 50_000) -> Iterator[tuple[str, Rows]]:
    """(table, rows) batches of every table, the same for the same SCALE and SEED (line
    items come before the orders whose totals they make). Keys are 1..n, dense, in the
    order the rows come."""
    d = _Draw(seed)
    n = {t.name: cardinality(t.name, scale) for t in TABLES}
    regions = zip(REGIONS, d.comments(31, 115, len(REGIONS)), strict=True)
    yield "region", [(k, name, c) for k, (name, c) in enumerate(regions)]
    nations = zip(NATIONS, d.comments(31, 114, len(NATIONS)), strict=True)
    yield "nation", [(k, name, region, c) for k, ((name, region), c) in enumerate(nations)]
    for table, prefix in (("supplier", "Supplier"), ("customer", "Customer")):
        for lo, hi in _batches(n[table], batch):
            m = hi - lo
            nation = d.ints(0, 24, m)
            cols: list[Sequence[object]] = [
                range(lo + 1, hi + 1),
                [f"{prefix}#{k:09d}" for k in range(lo + 1, hi + 1)],
                d.addresses(m),
                nation,
                d.phones(nation),
                d.money(-99_999, 999_999, m),
            ]
            if table == "customer":
                cols.append(d.pick(SEGMENTS, m))
                cols.append(d.comments(29, 116, m))
            else:
                cols.append(d.comments(25, 100, m))
            yield table, list(zip(*cols, strict=True))
    for lo, hi in _batches(n["part"], batch):
        m = hi - lo
        keys = range(lo + 1, hi + 1)
        mfgr = d.ints(1, 5, m)
        names = [" ".join(d.rng.sample(COLORS, 5)) for _ in keys]
        yield "part", list(zip(
            keys, names, [f"Manufacturer#{x}" for x in mfgr],
            [f"Brand#{x}{y}" for x, y in zip(mfgr, d.ints(1, 5, m), strict=True)],
            d.pick(TYPES, m), d.ints(1, 50, m), d.pick(CONTAINERS, m),
            [retail_price(k) for k in keys], d.comments(5, 22, m), strict=True,
        ))  # fmt: skip
    suppliers = n["supplier"]
    for lo, hi in _batches(n["part"], batch // 4):
        m = 4 * (hi - lo)
        keys = [k for k in range(lo + 1, hi + 1) for _ in range(4)]
        supp = [supplier_of(k, i % 4, suppliers) for i, k in enumerate(keys)]
        yield "partsupp", list(zip(
            keys, supp, d.ints(1, 9_999, m), d.money(100, 100_000, m), d.comments(49, 198, m),
            strict=True,
        ))  # fmt: skip
    yield from _orders(d, n, batch)


def _orders(d: _Draw, n: dict[str, int], batch: int) -> Iterator[tuple[str, Rows]]:
    """Line items, then the orders they belong to (an order's total and status are its
    lines')."""
    orders = n["orders"]
    # Only two customers in three place orders (TPC-H: keys not divisible by 3).
    buyers = [k for k in range(1, n["customer"] + 1) if k % 3] or [1]
    dates = d.ints(0, ORDER_DAYS - 1, orders)
    lines = d.ints(1, 7, orders)
    total = [0.0] * orders
    shipped = [0] * orders  # lines shipped by the current date
    parts, suppliers = n["part"], n["supplier"]
    for lo, hi in _batches(orders, max(1, batch // 4)):
        okey = [o for o in range(lo, hi) for _ in range(lines[o])]
        m = len(okey)
        line = [i + 1 for o in range(lo, hi) for i in range(lines[o])]
        qty, part = d.ints(1, 50, m), d.ints(1, parts, m)
        disc, tax = d.ints(0, 10, m), d.ints(0, 8, m)
        ship = [dates[o] + x for o, x in zip(okey, d.ints(1, 121, m), strict=True)]
        commit = [dates[o] + x for o, x in zip(okey, d.ints(30, 90, m), strict=True)]
        receipt = [s + x for s, x in zip(ship, d.ints(1, 30, m), strict=True)]
        price = [q * retail_price(p) for q, p in zip(qty, part, strict=True)]
        for o, p, t, c, s in zip(okey, price, tax, disc, ship, strict=True):
            total[o] += p * (1 + t / 100) * (1 - c / 100)
            shipped[o] += s <= CURRENT_DAY
        returned = d.pick("RA", m)
        yield "lineitem", list(zip(
            [o + 1 for o in okey], part,
            [supplier_of(p, i, suppliers) for p, i in zip(part, d.ints(0, 3, m), strict=True)],
            line, qty, [round(p, 2) for p in price], [c / 100 for c in disc],
            [t / 100 for t in tax],
            [f if r <= CURRENT_DAY else "N" for f, r in zip(returned, receipt, strict=True)],
            ["F" if s <= CURRENT_DAY else "O" for s in ship],
            [DATES[x] for x in ship], [DATES[x] for x in commit], [DATES[x] for x in receipt],
            d.pick(INSTRUCTIONS, m), d.pick(MODES, m), d.comments(10, 43, m), strict=True,
        ))  # fmt: skip
    clerks = max(1, round(n["supplier"] / 10))
    for lo, hi in _batches(orders, batch):
        m = hi - lo
        done = zip(shipped[lo:hi], lines[lo:hi], strict=True)
        status = ["F" if s == n else "O" if s == 0 else "P" for s, n in done]
        yield "orders", list(zip(
            range(lo + 1, hi + 1), d.pick(buyers, m), status,
            [round(t, 2) for t in total[lo:hi]], [DATES[x] for x in dates[lo:hi]],
            d.pick(PRIORITIES, m), [f"Clerk#{x:09d}" for x in d.ints(1, clerks, m)],
            [0] * m, d.comments(19, 78, m), strict=True,
        ))  # fmt: skip


def table_files(root: Path) -> dict[str, Path]:
    """Schema name -> file of every table."""
    return {t.name: root / (t.name + TABLE_SUFFIX) for t in TABLES}


def index_files(root: Path) -> dict[str, Path]:
    return {i.name: root / i.file for i in INDEXES}


def footprint(root: Path) -> int:
    """Bytes of the database's files now."""
    files = [*table_files(root).values(), *index_files(root).values()]
    return sum(p.stat().st_size for p in files if p.exists())


def stage(path: Path, scale: float, seed: int) -> dict[str, int]:
    """Generate every table into one staging database at PATH (outside the tier, as
    dbgen's flat files): the rows per table. One transaction per table."""
    path.unlink(missing_ok=True)
    conn = sqlite3.connect(path, isolation_level=None)
    rows: dict[str, int] = {}
    try:
        for t in TABLES:
            conn.execute(f"CREATE TABLE {t.name} ({t.columns})")
        conn.execute("BEGIN")
        for table, batch in generate(scale, seed):
            marks = ", ".join("?" * TABLE[table].width)
            conn.executemany(f"INSERT INTO {table} VALUES ({marks})", batch)
            rows[table] = rows.get(table, 0) + len(batch)
        conn.execute("COMMIT")
    finally:
        conn.close()
    return rows


def load(
    root: Path,
    staging: Path,
    memory: HostMemory,
    tick: Callable[[str], None] = lambda _what: None,
) -> float:
    """Create the tables in ROOT and fill them from STAGING (one transaction per table,
    in TABLES' order), then build the index tables from them (in INDEXES' order): the
    seconds it took."""
    root.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    files = table_files(root)
    conn = connect({**files, "staging": staging}, memory)
    try:
        for t in TABLES:
            conn.execute(f"CREATE TABLE {t.name}.{t.name} ({t.columns})")
        with memory.bound(conn, files.values()):
            for t in TABLES:
                conn.execute("BEGIN")
                # Whole rows into an empty table of the same shape: SQLite copies the
                # records as they are, so the cost is the new file's writes.
                conn.execute(f"INSERT INTO {t.name}.{t.name} SELECT * FROM staging.{t.name}")
                conn.execute("COMMIT")
                tick(f"table {t.name}")
    finally:
        conn.close()
    for index in INDEXES:
        build_index(root, index, memory)
        tick(f"index {index.name}")
    return time.perf_counter() - start


def build_index(root: Path, index: Index, memory: HostMemory) -> None:
    """Fill INDEX's table from a scan of its table, in key order (as CREATE INDEX sorts)."""
    table = root / (index.table + TABLE_SUFFIX)
    files = {index.name: root / index.file, index.table: table}
    conn = connect(files, memory)
    try:
        key = ", ".join(index.key)
        conn.execute(
            f"CREATE TABLE {index.name}.{index.name} ({key}, rid INTEGER, "
            f"PRIMARY KEY ({key}, rid)) WITHOUT ROWID"
        )
        with memory.bound(conn, files.values()):
            conn.execute("BEGIN")
            conn.execute(
                f"INSERT INTO {index.name}.{index.name} SELECT {key}, rowid "
                f"FROM {index.table}.{index.table} ORDER BY {key}, rowid"
            )
            conn.execute("COMMIT")
    finally:
        conn.close()
