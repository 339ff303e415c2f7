"""The servers' own times for the traffic streams' requests, from Swift's access lines."""

from __future__ import annotations

from pathlib import Path

import pytest

from swift_dss.experiment import server_times

PROXY = (
    "proxy-server: 198.18.0.3 198.18.0.3 27/Nov/2026/06/53/44 PUT "
    "/v1/AUTH_test/traffic-files-016/files-000000002 HTTP/1.0 201 - PycURL/7.49.0 "
    "AUTH_tk5a653161a... 492 - - txc1008ad2cab8414284bf9-006b0928f5 - {t} - - "
    "1795762421.75859308 1795762424.04889 0"
)
#: The proxy's own subrequest (a HEAD of the container on the client's behalf) is not a
#: client's request: its source field names the middleware.
SUBREQUEST = PROXY.replace(" - {t} - - ", " - {t} AUTO - ").replace("PUT /v1", "HEAD /v1")
CONTAINER_PATH_ONLY = PROXY.replace("/traffic-files-016/files-000000002", "/traffic-files-016")
OBJECT = (
    'object-server: 198.18.0.2 - - [27/Nov/2026:06:53:44 +0000] "PUT '
    '/d1/42/AUTH_test/traffic-{s}-005/{s}-000000024" 201 - "PUT '
    'http://198.18.0.2:16817/v1/AUTH_test/traffic-{s}-005/{s}-000000024" '
    '"tx9e96ae621bee4b08a9b23-006b0928f5" "proxy-server 26243" {t} "-" 26155 0'
)
CONTAINER = (
    'container-server: 198.18.0.14 - - [27/Nov/2026:06:53:43 +0000] "PUT '
    '/d1/85/AUTH_test/traffic-files-011/files-000000015" 201 - "PUT '
    'http://198.18.0.2:16817/d1/61/AUTH_test/traffic-files-011/files-000000015" '
    '"tx6f98e915e8e64cf381a3c-006b0928f5" "object-server 26208" {t} "-" 26142 0'
)


@pytest.mark.parametrize(
    ("path", "account_at", "stream"),
    [
        ("/v1/AUTH_test/traffic-music-003/music-000000001", 1, "music"),
        ("/d1/42/AUTH_test/traffic-files-005/x", 2, "files"),
        ("/v1/AUTH_test/traffic-files-005", 1, None),  # the container itself
        ("/v1/AUTH_test/other-005/x", 1, None),
        ("/v1/AUTH_test/traffic-files-005/x?multipart-manifest=get", 1, "files"),
    ],
)
def test_the_stream_is_its_containers(path: str, account_at: int, stream: str | None) -> None:
    assert server_times.stream_of(path, account_at) == stream


def test_proxy_times_count_the_clients_object_requests_only() -> None:
    lines = [
        PROXY.format(t="2.2903"),
        PROXY.format(t="0.5000"),
        SUBREQUEST.format(t="9.0"),
        CONTAINER_PATH_ONLY.format(t="9.0"),
        "proxy-server: ERROR with Object server 198.18.0.5:6200/d1 re: Trying to get final status",
    ]
    assert server_times.proxy_times(lines) == {("PUT", "files"): [2.2903, 0.5]}


def test_storage_server_times_per_stream() -> None:
    lines = [
        OBJECT.format(s="files", t="1.8946"),
        OBJECT.format(s="video", t="4.0"),
        CONTAINER.format(t="0.0335"),
        "object-server: Begin object audit",
    ]
    assert server_times.server_times(lines) == {
        ("PUT", "files"): [1.8946, 0.0335],
        ("PUT", "video"): [4.0],
    }


def test_figures_are_in_emulated_time() -> None:
    # 25, 50, 75, 100 and 500 ms: 100 ms itself is not under 100 ms.
    f = server_times.figures([0.1, 0.2, 0.3, 0.4, 2.0], dilation=4)
    assert f == {"n": 5, "mean_ms": 150.0, "p50_ms": 75.0, "p90_ms": 500.0, "under_100ms": 0.6}


def test_from_cluster_reads_every_nodes_logs_and_the_table_has_a_row_per_run(
    tmp_path: Path,
) -> None:
    for node, t in (("s1", "0.4"), ("s2", "0.8")):
        log = tmp_path / "nodes" / node / "log"
        log.mkdir(parents=True)
        (log / "object-server.log").write_text(OBJECT.format(s="files", t=t) + "\n")
        (log / "container-server.log").write_text(CONTAINER.format(t="0.04") + "\n")
    (tmp_path / "proxy" / "log").mkdir(parents=True)
    (tmp_path / "proxy" / "log" / "proxy-server.log").write_text(PROXY.format(t="1.2") + "\n")
    times = server_times.from_cluster(tmp_path, dilation=2)
    assert times["object"]["files"]["PUT"]["n"] == 2
    assert times["object"]["files"]["PUT"]["mean_ms"] == 300.0
    assert times["proxy"]["files"]["PUT"]["p50_ms"] == 600.0
    assert times["container"]["files"]["PUT"]["under_100ms"] == 1.0
    rows = server_times.table([("+Files", times), ("none", {})], "files", "PUT")
    assert rows[2] == "| +Files | 600 / 600 / 0% | 300 / 400 / 0% | 20 / 20 / 100% |"
    assert len(rows) == 3  # a run without times has no row
    assert server_times.table([("none", {})], "files", "PUT") == []
