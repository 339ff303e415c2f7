"""``dss loadgen`` options on the local server: exit status on failures, credentials from
flags and variables (the swift CLI's for Swift, AWS_* for S3), one default protocol."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner, Result

from swift_dss.cli import main
from swift_dss.loadgen.cli import loadgen
from swift_dss.loadgen.localserver import LocalServer

KIB = 1024
AUTH_VARS = ["ST_AUTH", "ST_USER", "ST_KEY", "ST_AUTH_VERSION", "OS_AUTH_VERSION",
             "OS_IDENTITY_API_VERSION", "OS_AUTH_URL", "OS_USERNAME", "OS_PASSWORD",
             "OS_AUTH_TOKEN", "OS_STORAGE_URL"]  # fmt: skip
S3_VARS = ["AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_ENDPOINT_URL", "AWS_REGION",
           "AWS_DEFAULT_REGION", "DSS_PROTOCOL"]  # fmt: skip


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in AUTH_VARS + S3_VARS:
        monkeypatch.delenv(var, raising=False)


def _workload(tmp_path: Path, puts: int = 12) -> str:
    path = tmp_path / "w.json"
    path.write_text(
        json.dumps(
            {
                "name": "t",
                "seed": 3,
                "containers": 1,
                "concurrency": 2,
                "timeout": 5,
                "types": [{"name": "Doc", "class": 25, "sizes": [[4 * KIB, 100]]}],
                "phases": [{"op": "create_containers"}, {"op": "put", "count": puts}],
            }
        )
    )
    return str(path)


def _run(tmp_path: Path, *args: str, **env: str) -> Result:
    out = tmp_path / "out"
    argv = ["loadgen", "run", _workload(tmp_path), "--quiet", "--no-plots", "--out", str(out)]
    return CliRunner().invoke(main, [*argv, *args], env=env)


def _one_line_error(r: Result, *words: str) -> None:
    assert r.exit_code != 0, r.output
    assert "Traceback" not in r.output
    last = r.output.strip().splitlines()[-1]
    assert last.startswith("Error: "), r.output
    for w in words:
        assert w in last, last


def test_failed_requests_fail_the_run_but_the_results_are_written(tmp_path: Path) -> None:
    with LocalServer(faults=["status:503@4"]) as srv:
        r = _run(tmp_path, "--endpoint", srv.url)
    _one_line_error(r, "3 of 13 requests failed", "--max-failures 0")
    doc = json.loads((tmp_path / "out" / "results.json").read_text())
    assert sum(row["failures"] for row in doc["rows"] if row["type"] is None) == 3


def test_max_failures_allows_some(tmp_path: Path) -> None:
    with LocalServer(faults=["status:503@4"]) as srv:
        assert _run(tmp_path, "--endpoint", srv.url, "--max-failures", "3").exit_code == 0
        r = _run(tmp_path, "--endpoint", srv.url, "--max-failures", "2")
    _one_line_error(r, "3 of 13 requests failed")


def test_a_clean_run_exits_zero(tmp_path: Path) -> None:
    with LocalServer() as srv:
        r = _run(tmp_path, "--endpoint", srv.url)
    assert r.exit_code == 0, r.output


def test_swift_login_from_st_variables(tmp_path: Path) -> None:
    with LocalServer() as srv:
        # Nothing listens at the endpoint: the login and the requests go where ST_AUTH says.
        r = _run(tmp_path, "--endpoint", "http://127.0.0.1:9", ST_AUTH=f"{srv.url}/auth/v1.0",
                 ST_USER="a:b", ST_KEY="k")  # fmt: skip
        paths = [e.path for e in srv.log]
    assert r.exit_code == 0, r.output
    assert paths[0] == "/auth/v1.0"
    assert len([p for p in paths if p.startswith("/v1/AUTH_test/")]) == 13


def test_token_and_storage_url_from_variables_skip_the_login(tmp_path: Path) -> None:
    with LocalServer() as srv:
        r = _run(tmp_path, OS_AUTH_TOKEN="tk", OS_STORAGE_URL=f"{srv.url}/v1/AUTH_env")
        paths = [e.path for e in srv.log]
    assert r.exit_code == 0, r.output
    assert not [p for p in paths if p.startswith("/auth")]
    assert len([p for p in paths if p.startswith("/v1/AUTH_env/")]) == 13


def test_s3_endpoint_from_aws_variable(tmp_path: Path) -> None:
    with LocalServer() as srv:
        r = _run(tmp_path, "--protocol", "s3", AWS_ENDPOINT_URL=srv.url)
        paths = [e.path for e in srv.log]
    assert r.exit_code == 0, r.output
    assert len([p for p in paths if p.count("/") == 2 and not p.startswith("/v1")]) == 12


def _echo(target: Any) -> None:
    c = target.creds
    swift = None if c.swift is None else [c.swift.auth, c.swift.user, c.swift.auth_version]
    click.echo(json.dumps([target.endpoint, target.protocol, c.user, c.key, c.region, swift]))


def _show(*args: str, **env: str) -> list:
    """What a command with the endpoint options receives as its target."""
    from swift_dss.loadgen.cli import endpoint_options

    r = CliRunner().invoke(click.command()(endpoint_options(_echo)), list(args), env=env)
    assert r.exit_code == 0, r.output
    return json.loads(r.output)


def test_s3_keys_from_aws_variables_and_flags_over_them() -> None:
    env = {"AWS_ACCESS_KEY_ID": "AK", "AWS_SECRET_ACCESS_KEY": "SK", "AWS_REGION": "eu-1",
           "AWS_ENDPOINT_URL": "http://s3.local:9000"}  # fmt: skip
    got = _show("--protocol", "s3", **env)
    assert got == ["http://s3.local:9000", "s3", "AK", "SK", "eu-1", None]
    got = _show("--protocol", "s3", "--access-key", "AK2", "--endpoint", "http://e:1", **env)
    assert got[:3] == ["http://e:1", "s3", "AK2"]
    assert _show("--protocol", "s3")[2:5] == ["test:tester", "testing", "us-east-1"]


def test_swift_takes_the_swift_cli_options() -> None:
    got = _show("-U", "x:y", "-V", "1", ST_AUTH="http://a/auth/v1.0", DSS_PROTOCOL="swift")
    assert got[1] == "swift" and got[5] == ["http://a/auth/v1.0", "x:y", "1"]
    assert _show(DSS_PROTOCOL="s3")[1] == "s3"


def test_one_default_protocol() -> None:
    defaults = {
        name: next(p.default for p in cmd.params if p.name == "protocol")
        for name, cmd in loadgen.commands.items()
        if any(p.name == "protocol" for p in cmd.params)
    }
    assert set(defaults) == {"run", "sweep", "cache-study"}
    assert set(defaults.values()) == {"swift"}


@pytest.mark.parametrize(
    ("args", "env", "words"),
    [
        (["--endpoint", "localhost:8080"], {}, ["--endpoint", "http(s)://"]),
        (["-V", "5"], {}, ["--auth-version must be 1, 2 or 3"]),
        (["--max-failures", "-1"], {}, ["--max-failures"]),
        ([], {"DSS_PROTOCOL": "ftp"}, ["--protocol", "ftp"]),
        (["--os-auth-url", "http://k/v3", "-V", "3"], {}, ["needs a user"]),
        (["--endpoint", "http://h:abc"], {}, ["'--endpoint'", "Port could not be cast"]),
        (["--endpoint", "http://h:65536"], {}, ["'--endpoint'", "Port out of range"]),
        (["--endpoint", "http://[::1"], {}, ["'--endpoint'", "Invalid IPv6 URL"]),
        # Not the all-in-one's proxy, which an empty value once stood for.
        (["--endpoint", ""], {}, ["'--endpoint'", "'' is not an http(s)://HOST[:PORT] URL"]),
    ],
)
def test_bad_values_get_one_line(
    tmp_path: Path, args: list[str], env: dict[str, str], words: list[str]
) -> None:
    # Nothing listens on port 9: each is refused before any request.
    _one_line_error(_run(tmp_path, "--endpoint", "http://127.0.0.1:9", *args, **env), *words)


def test_a_refused_login_is_one_line(tmp_path: Path) -> None:
    r = _run(tmp_path, "-A", "http://127.0.0.1:9/auth/v1.0")
    _one_line_error(r, "login at http://127.0.0.1:9/auth/v1.0")


def test_sweep_fails_on_failed_requests_but_writes_results(tmp_path: Path) -> None:
    argv = ["loadgen", "sweep", "--parallelism", "1", "--sizes", "1KiB", "--repetitions", "1",
            "--warmup", "0", "--budget", "8KiB", "--time-cap", "5",
            "--out", str(tmp_path)]  # fmt: skip
    with LocalServer(faults=["status:503@3"]) as srv:
        r = CliRunner().invoke(main, [*argv, "--endpoint", srv.url])
        ok = CliRunner().invoke(main, [*argv, "--endpoint", srv.url, "--max-failures", "100"])
    _one_line_error(r, "measured requests failed", "--max-failures 0")
    doc = json.loads((tmp_path / "results.json").read_text())
    assert sum(row["failures"] for row in doc["rows"]) > 0
    assert ok.exit_code == 0, ok.output


def test_a_workload_that_is_no_text_file_is_one_line(tmp_path: Path) -> None:
    binary = tmp_path / "w.yaml"
    binary.write_bytes(b"\xff\xfe\x00name: t\n")
    for workload, says in ((tmp_path, "a directory"), (binary, "not UTF-8 text")):
        argv = ["loadgen", "run", str(workload), "--endpoint", "http://127.0.0.1:9", "--out",
                str(tmp_path / "out")]  # fmt: skip
        _one_line_error(CliRunner().invoke(main, argv), f"{workload}: {says}")


BIG = "9" * 400


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["sweep", "--container", "a/b"], ["'--container'", "'a/b' is not a container name"]),
        (["sweep", "--container", ""], ["'--container'", "'' is not a container name"]),
        (["sweep", "--sizes", f"1KiB,{BIG}"], ["size '99999999999999999999\u2026' is too large"]),
        (["sweep", "--budget", f"{BIG}KiB"], ["size '99999999999999999999\u2026' is too large"]),
        (["cache-study", "--chunk-sizes", BIG], ["is too large"]),
        (["cache-study", "--cache", BIG], ["is too large"]),
        (["cache-study", "--max-file-size", BIG], ["is too large"]),
    ],
)
def test_bad_sweep_and_study_options_are_one_line_before_any_request(
    tmp_path: Path, args: list[str], words: list[str]
) -> None:
    argv = ["loadgen", *args, "--endpoint", "http://127.0.0.1:9", "--out", str(tmp_path)]
    _one_line_error(CliRunner().invoke(main, argv), *words)
    assert not (tmp_path / "results.json").exists()
