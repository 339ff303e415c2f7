"""The experiment package on recorded data: scaling, cost model, summary, report, policies."""

from __future__ import annotations

import json
import tomllib
from dataclasses import replace
from io import StringIO
from pathlib import Path

import pytest
from rich.console import Console

from swift_dss import policies
from swift_dss.experiment import (
    caching,
    caching_configs,
    content,
    cost,
    policy_file,
    records,
    scale,
    summary,
    traffic,
)
from swift_dss.experiment.caching_report import write_report
from swift_dss.experiment.cli import ScaleArgs, make_scale
from swift_dss.experiment.cluster import PhaseHook
from swift_dss.experiment.traffic_report import write_report as write_traffic_report
from swift_dss.loadgen.stats import Recorder

TINY = scale.Scale(size_scale=0.01, count_scale=0.01, concurrency=4, devices=2, replicas=2)


def test_working_set_is_the_plans_puts_and_deterministic() -> None:
    w = scale.paper_workload(TINY)
    a, b = scale.working_set(w), scale.working_set(w)
    assert a == b
    assert a.objects == round(26000 * TINY.count_scale)
    assert a.bytes == sum(a.by_type.values())
    assert a.gets == round(100000 * TINY.count_scale)
    assert a.per_device(2, 2) == a.bytes


def test_a_larger_size_scale_draws_the_same_objects_each_larger() -> None:
    at = {f: replace(scale.TESTBED_DEFAULT, size_scale=f) for f in (0.1, 0.25)}
    assert at[0.1].max_object == 256 * scale.MIB
    assert at[0.25].max_object == 640 * scale.MIB
    sets = {
        f: scale.working_set(
            scale.split_containers(scale.seeded_workload(scale.paper_workload(s), s))[1]
        )
        for f, s in at.items()
    }
    # The VMDK stays in the draw: the byte mix is the same at both scales.
    small, large = sets[0.1].mix(), sets[0.25].mix()
    for kind, share in small.items():
        assert abs(large[kind] - share) < 0.01, kind
    assert sets[0.25].largest > 2 * sets[0.1].largest


def test_default_scale_keeps_most_bytes_in_few_large_objects() -> None:
    full = scale.seeded_workload(scale.paper_workload(scale.DEFAULT), scale.DEFAULT)
    w = scale.split_containers(full)[1]
    ws = scale.working_set(w)
    mix = ws.mix()
    assert mix[scale.LARGE] > 0.5
    assert ws.count_by_type[scale.LARGE] < 0.05 * ws.objects
    assert ws.largest <= scale.DEFAULT.max_object
    expected = scale.table_mix(w)
    assert expected[scale.LARGE] > 0.5
    assert abs(sum(expected.values()) - 1) < 1e-9


def test_the_testbed_default_draws_table_i_by_type_with_several_vmdks() -> None:
    s = scale.TESTBED_DEFAULT
    w = scale.split_containers(scale.seeded_workload(scale.paper_workload(s), s))[1]
    ws = scale.working_set(w)
    expected = scale.table_mix(w, slices=False)
    assert expected["VMDK"] == pytest.approx(0.75, abs=0.01)
    assert ws.count_by_object_type["VMDK"] >= 2
    assert abs(ws.type_mix()["VMDK"] - expected["VMDK"]) < 0.05
    # No large video stands in for the VMDK bytes, and no one object carries half the run.
    assert abs(ws.type_mix()["Video"] - expected["Video"]) < 0.02
    assert ws.largest < ws.bytes / 2
    assert sum(ws.by_object_type.values()) == ws.bytes
    assert sum(ws.count_by_object_type.values()) == sum(ws.count_by_type.values())


def ws_of(mix: dict[str, int], largest: int) -> scale.WorkingSet:
    return scale.WorkingSet(len(mix), sum(mix.values()), {}, {}, 0, largest, mix)


def test_mix_distance() -> None:
    assert scale.mix_distance({"a": 0.5, "b": 0.5}, {"a": 0.5, "b": 0.5}) == 0
    assert scale.mix_distance({"a": 1.0}, {"b": 1.0}) == 2
    assert scale.mix_distance({"a": 0.8, "b": 0.2}, {"a": 0.6, "b": 0.4}) == pytest.approx(0.4)


def test_pick_seed_takes_the_closest_mix_that_fits() -> None:
    expected = {"large": 0.8, "small": 0.2}
    draws = [
        (1, ws_of({"small": 10}, 5)),  # no large object at all
        (2, ws_of({"large": 80, "small": 20}, 200)),  # the mix, but one object too large
        (3, ws_of({"large": 90, "small": 10}, 60)),
        (4, ws_of({"large": 70, "small": 30}, 50)),  # as close as seed 3: the first wins
    ]
    assert scale.pick_seed(draws, expected, max_object=100) == 3
    assert scale.pick_seed(draws, expected, max_object=200) == 2
    assert scale.pick_seed(draws, expected, max_object=1) == 1  # none fits: the first


def test_seeded_workload_is_deterministic_and_only_changes_the_seed() -> None:
    w = scale.paper_workload(TINY)
    a, b = scale.seeded_workload(w, TINY), scale.seeded_workload(w, TINY)
    assert a == b
    assert w.seed <= a.seed < w.seed + TINY.seeds
    assert a.phases == w.phases and a.types == w.types


def test_log_ticks_print_only_off_a_terminal_and_at_intervals() -> None:
    seen: list[int] = []
    out = StringIO()
    ticks = caching.LogTicks(lambda *a: seen.append(a[2]), Console(file=out), interval=0)
    ticks(0, "put", 5, 1, 2_000_000, 2.0)
    ticks(0, "put", 6, 1, 2_000_000, 2.0)
    assert seen == [5, 6]
    assert "put: 6 done, 1 failed, 1.00 MB/s" in out.getvalue()
    quiet = StringIO()
    ticks = caching.LogTicks(lambda *a: None, Console(file=quiet), interval=3600)
    ticks(0, "put", 5, 0, 0, 1.0)
    ticks(0, "put", 6, 0, 0, 1.0)
    assert quiet.getvalue() == ""


def test_scale_factor_multiplies_counts_not_sizes() -> None:
    s = make_scale(scale.DEFAULT, 4.0, workers=3)
    assert s.count_scale == pytest.approx(scale.DEFAULT.count_scale * 4)
    assert s.size_scale == scale.DEFAULT.size_scale
    assert s.workers == 3


