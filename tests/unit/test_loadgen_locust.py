"""The workload-driven locustfile, headless against the local server, with CSV output."""

from __future__ import annotations

import csv
import os
import subprocess
import sys
from pathlib import Path

from swift_dss.loadgen.localserver import LocalServer

LOCUSTFILE = Path(__file__).parents[2] / "loadgen" / "locustfile.py"


def test_locust_headless_names_requests_by_type_and_class(tmp_path: Path) -> None:
    env = {**os.environ, "DSS_WORKLOAD": "paper", "DSS_SCALE": "0.0001"}
    with LocalServer() as srv:
        subprocess.run(
            [sys.executable, "-m", "locust", "-f", str(LOCUSTFILE), "--headless", "-u", "2",
             "-r", "2", "-t", "2s", "--host", srv.url, "--csv", str(tmp_path / "run"),
             "--only-summary", "--stop-timeout", "2"],
            env=env, cwd=tmp_path, timeout=60, check=False, capture_output=True,
        )  # fmt: skip
        classes = {r.cls for r in srv.log if r.method == "PUT" and r.path.count("/") >= 4}
    with open(tmp_path / "run_stats.csv") as f:
        names = {row["Name"]: row for row in csv.DictReader(f)}
    assert "put Files c25" in names and int(names["put Files c25"]["Request Count"]) > 0
    assert all(int(r["Failure Count"]) == 0 for r in names.values())
    assert "25" in classes and "26" in classes
