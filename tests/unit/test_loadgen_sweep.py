"""The sweep against the local server: every cell, GETs read what PUTs wrote, the table."""

from __future__ import annotations

from swift_dss.loadgen.localserver import LocalServer
from swift_dss.loadgen.protocols import S3
from swift_dss.loadgen.sweep import SweepConfig, best, run_sweep, table


def test_sweep_measures_every_cell_and_cleans_up() -> None:
    cfg = SweepConfig(parallelism=(1, 3), sizes=(1000, 20000), repetitions=2, budget=40000,
                      max_requests=10, cls=27)  # fmt: skip
    with LocalServer(store=True) as srv:
        rows = run_sweep(S3(srv.url, "a", "b"), cfg)
        log = list(srv.log)
        left = dict(srv.state.objects)
    assert [(r["op"], r["size"], r["parallelism"]) for r in rows] == [
        (op, s, p) for op in ("put", "get") for s in (1000, 20000) for p in (1, 3)
    ]
    for r in rows:
        assert r["failures"] == 0 and r["repetitions"] == 2 and r["requests"] > 0
    gets = [x for x in log if x.method == "GET"]
    assert gets and all(x.outcome == "200" for x in gets)
    assert {x.cls for x in log if x.method == "PUT" and "/sweep/" in x.path} == {"27"}
    assert left == {}  # every object deleted at the end
    b = best(rows)
    marked = table(rows, "put")
    assert f"**{b['put']['mbps']:.2f}**" in marked
    assert marked.count("**") == 2


def test_each_put_cell_writes_over_the_names_the_cell_before_wrote() -> None:
    """A size's objects are one cell's (the largest), not every cell's: the testbed's
    devices must hold the sweep's largest sizes at parallelism 64."""
    cfg = SweepConfig(parallelism=(1, 3), sizes=(1000,), ops=("put",), repetitions=2,
                      budget=40000, max_requests=10)  # fmt: skip
    with LocalServer(store=True) as srv:
        run_sweep(S3(srv.url, "a", "b"), cfg)
        names = {x.path for x in srv.log if x.method == "PUT" and "/sweep/" in x.path}
    # Parallelism 3: 3 warm-up PUTs and 2 runs of max(4 x 3, 10) = 12; parallelism 1's
    # 1 + 2 x 10 names are among them.
    assert len(names) == 3 + 2 * 12
