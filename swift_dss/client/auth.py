"""Swift authentication options as the ``swift`` CLI takes them, for every dss command.

The options and their environment variables are those of python-swiftclient's shell:
``-A/-U/-K/-V`` (``ST_AUTH``, ``ST_USER``, ``ST_KEY``, ``ST_AUTH_VERSION``) for tempauth v1,
``--os-*`` (``OS_*``) for Keystone v2/v3, and ``--os-auth-token`` with ``--os-storage-url``
for a client that already holds a token. A flag beats its variable; the old-style ``-A/-U/-K``
beat the ``--os-*`` ones; the version is guessed from the options given when ``-V`` is not,
all as ``swift`` does it (swiftclient.service.process_options does the work here too). One
difference: with nothing given at all, the all-in-one cluster's tempauth account is used
rather than an error.
"""

from __future__ import annotations

import dataclasses
import functools
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import click

DEFAULT_AUTH_URL = "http://127.0.0.1:8080/auth/v1.0"
DEFAULT_USER = "test:tester"
DEFAULT_KEY = "testing"

#: What ``-V`` accepts, and the spelling swiftclient wants.
VERSIONS = {"1": "1.0", "1.0": "1.0", "2": "2.0", "2.0": "2.0", "3": "3", "3.0": "3"}

#: Options that ask for Keystone when given without -A/-U/-K.
_KEYSTONE = (
    "os_auth_url", "os_username", "os_password", "os_user_id", "os_user_domain_name",
    "os_user_domain_id", "os_project_name", "os_project_id", "os_project_domain_name",
    "os_project_domain_id", "os_tenant_name", "os_tenant_id",
)  # fmt: skip


class AuthOptionError(ValueError):
    """Auth options that cannot make a login."""


@dataclass(frozen=True)
class SwiftAuth:
    """The values of the auth options (None: not given), named as in swiftclient's shell."""

    auth: str | None = None
    user: str | None = None
    key: str | None = None
    auth_version: str | None = None
    os_username: str | None = None
    os_password: str | None = None
    os_user_id: str | None = None
    os_user_domain_name: str | None = None
    os_user_domain_id: str | None = None
    os_project_name: str | None = None
    os_project_id: str | None = None
    os_project_domain_name: str | None = None
    os_project_domain_id: str | None = None
    os_tenant_name: str | None = None
    os_tenant_id: str | None = None
    os_auth_url: str | None = None
    os_region_name: str | None = None
    os_auth_token: str | None = None
    os_storage_url: str | None = None
    os_endpoint_type: str | None = None
    os_service_type: str | None = None
    os_cacert: str | None = None
    insecure: bool = False

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> SwiftAuth:
        """The options as a command given no flags would see them."""
        env = os.environ if env is None else env
        values: dict[str, Any] = {}
        for opt in _OPTIONS:
            for var in opt.envvars:
                if env.get(var):
                    values[opt.dest] = env[var]
                    break
        insecure = env.get(INSECURE_VARIABLE, "").lower() in ("1", "true", "yes", "on")
        return cls(**values, insecure=insecure)


@dataclass(frozen=True)
class _Option:
    dest: str
    flags: tuple[str, ...]
    envvars: tuple[str, ...]
    help: str


