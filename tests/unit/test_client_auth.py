"""The auth options of the dss commands: from flags and variables to swiftclient's arguments."""

from __future__ import annotations

import json
from typing import Any

import click
import pytest
from click.testing import CliRunner, Result

from swift_dss.client.auth import (
    DEFAULT_AUTH_URL,
    VARIABLES,
    AuthOptionError,
    SwiftAuth,
    auth_options,
    connection_kwargs,
    login,
)


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in VARIABLES:
        monkeypatch.delenv(var, raising=False)


@click.command()
@auth_options
def show(auth: SwiftAuth) -> None:
    try:
        kwargs = connection_kwargs(auth)
    except AuthOptionError as e:
        raise click.UsageError(str(e)) from None
    click.echo(json.dumps(kwargs))


def resolve(*args: str, **env: str) -> dict[str, Any]:
    r = invoke(*args, **env)
    assert r.exit_code == 0, r.output
    return json.loads(r.output)


def invoke(*args: str, **env: str) -> Result:
    return CliRunner().invoke(show, list(args), env=env)


def test_nothing_given_is_the_all_in_one() -> None:
    got = resolve()
    assert (got["authurl"], got["user"], got["key"], got["auth_version"]) == (
        DEFAULT_AUTH_URL,
        "test:tester",
        "testing",
        "1.0",
    )


def test_v1_from_st_variables() -> None:
    got = resolve(ST_AUTH="http://h:1/auth/v1.0", ST_USER="a:b", ST_KEY="k")
    assert (got["authurl"], got["user"], got["key"], got["auth_version"]) == (
        "http://h:1/auth/v1.0",
        "a:b",
        "k",
        "1.0",
    )


def test_v1_from_flags() -> None:
    got = resolve("-A", "http://h:2/auth/v1.0", "-U", "c:d", "-K", "s", "-V", "1")
    assert (got["authurl"], got["user"], got["key"], got["auth_version"]) == (
        "http://h:2/auth/v1.0",
        "c:d",
        "s",
        "1.0",
    )


def test_flags_beat_variables() -> None:
    got = resolve(
        "-U", "flag:user", "--os-region-name", "flagregion",
        ST_USER="env:user", ST_KEY="envkey", OS_REGION_NAME="envregion",
    )  # fmt: skip
    assert (got["user"], got["key"]) == ("flag:user", "envkey")
    assert got["os_options"]["region_name"] == "flagregion"


def test_v3_from_os_variables() -> None:
    got = resolve(
        OS_AUTH_URL="https://keystone:5000/v3",
        OS_USERNAME="alice",
        OS_PASSWORD="secret",
        OS_PROJECT_NAME="proj",
        OS_USER_DOMAIN_NAME="Default",
        OS_PROJECT_DOMAIN_ID="default",
        OS_REGION_NAME="RegionTwo",
        OS_INTERFACE="internal",
    )
    assert (got["authurl"], got["user"], got["key"], got["auth_version"]) == (
        "https://keystone:5000/v3",
        "alice",
        "secret",
        "3",
    )
    opts = got["os_options"]
    assert opts["project_name"] == "proj"
    assert opts["user_domain_name"] == "Default"
    assert opts["project_domain_id"] == "default"
    assert opts["region_name"] == "RegionTwo"
    assert opts["endpoint_type"] == "internal"


def test_v2_guessed_without_domains_and_v3_asked_for() -> None:
    env = {"OS_AUTH_URL": "http://k/v2.0", "OS_USERNAME": "u", "OS_PASSWORD": "p"}
    got = resolve(OS_TENANT_NAME="t", **env)
    assert got["auth_version"] == "2.0" and got["os_options"]["tenant_name"] == "t"
    assert resolve("-V", "3", **env)["auth_version"] == "3"
    assert resolve(OS_IDENTITY_API_VERSION="3", **env)["auth_version"] == "3"


def test_old_style_options_beat_os_ones_as_in_swift() -> None:
    got = resolve(
        "--os-auth-url", "http://k/v3", "--os-username", "u", "--os-password", "p",
        ST_AUTH="http://a/v1.0",
    )  # fmt: skip
    assert (got["authurl"], got["user"], got["key"]) == ("http://a/v1.0", "u", "p")


def test_token_and_storage_url_need_no_login() -> None:
    url = "http://127.0.0.1:9/v1/AUTH_x"
    got = resolve("--os-auth-token", "tk", "--os-storage-url", url)
    assert got["os_options"]["auth_token"] == "tk"
    assert got["os_options"]["object_storage_url"] == url
    # Nothing listens on port 9: the pair comes back without a request.
    assert login(SwiftAuth(os_auth_token="tk", os_storage_url=url)) == (url, "tk")


@pytest.mark.parametrize(
    ("args", "env", "words"),
    [
        (["-V", "4"], {}, ["--auth-version must be 1, 2 or 3", "'4'"]),
        (["-V", "one"], {}, ["--auth-version"]),
        ([], {"ST_AUTH_VERSION": "9"}, ["--auth-version", "'9'"]),
        (["-V", "3", "--os-username", "u", "--os-password", "p"], {}, ["needs an auth URL"]),
        (["--os-auth-url", "http://k/v3", "-V", "3", "--os-password", "p"], {}, ["a user"]),
        (["--os-auth-url", "http://k/v3", "--os-username", "u"], {}, ["needs a key"]),
    ],
)
def test_bad_options_get_one_line(args: list[str], env: dict[str, str], words: list[str]) -> None:
    r = invoke(*args, **env)
    assert r.exit_code == 2, r.output
    last = r.output.strip().splitlines()[-1]
    assert last.startswith("Error: ") and "Traceback" not in r.output
    for w in words:
        assert w in last, last


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["-A", "http://h:99999/auth/v1.0", "-U", "a:b", "-K", "k"],
            "invalid URL 'http://h:99999/auth/v1.0': port out of range 0-65535",
        ),
        (["-A", "http://[::1/auth", "-U", "a:b", "-K", "k"], "'http://[::1/auth': invalid IPv6"),
        (
            ["--os-auth-token", "t", "--os-storage-url", "http://h:abc/v1/A"],
            "invalid URL 'http://h:abc/v1/A': port 'abc' is not a number",
        ),
        (["--os-storage-url", "http://h:\u0663/v1/A"], "is not a number"),
        (["--os-auth-url", "ftp://k/v3", "-V", "3", "--os-username", "u"], "http or https"),
        (["-A", "http:///auth/v1.0"], "no host"),
    ],
)
def test_malformed_urls_are_refused_before_any_request(args: list[str], message: str) -> None:
    r = invoke(*args)
    assert r.exit_code == 2, r.output
    last = r.output.strip().splitlines()[-1]
    assert last.startswith("Error: invalid URL ") and message in last, r.output
    with pytest.raises(AuthOptionError, match="invalid URL"):
        login(SwiftAuth(auth="http://h:99999/auth/v1.0", user="a:b", key="k"))


def test_from_env_reads_what_the_flags_read() -> None:
    env = {
        "ST_AUTH": "http://h/auth/v1.0",
        "ST_USER": "a:b",
        "ST_KEY": "k",
        "OS_AUTH_VERSION": "1",
        "OS_ENDPOINT_TYPE": "admin",
        "OS_INTERFACE": "internal",
        "OS_PROJECT_ID": "pid",
        "SWIFTCLIENT_INSECURE": "true",
    }
    assert connection_kwargs(SwiftAuth.from_env(env)) == resolve(**env)
