"""`dss experiment compare`: caching runs side by side, and its refusals."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from swift_dss.experiment import compare
from swift_dss.experiment.cli import experiment


def summary(
    clients: int, ssd_ttfb: float, dss_ttfb: float, ratio: float, repeats: int = 1
) -> dict[str, Any]:
    """A caching summary.json as the experiment writes it, for two configurations."""
    ssd = {"key": "ssd", "measured_as": "ssd", "get_ttfb_ms": ssd_ttfb, "failure_rate": 0.0}
    dss = {
        "key": "dss@10%",
        "measured_as": "dss@10%",
        "get_ttfb_ms": dss_ttfb,
        "failure_rate": 0.0001,
        "repeats": [{}] * repeats,
        "paper": {"get_ttfb_ms": 89.0},
    }
    return {
        "experiment": "caching",
        "ssd@10%": ssd,
        "dss@10%": dss,
        "orders": [
            {"pair": "dss@10% < ssd@10%", "held": dss_ttfb < ssd_ttfb},
            {"pair": "lru@10% > lru@5%", "held": None},
        ],
        "headlines": [
            {"what": "dss / ssd", "measured": ratio, "paper": 0.85},
            {"what": "dss / lru", "measured": None, "paper": 5.0},
        ],
        "setup": {"scale": {"concurrency": clients}},
    }


def kept(tmp_path: Path, name: str, doc: Any) -> Path:
    d = tmp_path / name
    d.mkdir()
    (d / "summary.json").write_text(doc if isinstance(doc, str) else json.dumps(doc))
    return d


#: A caching summary with one configuration measured, to spoil one part of.
CACHING = {"experiment": "caching", "ssd@10%": summary(32, 1, 2, 1)["ssd@10%"]}


def binary(tmp_path: Path, data: bytes) -> Path:
    d = tmp_path / "x"
    d.mkdir()
    (d / "summary.json").write_bytes(data)
    return d


def test_each_run_is_a_column_with_its_orders_and_ratios(tmp_path: Path) -> None:
    a = kept(tmp_path, "c32", summary(32, 76.5, 85.8, 0.83))
    b = kept(tmp_path, "c128", summary(128, 340.8, 309.1, 0.62, repeats=3))
    runs = compare.load([a, b])
    assert [r.label for r in runs] == ["c32", "c128"]
    assert runs[0].orders_held() == (0, 1)
    assert runs[1].orders_held() == (1, 1)
    assert runs[0].ratios_near() == (1, 1)  # 0.83 is within 25% of 0.85, 0.62 is not
    assert runs[1].ratios_near() == (0, 1)
    lines = compare.markdown(runs)
    assert "| c32 | 32 | 1 | 0 of 1 | 1 of 1 |" in lines
    assert "| c128 | 128 | 3 | 1 of 1 | 0 of 1 |" in lines
    assert "| dss@10% | 85.8 | 309.1 | 89.0 |" in lines
    assert "| dss@10% | 0.01 | 0.01 | - |" in lines
    probe = summary(64, 1, 2, 0.8)
    probe["orders"], probe["headlines"] = [{"held": None}], []
    only = compare.load([kept(tmp_path, "probe", probe)])
    assert "| probe | 64 | 1 | - | - |" in compare.markdown(only)
    # The paper's value comes from whichever run measured the configuration.
    ssd_only = {k: v for k, v in summary(64, 1, 2, 0.8).items() if k != "dss@10%"}
    first = compare.load([kept(tmp_path, "ssd-only", ssd_only), a])
    assert compare.paper_value(first, "dss@10%", "get_ttfb_ms") == 89.0
    assert "| dss@10% | - | 85.8 | 89.0 |" in compare.markdown(first)


def test_the_cli_writes_the_table_the_numbers_and_the_figure(tmp_path: Path) -> None:
    a = kept(tmp_path, "a", summary(32, 76.5, 85.8, 0.83))
    b = kept(tmp_path, "b", summary(64, 106.3, 155.4, 0.87))
    out = tmp_path / "out"
    result = CliRunner().invoke(
        experiment, ["compare", str(a), str(b), "--label", "32", "--label", "64", "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert "| ssd | 76.5 | 106.3 | - |" in result.output
    doc = json.loads((out / "compare.json").read_text())
    assert doc["64"]["clients"] == 64
    assert doc["64"]["figures"]["dss@10%"]["get_ttfb_ms"] == 155.4
    assert (out / "compare.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize(
    ("make", "labels", "says"),
    [
        (lambda t: [t / "nothing"], [], "no summary.json"),
        (lambda t: [kept(t, "x", "{}") / "summary.json"], [], "Not a directory"),
        (lambda t: [kept(t, "x", "{not json")], [], "not JSON"),
        (lambda t: [kept(t, "x", {"experiment": "traffic"})], [], "not a caching"),
        (lambda t: [binary(t, b'{"experiment": "caching\xff"}')], [], "json: not UTF-8 text"),
        (lambda t: [kept(t, "x", {**CACHING, "orders": 5})], [], "json: orders is not a list"),
        (
            lambda t: [kept(t, "x", {**CACHING, "headlines": [{"paper": "a", "measured": 1}]})],
            [],
            "json: headlines is not a list of mappings with numbers",
        ),
        (lambda t: [kept(t, "x", {**CACHING, "setup": [1]})], [], "json: setup is not a mapping"),
        (
            lambda t: [kept(t, "x", {**CACHING, "dss@10%": {"get_mbps": 1}})],
            [],
            "json: dss@10% is not a measured configuration",
        ),
        # A table of dashes and empty plots would pass for a comparison.
        (lambda t: [kept(t, "x", {"experiment": "caching"})], [], "measured no configuration"),
        (lambda t: [kept(t, "x", summary(32, 1, 2, 1))], ["a", "b"], "2 labels for 1 runs"),
        (
            lambda t: [kept(t, "x", summary(32, 1, 2, 1)), kept(t, "y", summary(32, 1, 2, 1))],
            ["same", "same"],
            "different labels",
        ),
    ],
)
def test_what_is_not_a_caching_run_is_a_cli_error(
    tmp_path: Path, make: Any, labels: list[str], says: str
) -> None:
    args = ["compare", *map(str, make(tmp_path)), "--out", str(tmp_path / "out")]
    for label in labels:
        args += ["--label", label]
    result = CliRunner().invoke(experiment, args)
    assert result.exit_code == 2
    assert says in result.output
    assert not (tmp_path / "out").exists()
