"""The sweep against the local server: every cell, GETs read what PUTs wrote, the table."""

from __future__ import annotations

from typing import Any

import pytest

from swift_dss.loadgen.localserver import LocalServer
from swift_dss.loadgen.protocols import S3
from swift_dss.loadgen.sweep import (
    MAX_SIZE,
    SweepConfig,
    best,
    parse_list,
    run_sweep,
    table,
    whole_number,
)


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


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"parallelism": ()}, "parallelism"),
        ({"parallelism": (1, 0)}, "parallelism"),
        ({"sizes": ()}, "sizes"),
        ({"sizes": (0,)}, "sizes"),
        ({"sizes": (1024, MAX_SIZE + 1)}, "sizes take 1 byte to 5 GiB"),
        ({"ops": ()}, "ops"),
        ({"ops": ("put", "delete")}, "ops"),
    ],
)
def test_a_sweep_that_cannot_run_is_refused_with_its_reason(
    change: dict[str, Any], reason: str
) -> None:
    with pytest.raises(ValueError, match=reason):
        SweepConfig(**change)


def test_a_sweep_of_swifts_largest_object_is_accepted() -> None:
    assert SweepConfig(sizes=(1, MAX_SIZE)).sizes == (1, MAX_SIZE)


def test_parallelism_is_a_list_of_whole_numbers() -> None:
    assert parse_list("1, 4,,16", whole_number) == (1, 4, 16)
    for bad in ("x", "-1", "1.5"):
        with pytest.raises(ValueError, match="not a whole number"):
            parse_list(f"1,{bad}", whole_number)
