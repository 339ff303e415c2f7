"""The paper's workload, shrunk, against the all-in-one cluster over Swift and S3: every
phase runs without failures and the classes arrive at the storage (dssio record log)."""

from __future__ import annotations

import collections
import dataclasses
import json
from pathlib import Path

import pytest

from swift_dss.loadgen import runner
from swift_dss.loadgen.protocols import Credentials
from swift_dss.loadgen.workload import load

from .helpers import recorded

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("protocol", ["swift", "s3"])
def test_paper_workload_classes_reach_the_storage(saio: object, protocol: str) -> None:
    w = load("paper").with_options(
        scale=0.0002, count_scale=0.002, containers=3, concurrency=8, seed=7 + len(protocol)
    )
    w = dataclasses.replace(w, container_prefix=f"lg{protocol}")
    creds = Credentials(saio.user, saio.key)  # the S3 access key and secret are the same
    with recorded(saio.record_log) as ios:
        result = runner.run(w, saio.proxy_url, protocol, creds, verify=True)
    rows = [r for r in result.recorder.rows() if r["type"] is None]
    assert [r["op"] for r in rows] == ["create_container", "put", "get", "delete"]
    for r in rows:
        assert r["failures"] == 0, r
    put_bytes: collections.Counter[int] = collections.Counter()
    for r in result.recorder.rows():
        if r["op"] == "put" and r["type"] is not None:
            put_bytes[r["class"]] += r["bytes"]
    written: collections.Counter[int] = collections.Counter()
    for io in ios:
        if io.op == "write" and io.cls:
            written[io.cls] += io.length
    # Every class sent is stored with exactly the bytes sent under it.
    assert set(put_bytes) >= {25, 26}
    assert written == put_bytes


def test_sweep_against_s3api_writes_the_study_tables(saio: object, tmp_path: Path) -> None:
    from click.testing import CliRunner

    from swift_dss.cli import main

    res = CliRunner().invoke(
        main,
        ["loadgen", "sweep", "--endpoint", saio.proxy_url, "--protocol", "s3",
         "--parallelism", "1,2", "--sizes", "1KiB,32KiB", "--repetitions", "1",
         "--budget", "64KiB", "--max-requests", "8", "--class", "25", "--out", str(tmp_path)],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    doc = json.loads((tmp_path / "results.json").read_text())
    cells = {(r["op"], r["size"], r["parallelism"]) for r in doc["rows"]}
    assert cells == {(op, s, p) for op in ("put", "get") for s in (1024, 32768) for p in (1, 2)}
    for r in doc["rows"]:
        assert r["failures"] == 0 and r["mbps"] > 0 and r["lat_mean_ms"] > 0
        assert {"op", "size", "parallelism", "mbps", "lat_mean_ms", "cpu_pct"} <= set(r)
    assert "**" in (tmp_path / "tables.md").read_text()
    assert (tmp_path / "sweep_put.png").exists() and (tmp_path / "sweep_get.png").exists()


AUTH_VARS = ("ST_AUTH", "ST_USER", "ST_KEY", "ST_AUTH_VERSION", "OS_AUTH_URL", "OS_USERNAME",
             "OS_PASSWORD", "OS_AUTH_TOKEN", "OS_STORAGE_URL", "AWS_ACCESS_KEY_ID",
             "AWS_SECRET_ACCESS_KEY", "AWS_ENDPOINT_URL", "DSS_PROTOCOL")  # fmt: skip


def _small(tmp_path: Path, prefix: str) -> str:
    path = tmp_path / f"{prefix}.json"
    path.write_text(json.dumps({
        "name": prefix, "seed": 5, "containers": 1, "concurrency": 2, "timeout": 30,
        "container_prefix": prefix,
        "types": [{"name": "Doc", "class": 25, "sizes": [[4096, 100]]}],
        "phases": [{"op": "create_containers"}, {"op": "put", "count": 6},
                   {"op": "get", "count": 6}],
    }))  # fmt: skip
    return str(path)


def _loadgen_run(tmp_path: Path, name: str, *args: str, **env: str) -> tuple[int, str, dict]:
    from click.testing import CliRunner

    from swift_dss.cli import main

    out = tmp_path / name
    argv = ["loadgen", "run", _small(tmp_path, name), "--quiet", "--no-plots", "--out", str(out)]
    unset: dict[str, str | None] = dict.fromkeys(AUTH_VARS)
    r = CliRunner().invoke(main, [*argv, *args], env={**unset, **env})
    doc = json.loads((out / "results.json").read_text()) if (out / "results.json").exists() else {}
    return r.exit_code, r.output, doc


def _failures(doc: dict) -> int:
    return sum(r["failures"] for r in doc["rows"] if r["type"] is None)


def test_run_credentials_from_the_environment(saio: object, tmp_path: Path) -> None:
    from swift_dss.client.auth import SwiftAuth, login

    st = {"ST_AUTH": saio.auth_url, "ST_USER": saio.user, "ST_KEY": saio.key}
    # Nothing listens at the endpoint: the login goes where ST_AUTH says.
    code, out, doc = _loadgen_run(tmp_path, "envst", "--endpoint", "http://127.0.0.1:9", **st)
    assert code == 0 and _failures(doc) == 0, out
    code, out, _ = _loadgen_run(tmp_path, "envbad", **{**st, "ST_KEY": "wrong"})
    assert code == 1 and "401" in out.strip().splitlines()[-1], out
    url, token = login(SwiftAuth(auth=saio.auth_url, user=saio.user, key=saio.key))
    code, out, doc = _loadgen_run(tmp_path, "envtok", OS_AUTH_TOKEN=token, OS_STORAGE_URL=url)
    assert code == 0 and _failures(doc) == 0, out
    # A token the cluster does not know: every request fails, the run says so, results stay.
    code, out, doc = _loadgen_run(tmp_path, "envstale", OS_AUTH_TOKEN="AUTH_tkstale",
                                  OS_STORAGE_URL=url)  # fmt: skip
    assert code == 1 and "13 of 13 requests failed" in out, out
    assert _failures(doc) == 13


def test_run_s3_keys_from_the_environment(saio: object, tmp_path: Path) -> None:
    aws = {"AWS_ACCESS_KEY_ID": saio.s3_access_key, "AWS_SECRET_ACCESS_KEY": saio.s3_secret_key,
           "AWS_ENDPOINT_URL": saio.proxy_url, "DSS_PROTOCOL": "s3"}  # fmt: skip
    code, out, doc = _loadgen_run(tmp_path, "envs3", **aws)
    assert code == 0 and _failures(doc) == 0, out
    code, out, doc = _loadgen_run(tmp_path, "envs3bad", **{**aws, "AWS_SECRET_ACCESS_KEY": "no"})
    assert code == 1 and "requests failed" in out, out
    assert _failures(doc) == 13
