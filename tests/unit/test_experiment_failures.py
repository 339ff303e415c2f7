"""Failed requests by cause, read from proxy log lines in Swift's own format."""

from __future__ import annotations

from pathlib import Path

from swift_dss.experiment import failures

AGENT = "PycURL/7.49.0%20libcurl/8.23.0"


def access(method: str, status: int, txn: str, source: str = "-") -> str:
    return (
        f"proxy-server: 198.18.0.3 198.18.0.3 27/Nov/2026/10/08/01 {method} "
        f"/v1/AUTH_test/paper-005/files-000000901 HTTP/1.0 {status} - {AGENT} "
        f"AUTH_tk757ab97b9... - 118 - {txn} - 0.0700 {source} - "
        "1795774081.417370796 1795774081.487353086 0 test:tester"
    )


def error(message: str, txn: str) -> str:
    return f"proxy-server: {message} (txn: {txn}) (client_ip: 198.18.0.3)"


FINAL = "ERROR with Object server 198.18.0.11:6200/d1 re: Trying to get final status of PUT"
CONNECT = (
    "ERROR with Object server 198.18.0.11:6200/d1 re: Expect: 100-continue on "
    "/AUTH_test/paper-017/picture-000000288: ConnectionTimeout (1.0s)"
)


def test_each_failed_request_counts_once_under_its_most_specific_cause() -> None:
    lines = [
        error(CONNECT, "txa"),
        error(FINAL + " to /v1/AUTH_test/paper-021/files-0000: Timeout (20.0s)", "txa"),
        access("PUT", 503, "txa"),
        error("Object PUT returning 503, 1/2 required connections", "txb"),
        access("PUT", 503, "txb"),
        error("Object GET returning 503 for []", "txc"),
        access("GET", 503, "txc"),
        error("Object GET returning 503 for []", "txd"),
        access("GET", 503, "txd"),
        access("GET", 500, "txe"),
    ]
    assert failures.causes(lines) == {
        "GET": {"error-limited": 2, "other": 1},
        "PUT": {"final status timeout": 1, "error-limited": 1},
    }


def test_successes_subrequests_and_client_errors_are_not_failures() -> None:
    lines = [
        error(FINAL, "txa"),
        access("PUT", 201, "txa"),  # one replica timed out, the quorum answered
        access("HEAD", 503, "txb", source="RL"),  # the proxy's own subrequest
        access("GET", 404, "txc"),
        "proxy-server: Node will be error limited for 120.00s: 198.18.0.13:6200/d1",
        "not a proxy line at all",
    ]
    assert failures.causes(lines) == {}


def test_a_cluster_directory_is_searched_for_its_proxy_logs(tmp_path: Path) -> None:
    assert failures.from_cluster(tmp_path) == {}
    log = tmp_path / "proxy" / "log" / "proxy-server.log"
    log.parent.mkdir(parents=True)
    log.write_text("\n".join([error(CONNECT, "txa"), access("PUT", 503, "txa")]) + "\n")
    assert failures.from_cluster(tmp_path) == {"PUT": {"connect timeout": 1}}


def test_repeats_are_summed_and_the_table_names_every_configuration() -> None:
    merged = failures.merged(
        [{"PUT": {"final status timeout": 2}}, {"PUT": {"final status timeout": 1}, "GET": {}}]
    )
    assert merged == {"GET": {}, "PUT": {"final status timeout": 3}}
    rows = failures.table([("lru@10%", merged), ("ssd", {})])
    assert rows[2] == "| lru@10% | final status timeout 3 | - |"
    assert rows[3] == "| ssd | - | - |"
    assert failures.table([("ssd", {}), ("hdd", {})]) == []
