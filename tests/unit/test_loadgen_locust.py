"""The workload-driven locustfile, headless against the local server, with CSV output."""

from __future__ import annotations

import csv
import os
import subprocess
import sys
from pathlib import Path

from swift_dss.loadgen.localserver import LocalServer

LOCUSTFILE = Path(__file__).parents[2] / "swift_dss" / "loadgen" / "locustfile.py"


def _locust(tmp_path: Path, url: str, **env: str) -> subprocess.CompletedProcess[str]:
    # Bounded by requests, not time, so a slow machine runs the same test, only later;
    # -t is a cap that a healthy run never reaches.
    return subprocess.run(
        [sys.executable, "-m", "locust", "-f", str(LOCUSTFILE), "--headless", "-u", "2",
         "-r", "2", "-t", "90s", "--host", url, "--csv", str(tmp_path / "run"),
         "--only-summary", "--stop-timeout", "2"],
        env={**os.environ, "DSS_WORKLOAD": "paper", "DSS_SCALE": "0.0001", **env},
        cwd=tmp_path, timeout=150, check=False, capture_output=True, text=True,
    )  # fmt: skip


def test_locust_headless_names_requests_by_type_and_class(tmp_path: Path) -> None:
    with LocalServer() as srv:
        proc = _locust(tmp_path, srv.url, DSS_REQUESTS="60")
        puts = [r for r in srv.log if r.method == "PUT" and r.path.count("/") >= 4]
        objects = [r for r in srv.log if r.path.count("/") >= 4]
    with open(tmp_path / "run_stats.csv") as f:
        names = {row["Name"]: row for row in csv.DictReader(f)}
    assert "put Files c25" in names and int(names["put Files c25"]["Request Count"]) > 0, (
        proc.stderr[-2000:]
    )
    assert all(int(r["Failure Count"]) == 0 for r in names.values())
    assert {"25", "26"} <= {r.cls for r in puts}
    # The run stopped at the request bound, well before the time cap.
    assert len(objects) == 60


def test_locust_refuses_a_request_bound_that_is_not_a_count(tmp_path: Path) -> None:
    proc = _locust(tmp_path, "http://127.0.0.1:9", DSS_REQUESTS="ten")
    assert proc.returncode != 0
    assert "DSS_REQUESTS must be a positive whole number" in proc.stderr


def test_locust_takes_a_token_and_storage_url_from_the_swift_variables(tmp_path: Path) -> None:
    with LocalServer() as srv:
        env = {"OS_AUTH_TOKEN": "tk", "OS_STORAGE_URL": f"{srv.url}/v1/AUTH_env"}
        # The host is not the store: requests go where the storage URL says, with no login.
        proc = _locust(tmp_path, "http://127.0.0.1:9", DSS_REQUESTS="20", **env)
        paths = [r.path for r in srv.log]
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert not [p for p in paths if p.startswith("/auth")]
    assert len([p for p in paths if p.startswith("/v1/AUTH_env/") and p.count("/") >= 4]) == 20


def test_locust_refuses_an_unknown_protocol(tmp_path: Path) -> None:
    proc = _locust(tmp_path, "http://127.0.0.1:9", DSS_PROTOCOL="ftp")
    assert proc.returncode != 0
    assert "DSS_PROTOCOL must be swift or s3, not 'ftp'" in proc.stderr


def test_locust_ends_a_run_whose_login_fails(tmp_path: Path) -> None:
    # Nothing listens on port 9: the login is refused, the run ends at once, failed.
    proc = _locust(tmp_path, "http://127.0.0.1:9", DSS_REQUESTS="20")
    assert proc.returncode == 1
    assert "login failed: login at http://127.0.0.1:9/auth/v1.0" in proc.stderr
