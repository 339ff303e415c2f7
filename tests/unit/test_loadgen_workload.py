"""Workload files: parsing, the shipped workloads, size sampling, the request plan."""

from __future__ import annotations

import collections
import random
from pathlib import Path

import pytest

from swift_dss.loadgen.plan import Plan
from swift_dss.loadgen.workload import WorkloadError, load, parse, shipped

KIB, MIB, GIB = 1 << 10, 1 << 20, 1 << 30
BIG = "9" * 400


def small(**extra: object) -> dict:
    data = {
        "name": "t",
        "seed": 7,
        "containers": 3,
        "types": [
            {"name": "A", "share": 3, "class": 25, "sizes": [[4 * KIB, 50], [64 * KIB, 100]]},
            {"name": "B", "share": 1, "class": 26, "size": 1000},
        ],
        "phases": [
            {"op": "create_containers"},
            {"op": "put", "count": 40},
            {"name": "mixed", "mix": {"get": 2, "put": 1, "delete": 1}, "count": 40},
            {"op": "delete"},
        ],
    }
    data.update(extra)
    return data


def test_shipped_workloads_load() -> None:
    assert {"paper", "specsfs", "email"} <= set(shipped())
    for name in shipped():
        assert load(name).types


def test_paper_workload_is_table_one() -> None:
    w = load("paper")
    assert [t.name for t in w.types] == ["Files", "Picture", "Music", "Video", "VMDK"]
    assert [t.share for t in w.types] == [60, 35, 4, 0.9, 0.1]
    assert [t.cls for t in w.types] == [25, 26, 27, 28, 29]
    assert (w.large_above, w.large_class) == (10 * MIB, 31)
    assert w.containers == 100
    assert [(p.op, p.count) for p in w.phases] == [
        ("create_containers", None), ("put", 26000), ("get", 100000), ("delete", None)
    ]  # fmt: skip
    music = w.types[2]
    # Music: 0.8% <= 1 MB, 52.3% <= 5 MB, 39.6% <= 10 MB, 7.3% <= 50 MB.
    rng = random.Random(1)
    counts = collections.Counter(music.draw(rng)[1].high for _ in range(20000))
    assert counts[512 * KIB] == 0 and counts[64 * KIB] == 0
    assert abs(counts[5 * MIB] / 20000 - 0.523) < 0.02
    assert abs(counts[10 * MIB] / 20000 - 0.396) < 0.02
    vmdk = w.types[4]
    sizes = [vmdk.draw(rng)[0] for _ in range(200)]
    assert all(GIB < s <= 5 * GIB for s in sizes)
    # Every VMDK object is large, so it is sent with USER7.
    assert {w.class_for(vmdk, s) for s in sizes} == {31}
    assert w.class_for(w.types[0], 64 * KIB) == 25


def test_discrete_sizes_and_classes_by_size() -> None:
    w = load("specsfs")
    rng = random.Random(3)
    t = w.types[0]
    sizes = {t.draw(rng)[0] for _ in range(5000)}
    assert sizes <= {b.high for b in t.buckets}
    assert 10 * MIB not in sizes  # 0% in Table 8
    assert t.class_for(4 * KIB) == 11 and t.class_for(4 * KIB + 1) == 12
    assert t.class_for(32 * MIB) == 18
    mix = dict(w.phases[2].mix)
    assert mix == {"get": 2, "put": 1}


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"types": []}, "at least one object type"),
        ({"phases": [{"op": "put"}]}, "needs a count or a duration"),
        ({"phases": [{"op": "copy", "count": 1}]}, "unknown op"),
        ({"phases": [{"mix": {"get": 1, "create_containers": 1}, "count": 1}]}, "cannot be mixed"),
        ({"types": [{"name": "A", "sizes": [[10, 50], [5, 100]]}]}, "must increase"),
        ({"types": [{"name": "A", "class": 300, "size": 1}]}, "class 300"),
        ({"bogus": 1}, "unknown keys bogus"),
        ({"container_prefix": "a/b"}, "container_prefix"),
        # Each of these was once read as another value: 1.5 as class 1, True as 1, inf as a
        # phase that never ends, a list as a crash.
        ({"types": [{"name": "A", "class": 25.5, "size": 1}]}, "class must be an integer"),
        ({"types": [{"name": "A", "class_by_size": [[None, 1.5]], "size": 1}]}, "must be an int"),
        ({"types": [{"name": "A", "class_by_size": [[None]], "size": 1}]}, "class_by_size is a"),
        ({"types": [{"name": "A", "share": float("inf"), "size": 1}]}, "share must be a finite"),
        ({"types": [{"name": ["A"], "size": 1}]}, r"name must be a name, not \['A'\]"),
        ({"types": [{"name": "A", "sizes": [[10, 50], [20, 150]]}]}, "go up to 100"),
        ({"processes": 1.5}, "processes must be a whole number, not 1.5"),
        ({"seed": True}, "seed must be a whole number, not True"),
        ({"scale": float("nan")}, "scale must be a finite number"),
        ({"large_objects": "get"}, "large_objects is a mapping"),
        ({"large_objects": {"above": "1MiB", "class": 2.5}}, "large_objects.class must be"),
        ({"phases": [{"op": "put", "duration": float("inf")}]}, "duration must be a finite"),
        # float() reads hundreds of digits as infinity, and float(int) refuses them.
        ({"phases": [{"op": "put", "duration": BIG + "s"}]}, r"phases\[0\]: duration must be"),
        ({"phases": [{"op": "put", "duration": BIG}]}, r"phases\[0\]: duration must be a fin"),
        ({"phases": [{"op": "put", "duration": int(BIG)}]}, "duration must be a finite"),
        ({"timeout": BIG + "ms"}, "timeout must be a finite number of seconds, not '9999"),
        ({"types": [{"name": "A", "share": int(BIG), "size": 1}]}, "share must be a finite"),
        ({"phases": [{"op": "put", "count": int(BIG)}]}, "count must be at most"),
        ({"types": [{"name": "A", "sizes": [[BIG, 100]]}]}, "is too large"),
        ({"concurrency": 10**12}, "concurrency must be >= 1 and at most 100000, not 10{12}$"),
        ({"processes": 1025}, "processes must be >= 1 and at most 1024"),
        ({"containers": 100_001}, "containers must be >= 1 and at most 100000"),
        (
            {"types": [{"name": "A", "share": 0, "size": 1}, {"name": "B", "share": 0, "size": 2}]},
            "types: every share is 0, so no object can be drawn",
        ),
        ({"phases": [{"op": "put", "duration": "nan"}]}, "is not a duration"),
        ({"phases": [{"op": "put", "count": True}]}, "count must be a whole number"),
        ({"phases": [{"mix": {"get": [1, 2]}, "count": 1}]}, "the weight of get must be"),
        ({"phases": [{"op": "put", "count": 1}, {"op": "put", "count": 2}]}, "named 'put'"),
    ],
)
def test_bad_workloads_are_refused_with_the_reason(change: dict, message: str) -> None:
    with pytest.raises(WorkloadError, match=message):
        parse(small(**change))


