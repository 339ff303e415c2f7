"""The reports' lines on what the testbed's links do with a full queue: how long it holds
a packet, and how soon TCP sends a dropped segment again, with a run's recorded settings."""

from __future__ import annotations

import dataclasses
from typing import Any

from swift_dss.testbed import shaping
from swift_dss.testbed.settings import UNRECORDED, TestbedSettings


def queue_lines(settings: dict[str, Any]) -> list[str]:
    """What a full link queue holds, when the run recorded its queue setting."""
    known = {f.name for f in dataclasses.fields(TestbedSettings)}
    if "link_queue_ms" not in settings:
        return []
    recorded = {**UNRECORDED, **settings}
    tb = TestbedSettings(**{k: v for k, v in recorded.items() if k in known})
    least = shaping.MIN_BURSTS[tb.link_burst]
    rto = tb.tcp_rto_min_ms
    rto_text = (
        f"{rto:g} ms of emulated time ({rto * tb.dilation:g} ms real)"
        if rto
        else f"the kernel's 200 ms of real time, {200 / tb.dilation:g} ms of emulated time"
    )
    return [
        f"- Link queues: a full queue holds {tb.full_link_queue_ms('s1'):.1f} ms of emulated "
        f"time on a storage node's link and {tb.full_link_queue_ms('client'):.1f} on the "
        f"client's: the set {tb.link_queue_ms:g} ms plus tbf's burst ({tb.link_burst}, "
        f"{least / 1024:.3g} KiB at least) at the link's rate. A dropped segment is sent "
        f"again after TCP's minimum retransmission timeout at the earliest: {rto_text}."
    ]
