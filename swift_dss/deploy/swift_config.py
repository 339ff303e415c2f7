"""What the clusters' Swift config files are made of: the proxy pipeline, values as INI
files may hold them, and the templates in templates/ rendered."""

from __future__ import annotations

import os
import pwd
from importlib.resources import files
from pathlib import Path
from string import Template

from swift_dss.deploy.saio_config import SaioError

# s3_storage_class appears twice: before s3api and after auth and copy (its docstring says why).
PIPELINE = (
    "catch_errors gatekeeper healthcheck proxy-logging cache listing_formats bulk tempurl "
    "ratelimit s3_storage_class s3api tempauth copy s3_storage_class container-quotas "
    "account-quotas slo dlo versioned_writes symlink dss proxy-logging proxy-server"
)

#: The storage servers' pipelines.
OBJECT_PIPELINE = "healthcheck recon object-server"
CONTAINER_PIPELINE = "healthcheck recon container-server"
#: The filter that logs a PUT's steps (swift_dss.put_timing).
PUT_TIMING = "put_timing"


def timed_proxy(pipeline: str) -> str:
    """The proxy's PIPELINE with put_timing after the first proxy-logging: past
    catch_errors, which names the transaction, and before the controllers."""
    head, sep, tail = pipeline.partition("proxy-logging ")
    if not sep:
        raise ValueError(f"no proxy-logging in the proxy pipeline: {pipeline!r}")
    return f"{head}{sep}{PUT_TIMING} {tail}"


def timed_server(pipeline: str) -> str:
    """A storage server's PIPELINE with put_timing just before the app."""
    filters, app = pipeline.rsplit(" ", 1)
    return f"{filters} {PUT_TIMING} {app}"


def current_user() -> str:
    return pwd.getpwuid(os.geteuid()).pw_name


def ini_value(value: object) -> str:
    """VALUE as it may appear in a paste.deploy INI file (no newlines, % escaped)."""
    text = str(value)
    if "\n" in text or "\r" in text:
        raise SaioError(f"config value {text!r} spans several lines")
    return text.replace("%", "%%")


def ini_lines(options: dict[str, str]) -> str:
    return "".join(f"{ini_value(k)} = {ini_value(v)}\n" for k, v in options.items())


def render_text(template: str, values: dict[str, object]) -> str:
    """The template swift_dss/deploy/templates/TEMPLATE with its ${names} replaced by VALUES."""
    text = files("swift_dss.deploy").joinpath("templates", template).read_text()
    return Template(text).substitute({k: str(v) for k, v in values.items()})


def render(template: str, dest: Path, values: dict[str, object]) -> None:
    dest.write_text(render_text(template, values))
