"""Free ports for a cluster's servers: outside the kernel's range for outgoing connections."""

from __future__ import annotations

import socket

import pytest

from swift_dss.deploy import probes


def test_free_ports_are_distinct_bindable_and_below_the_ephemeral_range() -> None:
    ports = probes.free_ports(20)
    assert len(set(ports)) == 20
    assert all(probes.LOWEST_PORT <= p < probes.ephemeral_ports().start for p in ports)
    for port in ports:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", port))


def test_a_port_in_use_is_never_picked(monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        busy = held.getsockname()[1]
        # Only the busy port and one other below the range: the other is the one picked.
        monkeypatch.setattr(probes, "LOWEST_PORT", busy)
        monkeypatch.setattr(probes, "ephemeral_ports", lambda: range(busy + 2, 65536))
        if probes.port_in_use(busy + 1):
            pytest.skip(f"port {busy + 1} is taken on this machine")
        assert probes.free_ports(1) == [busy + 1]


def test_without_room_below_the_range_the_kernel_picks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(probes, "ephemeral_ports", lambda: range(1024, 65536))
    ports = probes.free_ports(3)
    assert len(set(ports)) == 3 and all(p >= 1024 for p in ports)