_OPTIONS = (
    _Option("auth", ("-A", "--auth"), ("ST_AUTH",), "URL for obtaining an auth token."),
    _Option("user", ("-U", "--user"), ("ST_USER",), "User name for obtaining an auth token."),
    _Option("key", ("-K", "--key"), ("ST_KEY",), "Key for obtaining an auth token."),
    _Option(
        "auth_version",
        ("-V", "--auth-version", "--os-identity-api-version"),
        ("ST_AUTH_VERSION", "OS_AUTH_VERSION", "OS_IDENTITY_API_VERSION"),
        "Auth version: 1 (tempauth), 2 or 3 (Keystone); guessed from the options if not given.",
    ),
    _Option("os_username", ("--os-username",), ("OS_USERNAME",), "Keystone user name."),
    _Option("os_password", ("--os-password",), ("OS_PASSWORD",), "Keystone password."),
    _Option("os_user_id", ("--os-user-id",), ("OS_USER_ID",), "Keystone user ID."),
    _Option(
        "os_user_domain_name",
        ("--os-user-domain-name",),
        ("OS_USER_DOMAIN_NAME",),
        "User domain name (v3).",
    ),
    _Option(
        "os_user_domain_id",
        ("--os-user-domain-id",),
        ("OS_USER_DOMAIN_ID",),
        "User domain ID (v3).",
    ),
    _Option("os_project_name", ("--os-project-name",), ("OS_PROJECT_NAME",), "Project name."),
    _Option("os_project_id", ("--os-project-id",), ("OS_PROJECT_ID",), "Project ID."),
    _Option(
        "os_project_domain_name",
        ("--os-project-domain-name",),
        ("OS_PROJECT_DOMAIN_NAME",),
        "Project domain name (v3).",
    ),
    _Option(
        "os_project_domain_id",
        ("--os-project-domain-id",),
        ("OS_PROJECT_DOMAIN_ID",),
        "Project domain ID (v3).",
    ),
    _Option("os_tenant_name", ("--os-tenant-name",), ("OS_TENANT_NAME",), "Tenant name (v2)."),
    _Option("os_tenant_id", ("--os-tenant-id",), ("OS_TENANT_ID",), "Tenant ID (v2)."),
    _Option("os_auth_url", ("--os-auth-url",), ("OS_AUTH_URL",), "Keystone auth URL."),
    _Option("os_region_name", ("--os-region-name",), ("OS_REGION_NAME",), "Region name."),
    _Option(
        "os_auth_token",
        ("--os-auth-token",),
        ("OS_AUTH_TOKEN",),
        "A token; with --os-storage-url no login is made.",
    ),
    _Option(
        "os_storage_url",
        ("--os-storage-url",),
        ("OS_STORAGE_URL",),
        "Storage URL, instead of the one the login returns.",
    ),
    _Option(
        "os_endpoint_type",
        ("--os-endpoint-type", "--os-interface"),
        ("OS_ENDPOINT_TYPE", "OS_INTERFACE"),
        "Catalog endpoint: public, internal or admin.",
    ),
    _Option("os_service_type", ("--os-service-type",), ("OS_SERVICE_TYPE",), "Catalog service."),
    _Option("os_cacert", ("--os-cacert",), ("OS_CACERT",), "CA bundle for https."),
)

INSECURE_VARIABLE = "SWIFTCLIENT_INSECURE"
#: Every variable the options read.
VARIABLES = (*(v for o in _OPTIONS for v in o.envvars), INSECURE_VARIABLE)


def auth_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """Add the auth options to a click command, which receives them as one ``auth``."""

    @functools.wraps(f)
    def with_auth(*args: Any, **kwargs: Any) -> Any:
        values = {o.dest: kwargs.pop(o.dest) for o in _OPTIONS}
        values["insecure"] = kwargs.pop("insecure")
        return f(*args, auth=SwiftAuth(**values), **kwargs)

    # functools.wraps shares f's __click_params__, so options declared below this decorator
    # stay attached to the wrapper click sees.
    with_auth = click.option(
        "--insecure", is_flag=True, envvar=INSECURE_VARIABLE, show_envvar=True,
        help="Do not verify the server's certificate.",
    )(with_auth)  # fmt: skip
    for opt in reversed(_OPTIONS):
        with_auth = click.option(
            *opt.flags,
            opt.dest,
            envvar=list(opt.envvars),
            show_envvar=True,
            help=opt.help,
        )(with_auth)
    return with_auth


def _version(text: str | None) -> str:
    if text is None:
        return "1.0"
    try:
        return VERSIONS[text.strip().lower().removeprefix("v")]
    except KeyError:
        raise AuthOptionError(f"--auth-version must be 1, 2 or 3, not {text!r}") from None


