"""An object-server worker on a tier mount shares itself between its requests while a large
object streams from a slow HDD model (Swift's ``cooperative_period``, set for tier nodes).

A worker is one eventlet hub and switches requests only when a socket would block. Here
the HDD model is slower than loopback, so a large GET never meets a full socket: without
the setting, a small GET to the same (only) worker waits for the whole transfer.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from swift_dss.deploy.saio import Saio, SaioConfig

from .helpers import Swift

pytestmark = pytest.mark.integration

BIG = 6 << 20  # about 2 s at the model's 3 MB/s


@pytest.fixture(params=["tier default", "no cooperation"])
def cluster(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, Saio]]:
    own = {} if request.param == "tier default" else {"cooperative_period": "0"}
    cfg = SaioConfig(
        dir=tmp_path / "c",
        port=0,
        workers=1,
        tier_mode="hdd",
        tier_hdd_model="st1000nm0011:rate_scale=0.02",
        devices_size="512m",
        object_options=own,
    )
    saio = Saio(cfg)
    try:
        saio.up()
        yield request.param, saio
    finally:
        if saio.state_path.exists():
            saio.down()


def test_a_small_get_is_answered_while_a_large_one_streams_from_the_hdd(
    cluster: tuple[str, Saio],
) -> None:
    setting, saio = cluster
    swift = Swift.connect(saio)
    assert swift.request("PUT", "c").status_code in (201, 202)
    assert swift.request("PUT", "c/big", data=os.urandom(BIG)).status_code == 201
    assert swift.request("PUT", "c/small", data=b"s" * 1000).status_code == 201

    small_done = threading.Event()
    answers: list[int] = []

    def small() -> None:
        other = Swift(swift.storage_url, swift.token)
        answers.append(other.request("GET", "c/small").status_code)
        small_done.set()

    big = swift.request("GET", "c/big", stream=True)
    assert big.status_code == 200
    received = len(big.raw.read(64 * 1024))  # the worker is streaming it now
    thread = threading.Thread(target=small)
    thread.start()
    for chunk in big.iter_content(64 * 1024):
        received += len(chunk)
    small_before_big_ended = small_done.is_set()
    thread.join(timeout=60)
    assert received == BIG and answers == [200]
    if setting == "tier default":
        assert small_before_big_ended
    else:
        # The reason for the setting: Swift's worker alone holds the small GET back.
        assert not small_before_big_ended