def test_scale_options_given_override_the_defaults_and_the_rest_stand() -> None:
    args = ScaleArgs(2.0, None, None, 8, None, 2, 0, None)
    s = make_scale(scale.DEFAULT, args.factor, **args.overrides())
    assert (s.concurrency, s.replicas, s.workers) == (8, 2, 0)
    assert s.size_scale == scale.DEFAULT.size_scale
    assert s.devices == scale.DEFAULT.devices
    assert s.count_scale == pytest.approx(scale.DEFAULT.count_scale * 2)


def test_cache_sizes_are_percent_of_bytes_per_device() -> None:
    ws = scale.WorkingSet(10, 400 * scale.MIB, {}, {}, 0)
    s = scale.Scale(devices=4, replicas=3)
    assert scale.cache_bytes(ws, s, 10) == 30 * scale.MIB
    assert scale.cache_bytes(ws, s, 5) == 15 * scale.MIB
    assert scale.size_arg(30 * scale.MIB) == "30MiB"


def test_configurations_and_cluster_specs() -> None:
    configs = caching_configs.configurations((5.0, 10.0))
    assert [c.key for c in configs] == ["dss@10%", "lru@10%", "ssd", "dss@5%", "lru@5%", "hdd"]
    assert configs[0].slug == "dss-10"
    assert [c.concurrency for c in configs if c.concurrency] == [caching_configs.HDD_CONCURRENCY]
    assert configs[-1].mode == "hdd"
    ws = scale.WorkingSet(10, 400 * scale.MIB, {}, {}, 0)
    s = scale.Scale(devices=4, replicas=3)
    specs = {c.key: caching_configs.cluster_spec(c, ws, s) for c in configs}
    assert specs["dss@10%"].cache_size == "30MiB"
    assert specs["lru@5%"].policy == "lru"
    ssd = int(specs["ssd"].cache_size.removesuffix("MiB"))
    assert ssd * scale.MIB > ws.per_device(3, 4)  # SSD only holds everything


def test_cost_model_matches_the_papers_prices() -> None:
    assert cost.price_per_gb("hdd", None) == 0.15
    assert cost.price_per_gb("ssd", None) == 3.95
    assert cost.price_per_gb("dss", 0.10) == pytest.approx(0.15 + 0.395)
    entries = {
        "hdd@10%": {"cost_get": cost.dollars_per_gb_per_iops(0.15, 100)},
        "ssd@10%": {"cost_get": cost.dollars_per_gb_per_iops(3.95, 200)},
    }
    cost.normalised(entries, "hdd@10%", ("get",))
    assert entries["hdd@10%"]["cost_norm_get"] == 1.0
    assert entries["ssd@10%"]["cost_norm_get"] == pytest.approx(3.95 / 0.15 / 2, rel=1e-3)
    assert cost.dollars_per_gb_per_iops(1.0, 0) is None


def row(phase: str, op: str, **kw: object) -> dict:
    base = {
        "phase": phase,
        "op": op,
        "type": None,
        "class": None,
        "ops": 100,
        "failures": 0,
        "mbps": 10.0,
        "ops_per_s": 50.0,
        "lat_mean_ms": 20.0,
        "lat_p99_ms": 80.0,
        "ttfb_mean_ms": 5.0,
        "ttfb_p99_ms": 9.0,
        "bytes": 1000,
        "codes": {"201": 100},
    }
    return {**base, **kw}


def recorded_rows(put_mbps: float, get_mbps: float, failures: int = 0) -> list[dict]:
    return [
        row("create", "create_container", mbps=0.0),
        row("put", "put", mbps=put_mbps, failures=failures, codes={"201": 100 - failures}),
        row("put", "put", type="Files", **{"class": 25}),
        row("get", "get", mbps=get_mbps, ops=400, ttfb_mean_ms=30.0),
        row("delete", "delete", mbps=0.0),
    ]


def test_figures_from_rows() -> None:
    f = summary.figures(recorded_rows(12.0, 40.0, failures=5))
    assert f["put_mbps"] == 12.0 and f["get_mbps"] == 40.0
    assert f["get_ttfb_ms"] == 30.0 and f["put_latency_ms"] == 20.0
    assert f["failure_rate"] == pytest.approx(5 / 500)
    assert "put Files" in f["by_type"]


def test_kept_runs_are_read_anew_from_their_raw_record(tmp_path: Path) -> None:
    rec = Recorder(0.0)
    key = ("get", "get", "Files", 25, "<=64 KiB")
    for sec in range(4):
        rec.record(key, "200", sec + 0.5, 0.01, 0.02, 1_000_000)
    rec.phase_window("get", 0.0, 10.0)
    rec.steady_state("get", 0.0, 4.0, 4_000_000)
    path = tmp_path / "loadgen" / "recorder.json"
    path.parent.mkdir()
    path.write_text(json.dumps(rec.to_json()))
    kept = {"get_mbps": 0.4, "get_ttfb_ms": 7.0, "testbed": {"dilation": 2, "settings": {}}}
    fresh = summary.refreshed(kept, caching.kept_recorder(tmp_path))
    # 4 MB over the 4 s steady state, at K = 2; the whole phase's 10 s stays beside it.
    assert (fresh["get_mbps"], fresh["get_whole_phase_mbps"]) == (2.0, 0.8)
    assert (fresh["get_ops_per_s"], fresh["get_whole_phase_ops_per_s"]) == (2.0, 0.8)
    assert fresh["get_ttfb_ms"] == 7.0  # latencies are the entry's own
    assert summary.refreshed(kept, caching.kept_recorder(tmp_path / "none")) is kept


def test_bandwidth_is_the_steady_states_when_the_record_has_it() -> None:
    rows = recorded_rows(12.0, 40.0)
    rows[3]["steady_mbps"] = 90.0
    f = summary.figures(rows)
    assert (f["get_mbps"], f["get_whole_phase_mbps"]) == (90.0, 40.0)
    assert (f["put_mbps"], f["put_whole_phase_mbps"]) == (12.0, 12.0)
    # Read at the testbed's speed, both are bandwidths.
    real = summary.at_real_speed(f, 2, 0.1)
    assert (real["get_mbps"], real["get_whole_phase_mbps"]) == (1800.0, 800.0)


