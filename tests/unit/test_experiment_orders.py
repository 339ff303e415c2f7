"""The paper's orders and traffic observations, checked on summaries built by hand."""

from __future__ import annotations

from swift_dss.experiment import orders
from swift_dss.experiment.traffic_report import trends


def test_orders_hold_fail_or_are_unknown() -> None:
    summary = {
        "ssd@10%": {"put_mbps": 90, "get_mbps": 300, "get_ttfb_ms": 200},
        "dss@10%": {"put_mbps": 80, "get_mbps": 250, "get_ttfb_ms": 90},
        "dss@5%": {"put_mbps": 70},
        "hdd@10%": {"put_mbps": 50, "get_mbps": 100},
        "lru@10%": {"put_mbps": 60, "get_mbps": 100, "get_ttfb_ms": 500},
    }
    rows = {(r["what"], r["pair"]): r for r in orders.check(summary)}
    assert rows[("PUT bandwidth", "ssd@10% > dss@10%")]["held"] is True
    assert rows[("PUT bandwidth", "hdd@10% > lru@10%")]["held"] is False
    assert rows[("PUT bandwidth", "hdd@10% > lru@5%")]["held"] is None
    assert rows[("GET bandwidth", "hdd@10% >= lru@10%")]["held"] is True  # equal counts
    assert rows[("GET latency", "dss@10% < ssd@10%")]["held"] is True
    assert rows[("GET latency", "ssd@10% < lru@10%")]["held"] is True


def run(name: str, put: float, files_under: float) -> dict:
    return {
        "name": name,
        "put_mbps": put,
        "get_mbps": put,
        "streams": {"Files": {"put_under_100ms": files_under, "get_under_100ms": files_under}},
    }


def test_traffic_trends_say_whether_the_paper_held() -> None:
    runs = [run("none", 40, 0.2), run("+Files", 50, 0.6), run("+Video", 45, 0.7)]
    text = "\n".join(trends({"runs": runs}))
    assert "45.0 MB/s against 50.0 in +Files: falls" in text
    assert "20.0% (none) -> 60.0% (+Files): rises" in text
    runs = [run("none", 40, 0.5), run("+Files", 50, 0.4), run("+Video", 55, 0.7)]
    text = "\n".join(trends({"runs": runs}))
    assert "**does not fall**" in text and "**does not rise**" in text
    # A fall within run-to-run noise is no fall.
    runs = [run("+Music", 466.93, 0.5), run("+Video", 466.87, 0.5)]
    text = "\n".join(trends({"runs": runs}))
    assert "466.9 MB/s against 466.9 in +Music: level (within 1%), **does not fall**" in text
    # A rise of a few requests in a thousand shows as one, not as "0% -> 0%".
    runs = [run("none", 40, 0.0), run("+Files", 50, 0.003)]
    assert "0.0% (none) -> 0.3% (+Files): rises" in "\n".join(trends({"runs": runs}))


def test_cache_content_statements_of_fig8() -> None:
    summary = {
        "dss@10%": {"content_shares": {"FS metadata": 0.5, "Files": 0.2, "large (>10 MiB)": 0.1}},
        "lru@10%": {"content_shares": {"FS metadata": 0.2, "large (>10 MiB)": 0.6}},
        "dss@5%": {"content_shares": {"Files": 0.1, "large (>10 MiB)": 0.7}},
    }
    rows = {r["pair"]: r["held"] for r in orders.content(summary)}
    assert rows == {
        "large objects: dss@10% < lru@10%": True,
        "dss@10%: metadata + Files > large objects": True,
        "dss@5%: metadata + Files > large objects": False,
    }
