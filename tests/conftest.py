"""Shared fixtures: a real all-in-one Swift cluster, started once per test session."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

# Hypothesis fails any example that runs longer than 200 ms: a timing threshold, which a
# loaded machine trips. The properties here are about results, never about speed.
# `make test` checks the same examples on every run (derandomize), so that its verdict
# is the code's and not the draw's; `make properties` draws fresh ones, many more of
# them (`--hypothesis-profile explore`).
settings.register_profile("dss", deadline=None, derandomize=True)
settings.register_profile("explore", deadline=None, max_examples=2000)
settings.load_profile("dss")


@pytest.fixture(scope="session")
def saio(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    """An all-in-one cluster with dss (proxy middleware, object server, dssio `record`), its
    device a dss-tier mount in the default mode (dss): the record backend logs each I/O and
    hands it, with its class, to the tier.

    Attributes: proxy_url, auth_url, user, key, account, account_url, s3_access_key,
    s3_secret_key, record_log (the dssio record backend's log of (path, offset, length,
    class) per I/O) and dir.
    """
    from swift_dss.deploy.saio import Saio, SaioConfig

    base = Path(os.environ.get("DSS_TEST_DIR") or tmp_path_factory.mktemp("saio"))
    record_log = base / "dssio-record.jsonl"
    cfg = SaioConfig(
        dir=base / "saio",
        port=0,
        dssio_backend="record",
        object_options={"dssio_record_log": str(record_log)},
        # A range limit below what fits in one header line, so that the limit itself is tested.
        dss_options={"allowed_classes": "0,11-31", "reserved_classes": "1-10", "max_ranges": "256"},
    )
    cluster = Saio(cfg)
    cluster.up()
    cluster.record_log = record_log
    try:
        yield cluster
    finally:
        cluster.down()