def test_a_file_takes_as_many_clients_processes_and_containers_as_the_options() -> None:
    from swift_dss.loadgen.cli import run
    from swift_dss.loadgen.workload import LIMITS

    assert {p.name: getattr(p.type, "max", None) for p in run.params if p.name in LIMITS} == LIMITS


def test_a_workload_that_is_no_text_file_is_refused_with_its_path(tmp_path: Path) -> None:
    with pytest.raises(WorkloadError, match=f"^{tmp_path}: a directory, not a workload file$"):
        load(tmp_path)
    binary = tmp_path / "w.yaml"
    binary.write_bytes(b"name: \xff\xfe\n")
    with pytest.raises(WorkloadError, match=r"w.yaml: not UTF-8 text \(byte 6\)$"):
        load(binary)


@pytest.mark.parametrize("option", ["count_scale", "duration_scale"])
def test_a_scale_that_makes_a_phase_endless_is_refused(option: str) -> None:
    w = parse(small(phases=[{"op": "put", "count": 10**18, "duration": 1e300}]))
    with pytest.raises(WorkloadError, match=r"options: .*phase 'put'"):
        w.with_options(**{option: 1e300})


def test_scale_shrinks_sizes_but_keeps_buckets_and_classes() -> None:
    w = parse(small())
    full = [r for r in Plan(w).requests(1)]
    tiny = [r for r in Plan(w.with_options(scale=0.01)).requests(1)]
    assert [(r.type, r.bucket, r.cls, r.name) for r in full] == [
        (r.type, r.bucket, r.cls, r.name) for r in tiny
    ]
    assert all(t.size == max(1, round(f.size * 0.01)) for f, t in zip(full, tiny, strict=True))


def test_count_scale_shrinks_each_phase_to_at_least_one_request() -> None:
    w = parse(small()).with_options(count_scale=0.1)
    assert [p.count for p in w.phases] == [None, 4, 4, None]
    assert [p.count for p in parse(small()).with_options(count_scale=0.001).phases][1:3] == [1, 1]


@pytest.mark.parametrize("option", ["count_scale", "duration_scale", "scale", "timeout"])
@pytest.mark.parametrize("value", [0.0, -1.0, float("nan"), float("inf")])
def test_an_override_that_is_not_a_finite_positive_number_is_refused(
    option: str, value: float
) -> None:
    # A count scale or a timeout of 0 used to leave the workload's own: a run of the full
    # size, or with the default limit.
    with pytest.raises(WorkloadError, match=option.split("_")[0]):
        parse(small()).with_options(**{option: value})


@pytest.mark.parametrize("option", ["concurrency", "processes", "containers"])
def test_zero_clients_processes_or_containers_are_refused(option: str) -> None:
    with pytest.raises(WorkloadError, match=">= 1"):
        parse(small()).with_options(**{option: 0})


def all_requests(plan: Plan) -> list[tuple]:
    return [
        (i, r.op, r.container, r.name, r.size, r.cls)
        for i in range(len(plan.w.phases))
        for r in plan.requests(i)
    ]


def test_seed_fixes_the_request_sequence() -> None:
    w = parse(small())
    assert all_requests(Plan(w)) == all_requests(Plan(w))
    assert all_requests(Plan(w)) != all_requests(Plan(w.with_options(seed=8)))


def test_processes_split_the_plan_without_overlap() -> None:
    w = parse(small())
    whole = sorted(all_requests(Plan(w)))
    parts = [all_requests(Plan(w, k, 3)) for k in range(3)]
    assert sorted(r for p in parts for r in p) == whole
    # Every request on an object comes from the process that owns it.
    for k, part in enumerate(parts):
        assert all(int(name.rsplit("-", 1)[1]) % 3 == k for _, _, _, name, _, _ in part if name)


def test_plan_never_reads_a_deleted_object_and_deletes_everything() -> None:
    w = parse(small())
    live: set[str] = set()
    for op, _container, name in [(r[1], r[2], r[3]) for r in all_requests(Plan(w))]:
        if op == "put":
            live.add(name)
        elif op in ("get", "delete"):
            assert name in live
            if op == "delete":
                live.discard(name)
    assert not live