def process(auth: SwiftAuth, default_auth_url: str = DEFAULT_AUTH_URL) -> dict[str, Any]:
    """swiftclient's options dict for ``auth``, after its own process_options."""
    from swiftclient.service import process_options

    opts: dict[str, Any] = dataclasses.asdict(auth)
    opts["auth_version"] = _version(auth.auth_version)
    preauth = bool(auth.os_auth_token and auth.os_storage_url)
    keystone = opts["auth_version"] != "1.0" or any(opts[k] for k in _KEYSTONE)
    if not preauth and not keystone:
        # Nothing asks for Keystone: tempauth, each missing part from the all-in-one.
        opts["auth"] = opts["auth"] or default_auth_url
        opts["user"] = opts["user"] or DEFAULT_USER
        opts["key"] = opts["key"] or DEFAULT_KEY
    # Application credentials are not offered; process_options still reads their keys.
    for name in (
        "os_auth_type",
        "os_application_credential_id",
        "os_application_credential_secret",
    ):
        opts[name] = None
    process_options(opts)
    for url in (opts["auth"], opts["os_storage_url"]):
        if url and (reason := url_error(url)):
            raise AuthOptionError(f"invalid URL {url!r}: {reason}")
    if not preauth:
        _check(opts)
    return opts


def url_error(url: str) -> str | None:
    """Why URL cannot be an auth or storage URL, if it cannot."""
    try:
        parts = urlsplit(url)
    except ValueError as e:
        text = str(e)  # urllib's wording, e.g. "Invalid IPv6 URL"
        return text[:1].lower() + text[1:]
    if parts.scheme not in ("http", "https"):
        return "the scheme must be http or https"
    if not parts.hostname:
        return "no host"
    # urllib would take any Unicode digits as the port, and raise only once it is read.
    host_port = parts.netloc.rpartition("@")[2].rpartition("]")[2]
    _, colon, port = host_port.rpartition(":")
    if colon and port:
        if not (port.isascii() and port.isdigit()):
            return f"port {port!r} is not a number"
        if int(port) > 65535:
            return "port out of range 0-65535"
    return None


def _check(opts: dict[str, Any]) -> None:
    """What ``swift`` refuses before it tries to log in, on one line each."""
    version = opts["auth_version"]
    if not opts["auth"]:
        raise AuthOptionError(
            f"auth version {version} needs an auth URL (-A/ST_AUTH or --os-auth-url/OS_AUTH_URL)"
        )
    if not (opts["user"] or (version == "3" and opts["os_user_id"])):
        raise AuthOptionError(
            f"auth version {version} needs a user (-U/ST_USER or --os-username/OS_USERNAME)"
        )
    if not opts["key"]:
        raise AuthOptionError(
            f"auth version {version} needs a key (-K/ST_KEY or --os-password/OS_PASSWORD)"
        )


def connection_kwargs(auth: SwiftAuth, default_auth_url: str = DEFAULT_AUTH_URL) -> dict[str, Any]:
    """Keyword arguments for ``swiftclient.client.Connection`` from the auth options."""
    opts = process(auth, default_auth_url)
    return {
        "authurl": opts["auth"],
        "user": opts["user"],
        "key": opts["key"],
        "auth_version": opts["auth_version"],
        "os_options": opts["os_options"],
        "cacert": opts["os_cacert"],
        "insecure": opts["insecure"],
    }


def login(
    auth: SwiftAuth, default_auth_url: str = DEFAULT_AUTH_URL, timeout: float = 30
) -> tuple[str, str]:
    """(storage URL, token): from the options when both are given, else from a login."""
    from swiftclient.client import Connection

    conn = Connection(**connection_kwargs(auth, default_auth_url), timeout=timeout, retries=0)
    try:
        if conn.url and conn.token:
            return conn.url, conn.token
        return conn.get_auth()
    finally:
        conn.close()