def test_content_by_object_type() -> None:
    w = scale.paper_workload(TINY)
    dumps = {
        "d1": {"classes": {"25": {"cached_bytes": 100}, "31": {"cached_bytes": 300}}},
        "d2": {"classes": {"2": {"cached_bytes": 50}, "5": {"cached_bytes": 50}}},
    }
    got = content.by_type(dumps, w)
    assert got == {"Files": 100, scale.LARGE: 300, content.METADATA: 50, content.DATABASES: 50}
    assert content.shares(got)[scale.LARGE] == 0.6


def entry(key: str, mode: str, pct: float | None, put: float, get: float) -> dict:
    e = {
        "key": key,
        "mode": mode,
        "policy": "reference",
        "cache_pct": pct,
        **summary.figures(recorded_rows(put, get)),
        "content_bytes": {"Files": 10, scale.LARGE: 30} if pct else {},
        "content_shares": {"Files": 0.25, scale.LARGE: 0.75} if pct else {},
        "devices_by_phase": {"put": {"ssd": {"ops": 1, "bytes": 2, "busy_s": 0.1}}},
        "classes_end": {"25": {"bypassed_bytes": 5, "hits": 1}},
        "loadavg_before": [1.0, 1.0, 1.0],
        "loadavg_after": [1.5, 1.0, 1.0],
        "warnings": [],
    }
    e["get_ops_per_s"] = get * 2
    return e


def recorded_entries() -> dict[str, dict]:
    return {
        "hdd": entry("hdd", "hdd", None, 20, 80),
        "ssd": entry("ssd", "ssd", None, 40, 200),
        "lru@5%": entry("lru@5%", "lru", 5.0, 5, 60),
        "dss@5%": entry("dss@5%", "dss", 5.0, 30, 150),
        "lru@10%": entry("lru@10%", "lru", 10.0, 6, 100),
        "dss@10%": entry("dss@10%", "dss", 10.0, 35, 190),
    }


def test_summary_and_report_from_recorded_entries(tmp_path: Path) -> None:
    w = scale.paper_workload(TINY)
    ws = scale.working_set(w)
    setup = caching.setup_doc(w, ws, TINY, (5.0, 10.0))
    doc = caching.build_summary(recorded_entries(), setup, (5.0, 10.0))
    for key in ("hdd@5%", "ssd@10%", "lru@10%", "dss@10%", "dss@5%"):
        for metric in summary.FIG7_KEYS:
            assert metric in doc[key], (key, metric)
    assert doc["hdd@10%"]["cost_norm_get"] == 1.0
    assert doc["dss@10%"]["measured_as"] == "dss@10%"
    assert doc["ssd@5%"]["measured_as"] == "ssd"
    heads = {h["what"]: h for h in doc["headlines"]}
    assert heads["dss@10% / lru@10% put_mbps"]["measured"] == pytest.approx(35 / 6, rel=1e-3)
    assert heads["dss@10% / lru@10% put_mbps"]["met"] is True
    assert doc["missing"] == []
    json.dumps(doc)  # JSON-able
    path = write_report(tmp_path, doc)
    text = path.read_text()
    assert "Fig. 7" in text and "Fig. 8" in text and "Fig. 9" in text
    vmdk = f"| VMDK | {ws.count_by_object_type.get('VMDK', 0)} | "
    assert "| type | objects |" in text and vmdk in text
    for png in ("fig7.png", "fig8.png", "fig9.png"):
        assert (tmp_path / png).stat().st_size > 1000


def test_a_report_of_a_policy_variant_alone_has_its_plots(tmp_path: Path) -> None:
    """`--only dss-readcut@10%` into a new directory: no HDD, SSD, LRU or DSS bar to draw."""
    w = scale.paper_workload(TINY)
    setup = caching.setup_doc(w, scale.working_set(w), TINY, (10.0,))
    entry = {**recorded_entries()["dss@10%"], "key": "dss-readcut@10%"}
    doc = caching.build_summary({"dss-readcut@10%": entry}, setup, (10.0,))
    write_report(tmp_path, doc)
    assert (tmp_path / "fig7.png").stat().st_size > 1000


def test_a_run_of_some_configurations_keeps_the_others_in_the_summary(tmp_path: Path) -> None:
    for key, e in recorded_entries().items():
        slug = key.replace("@", "-").replace("%", "")
        (tmp_path / "runs" / slug / "r1").mkdir(parents=True)
        (tmp_path / "runs" / slug / "r1" / "entry.json").write_text(json.dumps(e))
    doc = caching.caching(
        tmp_path, TINY, (5.0, 10.0), only=["dss@10%"], console=Console(file=StringIO())
    )
    assert doc["lru@10%"]["put_mbps"] == recorded_entries()["lru@10%"]["put_mbps"]
    assert doc["hdd@5%"]["measured_as"] == "hdd"
    assert not [k for k in doc["missing"] if not k.startswith("dss-")]


def test_a_record_cut_short_counts_as_not_measured(tmp_path: Path) -> None:
    """An interrupt while a record was written once left part of it, and the resumed
    experiment stopped on it; now a record is whole or absent, and a cut one is not kept."""
    for key, e in recorded_entries().items():
        run = tmp_path / "runs" / key.replace("@", "-").replace("%", "") / "r1"
        run.mkdir(parents=True)
        text = json.dumps(e)
        (run / "entry.json").write_text(text[: len(text) // 2] if key == "lru@10%" else text)
    doc = caching.caching(
        tmp_path, TINY, (5.0, 10.0), console=Console(file=StringIO()), run_nothing=True
    )
    assert "lru@10%" in doc["missing"]
    assert doc["dss@10%"]["put_mbps"] == recorded_entries()["dss@10%"]["put_mbps"]
    run = tmp_path / "fresh"
    run.mkdir()
    records.write_record(run / "entry.json", {"a": 1})
    assert records.read_record(run / "entry.json") == {"a": 1}
    assert [p.name for p in run.iterdir()] == ["entry.json"]  # no copy left beside it


def test_summary_names_what_is_missing() -> None:
    w = scale.paper_workload(TINY)
    setup = caching.setup_doc(w, scale.working_set(w), TINY, (10.0,))
    entries = {"dss@10%": entry("dss@10%", "dss", 10.0, 35, 190)}
    doc = caching.build_summary(entries, setup, (10.0,))
    assert set(doc["missing"]) == {"hdd", "ssd", "lru@10%"}
    assert next(h for h in doc["headlines"] if "lru" in h["what"])["met"] is None


def test_extra_policies_run_and_report_beside_dss() -> None:
    configs = caching_configs.configurations((10.0,), ("dss-clock",))
    assert [c.key for c in configs] == ["dss@10%", "lru@10%", "dss-clock@10%", "ssd", "hdd"]
    both = [c.key for c in caching_configs.configurations((5.0, 10.0), ("dss-clock",))]
    assert both == ["dss@10%", "lru@10%", "dss-clock@10%", "ssd", "dss@5%", "lru@5%", "hdd"]
    extra = configs[2]
    assert (extra.mode, extra.policy, extra.slug) == ("dss", "dss-clock", "dss-clock-10")
    w = scale.paper_workload(TINY)
    setup = caching.setup_doc(w, scale.working_set(w), TINY, (10.0,))
    entries = {k: v for k, v in recorded_entries().items() if not k.endswith("@5%")}
    entries["dss-clock@10%"] = {**entry("dss-clock@10%", "dss", 10.0, 40, 200), "policy": "x"}
    doc = caching.build_summary(entries, setup, (10.0,), [c.key for c in configs])
    assert doc["dss-clock@10%"]["put_mbps"] == 40
    assert doc["dss-clock@10%"]["cost_norm_get"] is not None
    assert doc["missing"] == []
    assert caching_configs.extra_policies() == tuple(
        p for p in policies.available() if p.startswith("dss-")
    )


def test_tiered_policies_place_only_the_stream_classes() -> None:
    w = scale.paper_workload(TINY)
    place = traffic.placement(("Files", "Pictures"), w)
    assert place == {25: "ssd", 26: "ssd", 27: "hdd", 28: "hdd"}
    data = policy_file.tiered("t", place)
    assert tomllib.loads(policy_file.dumps(data)) == data
    tiers = {e["ids"]: e["tier"] for e in data["classes"]}
    assert tiers[25] == "ssd" and tiers[28] == "hdd" and tiers["1-10"] == "ssd"
    assert data["mode"] == "tiered"
    with pytest.raises(ValueError):
        policy_file.tiered("t", {23: "ssd"})


@pytest.mark.parametrize(
    ("size_scale", "block"),
    [(1.0, 4096), (2.0, 4096), (0.5, 2048), (0.25, 1024), (0.1, 512), (0.15, 512), (0.01, 512),
     (1e-300, 512)],
)  # fmt: skip
def test_the_cache_block_scales_as_the_objects(size_scale: float, block: int) -> None:
    assert policy_file.scaled_block(4096, size_scale) == block


@pytest.mark.parametrize("name", ["lru", "reference", "dss-slru"])
def test_a_policy_with_another_block_is_the_shipped_one_but_its_block(
    name: str, tmp_path: Path
) -> None:
    shipped = policies.load_policy(name)
    path = policy_file.with_block(name, 512, tmp_path / "p.toml")
    assert tomllib.loads(path.read_text()) == {**shipped, "block_size": 512}


def test_cache_block_option_values() -> None:
    from swift_dss.experiment.cli import parse_cache_block

    assert parse_cache_block("scaled", 0.1) == 512
    assert parse_cache_block("scaled", 1.0) == 4096
    assert parse_cache_block("1024", 0.1) == 1024


def test_stream_workloads_have_one_type_and_its_class() -> None:
    base = scale.paper_workload(TINY)
    opts = traffic.TrafficOptions(duration=5, clients=3)
    w = traffic.stream_workload(base, "Video", opts, 3)
    assert [t.name for t in w.types] == ["Video"]
    assert w.large_above is None and w.concurrency == 3
    assert [p.op for p in w.phases] == ["create_containers", "put", "get", "delete"]
    assert w.phases[1].duration == 5


def test_traffic_report_from_recorded_runs(tmp_path: Path) -> None:
    cdf = [[p, float(p)] for p in (1, 50, 90, 100)]
    stream = {"put_mbps": 5.0, "get_mbps": 9.0, "put_latency_ms": 40.0, "put_cdf": cdf}
    runs = [
        {
            "name": name,
            "on_ssd": list(on_ssd),
            "streams": {s: dict(stream, put_under_100ms=0.9) for s in traffic.STREAMS},
            "put_mbps": 20.0,
            "get_mbps": 36.0,
            "failures_all_phases": 0,
            "devices": {"ssd": {"bytes": 1e6, "busy_s": 1.0}},
            "loadavg_before": [1.0],
            "loadavg_after": [1.0],
            # Class numbers, as a fresh run has them (read back from JSON, strings).
            "placement": {25: "ssd" if on_ssd else "hdd", 26: "hdd", 27: "hdd", 28: "hdd"},
            "tier_requests": {
                "kinds": {"fsync": {"n": 2, "mean_ms": 12.5, "total_s": 0.025}},
                "classes": {"25": {"fsync": {"n": 2, "mean_ms": 12.5, "total_s": 0.025}}},
                "concurrency": 3.0,
            },
        }
        for name, on_ssd in traffic.RUNS
    ]
    doc = {
        "experiment": "traffic",
        "streams": list(traffic.STREAMS),
        "runs": runs,
        "setup": {"scale": TINY.to_json(), "options": {"clients": 25, "duration": 30}},
    }
    text = write_traffic_report(tmp_path, doc).read_text()
    assert "Fig. 10" in text and "+Video" in text
    # The tier's request times: per kind, and per stream with where its class was placed.
    assert "| none | - | - | - | 12.50 (2) | - | - | - | 3.0 |" in text
    assert "| +Files | - / 12.5 (ssd) | - / - (hdd) |" in text
    assert (tmp_path / "fig11_put.png").exists() and (tmp_path / "fig10_get.png").exists()


def test_phase_hook_reports_each_phase_in_order() -> None:
    seen: list[int] = []
    hook = PhaseHook(seen.append)
    for _ in range(3):
        hook.wait(timeout=1)
    assert seen == [0, 1, 2]


def test_variants_all_none_and_named() -> None:
    shipped = caching_configs.extra_policies()
    assert caching_configs.select_variants("all") == shipped
    assert caching_configs.select_variants("none") == ()
    assert caching_configs.select_variants("dss-slru, dss-readcut") == ("dss-slru", "dss-readcut")
    assert caching_configs.select_variants("dss-clockpro") == ("dss-clockpro",)
    with pytest.raises(ValueError, match="dss-nope"):
        caching_configs.select_variants("dss-slru,dss-nope")


def test_an_unknown_variant_is_a_cli_error(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from swift_dss.experiment.cli import experiment

    result = CliRunner().invoke(
        experiment, ["caching", "--out", str(tmp_path), "--variants", "lru-fast"]
    )
    assert result.exit_code == 2
    assert "unknown policy variant lru-fast" in result.output
    assert not (tmp_path / "summary.json").exists()


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--testbed", "saio", "--dilation", "2"], "are the emulated testbed's"),
        (["--testbed", "saio", "--ssd-model", "intel710"], "are the emulated testbed's"),
        (["--dilation", "0"], "--dilation"),
        (["--ssd-model", "samsung"], "unknown SSD model 'samsung'"),
        (["--hdd-model", "st1000nm0011:dilation=2"], "sets dilation itself"),
        (["--testbed", "saio", "--rate-scale", "0.1"], "are the emulated testbed's"),
        (["--rate-scale", "0"], "rate_scale must be a number in (0, 1]"),
        (["--rate-scale", "1.5"], "rate_scale must be a number in (0, 1]"),
        (["--hdd-model", "hdd:rate_scale=0.5", "--rate-scale", "0.1"], "sets rate_scale"),
        (["--testbed", "vm"], "--testbed"),
        (["--repeats", "0"], "--repeats"),
        (["--link-queue-ms", "0"], "link_queue_ms must be more than 0 and at most 10000"),
        (["--tcp-congestion", "Cubic"], "is not a congestion control name"),
        (["--tcp-congestion", "nosuchcc"], "'nosuchcc' is not available on this host"),
        (["--testbed", "saio", "--tcp-congestion", "cubic"], "are the emulated testbed's"),
        (["--testbed", "saio", "--error-limit", "100"], "are the emulated testbed's"),
        (["--error-limit", "-1"], "error_limit must be an integer from 0 to 1000000000"),
        (["--error-limit", "many"], "'many' is not a valid integer"),
        (["--testbed", "saio", "--conn-timeout", "2"], "are the emulated testbed's"),
        (["--conn-timeout", "0"], "conn_timeout must be more than 0 and at most 3600 seconds"),
        (["--conn-timeout", "nan"], "conn_timeout must be more than 0 and at most 3600"),
        (["--conn-timeout", "soon"], "'soon' is not a valid float"),
        (["--storage-rate", "fast"], "link rate 'fast' is not a number with a unit"),
        (["--testbed", "saio", "--proxy-rate", "1gbit"], "are the emulated testbed's"),
        (["--meta-writes", "lazy"], "'lazy' is not one of 'sync', 'buffered'"),
        (["--testbed", "saio", "--meta-writes", "buffered"], "are the emulated testbed's"),
        (["--cache-block", "3000"], "expected `scaled` or a power of two"),
        (["--cache-block", "256"], "expected `scaled` or a power of two"),
        (["--cache-block", "4k"], "expected `scaled` or a power of two"),
        (["--cache-pcts", "0"], "expected distinct numbers above 0 and at most 100"),
        (["--cache-pcts", "150"], "expected distinct numbers above 0 and at most 100"),
        (["--cache-pcts", "5,5"], "expected distinct numbers"),
        (["--cache-pcts", "nan"], "expected distinct numbers"),
        (["--only", "dss@7%"], "unknown configuration dss@7%; known: dss@10%, lru@10%, ssd,"),
        (["--only", ","], "',' names no configuration"),
        (["--variants", "dss-slru", "--only", "dss-slru"], "unknown configuration dss-slru;"),
        (["--only", "dss-slru@10%"], "(a policy variant runs with --variants dss-slru)"),
    ],
)
def test_bad_testbed_options_are_cli_errors(tmp_path: Path, args: list[str], says: str) -> None:
    from click.testing import CliRunner

    from swift_dss.experiment.cli import experiment

    result = CliRunner().invoke(experiment, ["caching", "--out", str(tmp_path), *args])
    assert result.exit_code == 2, result.output
    assert says in result.output
    assert not (tmp_path / "summary.json").exists()


BIG = "9" * 400


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--only", ""], "'' names no configuration; known: dss@10%"),
        (["--only", " "], "' ' names no configuration"),
        (["--variants", ""], "'' names no policy variant: none, all or some of dss-"),
        (
            ["--size-scale", "1e-300", "--cache-block", "scaled"],
            "Invalid value for --cache-block: `scaled` with --size-scale 1e-300 is a block "
            "under one byte",
        ),
        (["--client-rate", f"{BIG}gbit"], "link rate '99999999999999999999\u2026' is too large"),
        (["--meta-memory", BIG], "metadata memory"),
    ],
)
def test_options_that_name_nothing_or_too_much_are_refused_before_anything_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: list[str], says: str
) -> None:
    # An empty --only once meant every configuration: the whole experiment started.
    from click.testing import CliRunner

    from swift_dss.experiment.cli import experiment

    def started(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("the experiment started")

    monkeypatch.setattr(caching, "caching", started)
    result = CliRunner().invoke(experiment, ["caching", "--out", str(tmp_path), *args])
    assert result.exit_code == 2, result.output
    assert isinstance(result.exception, SystemExit)  # a usage error, not a crash
    assert says in result.output


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--sizes", "12XB"], "size '12XB' is not a number with an optional unit"),
        (["--budget", BIG], "size '99999999999999999999\u2026' is too large"),
        (["--repetitions", "0"], "Invalid value for '--repetitions': 0 is not in the range"),
        (["--container", "a/b"], "Invalid value for '--container': 'a/b' is not a container"),
        (["--bogus"], "No such option '--bogus'"),
        (["--out", "elsewhere"], "--out: each run sets its own"),
        (["--endpoint=http://h"], "--endpoint=http://h: each run sets its own"),
    ],
)
def test_the_sweeps_arguments_are_checked_before_any_testbed_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: list[str], says: str
) -> None:
    # `dss loadgen sweep` checks them itself, but only once a testbed is up for a case.
    from click.testing import CliRunner

    from swift_dss.experiment import distance
    from swift_dss.experiment.cli import experiment

    def started(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("a testbed started")

    monkeypatch.setattr(distance, "sweep_distance", started)
    result = CliRunner().invoke(experiment, ["sweep", "--out", str(tmp_path), "--", *args])
    assert result.exit_code == 1, result.output
    assert f"Error: the arguments for dss loadgen sweep: {says}" in result.output
    # Arguments it takes pass, with nothing run.
    distance.check_sweep_args(tmp_path, distance.CASES, ["--sizes", "4KiB", "--parallelism", "8"])


def test_a_kept_run_must_come_from_the_same_testbed(tmp_path: Path) -> None:
    from swift_dss.experiment.cluster import ExperimentError
    from swift_dss.experiment.targets import Testbed, check_kept
    from swift_dss.testbed.settings import TestbedSettings

    k8 = Testbed("netns", TestbedSettings(dilation=8))
    k4 = Testbed("netns", TestbedSettings(dilation=4))
    where = tmp_path / "entry.json"
    check_kept({"testbed": k8.to_json()}, k8, where)
    check_kept({}, k4, where)  # entries from before testbeds were recorded
    with pytest.raises(ExperimentError, match=r"entry.json was measured with dilation 8 \(now 4\)"):
        check_kept({"testbed": k8.to_json()}, k4, where)
    with pytest.raises(ExperimentError, match=r"rate_scale 1.0 \(now 0.1\)"):
        check_kept(
            {"testbed": k4.to_json()},
            Testbed("netns", TestbedSettings(dilation=4, rate_scale=0.1)),
            where,
        )
    with pytest.raises(ExperimentError, match=r"server_workers 1 \(now 4\)"):
        check_kept(
            {"testbed": k4.to_json()},
            Testbed("netns", TestbedSettings(dilation=4, server_workers=4)),
            where,
        )
    with pytest.raises(ExperimentError, match="testbed saio"):
        check_kept({"testbed": Testbed().to_json()}, k4, where)


def test_a_kept_run_without_a_recorded_queue_had_twenty_real_milliseconds(
    tmp_path: Path,
) -> None:
    from swift_dss.experiment.cluster import ExperimentError
    from swift_dss.experiment.targets import Testbed, check_kept
    from swift_dss.testbed.settings import TestbedSettings

    def unrecorded(k: int) -> dict[str, object]:
        tb = Testbed("netns", TestbedSettings(dilation=k)).to_json()
        del tb["settings"]["link_queue_ms"]
        return {"testbed": tb}

    where = tmp_path / "entry.json"
    # 20 ms of real queue is 10 emulated ms at K = 2 and 5 at K = 4; today's default is 3.
    at = {k: Testbed("netns", TestbedSettings(dilation=k, link_queue_ms=20 / k)) for k in (2, 4)}
    check_kept(unrecorded(2), at[2], where)
    check_kept(unrecorded(4), at[4], where)
    with pytest.raises(ExperimentError, match=r"link_queue_ms 10.0 \(now 3.0\)"):
        check_kept(unrecorded(2), Testbed("netns", TestbedSettings(dilation=2)), where)
    with pytest.raises(ExperimentError, match=r"link_queue_ms 5.0 \(now 3.0\)"):
        check_kept(unrecorded(4), Testbed("netns", TestbedSettings(dilation=4)), where)


@pytest.mark.parametrize(
    ("key", "then", "refused"),
    [
        # Before the burst was a setting every link had the 128 KiB bucket...
        ("link_burst", "gso", r"link_burst gso \(now frames\)"),
        # ... and TCP's minimum RTO was the kernel's, undilated.
        ("tcp_rto_min_ms", 0, r"tcp_rto_min_ms 0 \(now 200.0\)"),
    ],
)
def test_a_kept_run_without_a_recorded_link_setting_had_the_earlier_one(
    key: str, then: object, refused: str, tmp_path: Path
) -> None:
    from swift_dss.experiment.cluster import ExperimentError
    from swift_dss.experiment.targets import Testbed, check_kept
    from swift_dss.testbed.settings import TestbedSettings

    tb = Testbed("netns", TestbedSettings(dilation=8)).to_json()
    del tb["settings"][key]
    where = tmp_path / "entry.json"
    check_kept({"testbed": tb}, Testbed("netns", TestbedSettings(dilation=8, **{key: then})), where)
    with pytest.raises(ExperimentError, match=refused):
        check_kept({"testbed": tb}, Testbed("netns", TestbedSettings(dilation=8)), where)


def test_a_kept_run_without_a_recorded_congestion_control_had_the_hosts(tmp_path: Path) -> None:
    from swift_dss.experiment.cluster import ExperimentError
    from swift_dss.experiment.targets import Testbed, check_kept
    from swift_dss.testbed.settings import TestbedSettings

    tb = Testbed("netns", TestbedSettings(dilation=2)).to_json()
    del tb["settings"]["tcp_congestion"]
    where = tmp_path / "entry.json"
    hosts = Testbed("netns", TestbedSettings(dilation=2, tcp_congestion=""))
    check_kept({"testbed": tb}, hosts, where)
    # Today's default, the paper's CUBIC, does not mix with them.
    with pytest.raises(ExperimentError, match=r"tcp_congestion  \(now cubic\)"):
        check_kept({"testbed": tb}, Testbed("netns", TestbedSettings(dilation=2)), where)


def test_a_kept_run_without_a_recorded_error_limit_had_swifts(tmp_path: Path) -> None:
    from swift_dss.experiment.cluster import ExperimentError
    from swift_dss.experiment.targets import Testbed, check_kept
    from swift_dss.testbed.settings import TestbedSettings

    tb = Testbed("netns", TestbedSettings(dilation=2)).to_json()
    del tb["settings"]["error_limit"]
    where = tmp_path / "entry.json"
    check_kept({"testbed": tb}, Testbed("netns", TestbedSettings(dilation=2)), where)
    lifted = Testbed("netns", TestbedSettings(dilation=2, error_limit=10**9))
    with pytest.raises(ExperimentError, match=r"error_limit 10 \(now 1000000000\)"):
        check_kept({"testbed": tb}, lifted, where)


def test_the_connect_timeout_is_recorded_dilated_and_kept_runs_keep_theirs(
    tmp_path: Path,
) -> None:
    from click.testing import CliRunner

    from swift_dss.experiment.cli import experiment
    from swift_dss.experiment.cluster import ExperimentError
    from swift_dss.experiment.targets import Testbed, check_kept
    from swift_dss.testbed.settings import TestbedSettings

    args = ["caching", "--out", str(tmp_path), "--report-only", "--count-scale", "0.0005"]
    result = CliRunner().invoke(experiment, [*args, "--dilation", "4", "--conn-timeout", "1.5"])
    assert result.exit_code == 0, result.output
    recorded = json.loads((tmp_path / "setup.json").read_text())["testbed"]
    assert recorded["settings"]["conn_timeout"] == 1.5
    settings = TestbedSettings(**recorded["settings"])
    assert settings.proxy_options()["conn_timeout"] == "6"
    assert settings.object_options()["conn_timeout"] == "6"
    where = tmp_path / "entry.json"
    with pytest.raises(ExperimentError, match=r"conn_timeout 1.5 \(now 0.5\)"):
        check_kept({"testbed": recorded}, Testbed("netns", TestbedSettings(dilation=4)), where)


def test_a_kept_run_on_another_hosts_congestion_control_is_refused(tmp_path: Path) -> None:
    """With the setting left to the host, what a run's nodes ran is in its entry: a host
    whose default has changed since does not mix its runs with the kept ones."""
    from swift_dss.experiment.cluster import ExperimentError
    from swift_dss.experiment.targets import Testbed, check_kept
    from swift_dss.testbed import congestion
    from swift_dss.testbed.settings import TestbedSettings

    now = Testbed("netns", TestbedSettings(dilation=2, tcp_congestion=""))
    assert now.tcp() == {"tcp": congestion.host_default()}
    assert Testbed("netns", TestbedSettings(dilation=2)).tcp() == {"tcp": "cubic"}
    assert Testbed().tcp() == {}
    entry = {"testbed": now.to_json(), **now.tcp()}
    where = tmp_path / "entry.json"
    check_kept(entry, now, where)
    other = next(cc for cc in ("cubic", "reno") if cc != congestion.host_default())
    with pytest.raises(ExperimentError, match=rf"TCP {other} \(now {now.tcp()['tcp']}\)"):
        check_kept({**entry, "tcp": other}, now, where)
    check_kept({"testbed": now.to_json()}, now, where)  # entries from before the record


def test_a_kept_run_must_have_the_same_cache_block(tmp_path: Path) -> None:
    from swift_dss.experiment.cluster import ExperimentError
    from swift_dss.experiment.targets import Testbed

    where, saio = tmp_path / "entry.json", Testbed()
    check = caching.check_measured
    check({}, saio, TINY, where, 1)  # entries from before the block was recorded
    check({"cache_block": 512}, saio, replace(TINY, cache_block=512), where, 1)
    with pytest.raises(ExperimentError, match=r"cache block 512 \(now of its policy\)"):
        check({"cache_block": 512}, saio, TINY, where, 1)
    with pytest.raises(ExperimentError, match=r"cache block of its policy \(now 1024\)"):
        check({"cache_block": None}, saio, replace(TINY, cache_block=1024), where, 1)
    with pytest.raises(ExperimentError, match=r"testbed netns \(now saio\)"):
        check({"testbed": Testbed("netns").to_json()}, saio, TINY, where, 1)


def test_a_kept_run_must_have_drawn_the_same_plan(tmp_path: Path) -> None:
    from swift_dss.experiment.cluster import ExperimentError
    from swift_dss.experiment.targets import Testbed

    where = tmp_path / "r1" / "entry.json"
    caching.check_measured({}, Testbed(), TINY, where, 2047)  # no load generator record
    (tmp_path / "r1" / "loadgen").mkdir(parents=True)
    (tmp_path / "r1" / "loadgen" / "results.json").write_text(json.dumps({"seed": 2029}))
    assert caching.kept_seed(where.parent) == 2029
    caching.check_measured({}, Testbed(), TINY, where, 2029)
    with pytest.raises(ExperimentError, match=r"the workload's seed 2029 \(now 2047\)"):
        caching.check_measured({}, Testbed(), TINY, where, 2047)


def test_the_traffic_study_is_dilated_more_than_the_caching_experiment() -> None:
    from click.testing import CliRunner

    from swift_dss.experiment.cli import experiment
    from swift_dss.experiment.targets import CACHING_TESTBED, TRAFFIC_TESTBED

    assert TRAFFIC_TESTBED.dilation > CACHING_TESTBED.dilation
    for command, k in (("traffic", TRAFFIC_TESTBED), ("caching", CACHING_TESTBED)):
        out = CliRunner().invoke(experiment, [command, "--help"]).output
        assert f"[default: {k.dilation}]" in " ".join(out.split())


def test_the_testbeds_device_models_are_settings(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from swift_dss.experiment.cli import experiment
    from swift_dss.testbed.settings import TESTBED_HDD

    args = ["caching", "--out", str(tmp_path), "--report-only", "--count-scale", "0.0005"]
    ssd = "intel710:pagecache=64MiB"
    result = CliRunner().invoke(experiment, [*args, "--ssd-model", ssd])
    assert result.exit_code == 0, result.output
    settings = json.loads((tmp_path / "setup.json").read_text())["testbed"]["settings"]
    assert (settings["ssd_model"], settings["hdd_model"]) == (ssd, TESTBED_HDD)
    assert settings["meta_memory"] == "24GiB"
    result = CliRunner().invoke(experiment, [*args, "--meta-memory", "0", "--force"])
    assert result.exit_code == 0, result.output
    settings = json.loads((tmp_path / "setup.json").read_text())["testbed"]["settings"]
    assert settings["meta_memory"] == "0"
    bad = CliRunner().invoke(experiment, [*args, "--meta-memory", "much"])
    assert bad.exit_code == 2 and "metadata memory 'much'" in bad.output
    saio = CliRunner().invoke(experiment, [*args, "--testbed", "saio", "--meta-memory", "0"])
    assert saio.exit_code == 2 and "--error-limit are the emulated testbed's" in saio.output


def test_the_printed_summary_names_a_cpu_bound_reference_configuration() -> None:
    from io import StringIO

    from rich.console import Console

    from swift_dss.experiment.tables import print_caching

    ssd = {"measured_as": "ssd", "cpu_bound_phases": ["get"], "put_mbps": 1.0}
    summary = {"ssd@5%": ssd, "ssd@10%": ssd, "dss@10%": {"measured_as": "dss@10%"}}
    out = StringIO()
    print_caching(summary, Console(file=out, width=200))
    assert "set the pace): ssd get" in out.getvalue()


def test_the_report_says_how_rates_were_scaled() -> None:
    from dataclasses import asdict

    from swift_dss.experiment.caching_report import setup_lines
    from swift_dss.testbed.settings import TestbedSettings

    def lines(**settings: object) -> str:
        tb = TestbedSettings(dilation=4, **settings)  # type: ignore[arg-type]
        setup = {
            "scale": {"devices": 4, "replicas": 3},
            "testbed": {"kind": "netns", "dilation": 4, "settings": asdict(tb)},
        }
        return "\n".join(setup_lines(setup))

    assert "Byte rates" not in lines()
    assert "idle limit" not in lines()
    scaled = lines(rate_scale=0.1)
    assert "Byte rates x0.1" in scaled
    assert "measured bytes / 0.1" in scaled


def test_the_report_gives_the_clients_idle_limit_before_dilation() -> None:
    from dataclasses import asdict

    from swift_dss.experiment.caching_report import setup_lines
    from swift_dss.testbed.settings import TestbedSettings

    setup = {
        "scale": {"devices": 4, "replicas": 3, "timeout": 120.0},
        "testbed": {"kind": "netns", "dilation": 2, "settings": asdict(TestbedSettings())},
    }
    text = "\n".join(setup_lines(setup))
    assert "the client's idle limit per request 60 s (no byte moved)" in text
    assert "every link shaped with tc, a queue of 3 ms each; TCP cubic)" in text
    setup["testbed"]["settings"]["tcp_congestion"] = ""  # type: ignore[index]
    text = "\n".join(setup_lines(setup))
    assert "every link shaped with tc, a queue of 3 ms each; TCP the host's default)" in text
    setup["tcp"] = ["bbr"]
    assert "a queue of 3 ms each; TCP bbr (the host's default))" in "\n".join(setup_lines(setup))
    setup["testbed"]["settings"]["tcp_congestion"] = "cubic"  # type: ignore[index]
    assert "a queue of 3 ms each; TCP cubic)" in "\n".join(setup_lines(setup))


def test_the_report_counts_each_configurations_repeats() -> None:
    from swift_dss.experiment.caching_report import repeats_line

    assert "Repeats: 3 per configuration" in repeats_line(3, {"hdd": 3, "ssd": 3})
    # More repeats of some configurations, added to a kept run: each count is stated.
    mixed = repeats_line(6, {"hdd": 6, "ssd": 3, "dss@10%": 6})
    assert "Repeats: 6 of hdd, dss@10%; 3 of ssd." in mixed
    assert "per configuration" not in mixed
    assert "bootstrap" in repeats_line(1, {"hdd": 1})


def test_the_report_gives_a_cache_block_only_where_a_run_set_one() -> None:
    from swift_dss.experiment.caching_report import cache_block

    assert "cache block 512 B" in cache_block({"cache_block": 512})
    assert cache_block({"cache_block": None}) == cache_block({}) == ""


def test_the_device_table_gives_the_hdds_write_back_and_its_cost_per_mb() -> None:
    from swift_dss.experiment.caching_report import devices_table

    hdd = {"ops": 10, "bytes": 4e6, "busy_s": 9.0}
    entry = {
        "measured_as": "lru@10%",
        "devices_by_phase": {
            "put": {"hdd": {**hdd, "writeback_bytes": 2e6, "writeback_busy_s": 1.5}},
            "get": {"hdd": {**hdd, "writeback_bytes": 0, "writeback_busy_s": 0.0}},
        },
    }
    old = {"measured_as": "hdd", "devices_by_phase": {"put": {"hdd": hdd}}}
    rows = devices_table({"lru@10%": entry, "hdd@10%": {**old, "measured_as": "hdd"}})
    put, get, before = rows[2:]
    assert put.endswith("| 9.0 | 2 | 1.5 | 0.750 |")
    # Nothing written back: no cost per MB to give.
    assert get.endswith("| 0 | 0.0 | - |")
    # A run recorded before the tier counted its write-back says nothing of it.
    assert before.endswith("| 9.0 | - | - | - |")


def test_the_traffic_testbed_scales_rates_with_the_sizes(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from swift_dss.experiment.cli import experiment

    result = CliRunner().invoke(experiment, ["traffic", "--out", str(tmp_path), "--report-only"])
    assert result.exit_code == 0, result.output
    testbed = json.loads((tmp_path / "summary.json").read_text())["setup"]["testbed"]
    got = testbed["settings"]
    assert (got["rate_scale"], got["server_workers"], testbed["dilation"]) == (0.1, 8, 8)


@pytest.mark.parametrize(
    ("args", "rate_scale", "workers", "k"),
    [
        ([], 0.1, 8, 2),  # the size scale, the paper's workers
        (["--size-scale", "0.2"], 0.2, 8, 2),
        (["--rate-scale", "1", "--workers", "1", "--dilation", "4"], 1.0, 1, 4),
    ],
)
def test_the_caching_testbed_scales_rates_with_the_sizes(
    tmp_path: Path, args: list[str], rate_scale: float, workers: int, k: int
) -> None:
    from click.testing import CliRunner

    from swift_dss.experiment.cli import experiment

    base = ["caching", "--out", str(tmp_path), "--report-only", "--count-scale", "0.0005"]
    result = CliRunner().invoke(experiment, [*base, *args])
    assert result.exit_code == 0, result.output
    testbed = json.loads((tmp_path / "setup.json").read_text())["testbed"]
    got = testbed["settings"]
    assert (got["rate_scale"], got["server_workers"], testbed["dilation"]) == (
        rate_scale,
        workers,
        k,
    )


def test_reports_name_the_runs_that_counted_uploads_in_flight_as_sent() -> None:
    from swift_dss.experiment.summary import as_sent_lines
    from swift_dss.loadgen.stats import UPLOADS_AS_SENT, UPLOADS_BY_TIME

    assert as_sent_lines([UPLOADS_BY_TIME] * 3) == []
    [line] = as_sent_lines([UPLOADS_BY_TIME, UPLOADS_AS_SENT, None])
    assert line.startswith("- 2 of these 3 runs")
