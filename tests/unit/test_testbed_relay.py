"""The RTT relay: bytes pass unchanged both ways (more than its window), each exchange
waits at least the round trip it adds, and bad settings are refused."""

from __future__ import annotations

import contextlib
import socket
import socketserver
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Iterator

import pytest

from swift_dss.testbed.relay import RelayError, parse_address
from tests.unit.serving import serving


class _Echo(socketserver.BaseRequestHandler):
    """Answers every byte with itself, then half-closes when the client does."""

    def handle(self) -> None:
        while data := self.request.recv(1 << 16):
            self.request.sendall(data)
        self.request.shutdown(socket.SHUT_WR)


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


def start_relay(target: int, rtt_ms: float) -> tuple[subprocess.Popen[str], int]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "swift_dss.testbed.relay", "127.0.0.1:0",
         f"127.0.0.1:{target}", str(rtt_ms)],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert proc.stdout is not None
    word, port = proc.stdout.readline().split()
    assert word == "ready"
    return proc, int(port)


@pytest.fixture
def relayed() -> Iterator[int]:
    with serving(_Server(("127.0.0.1", 0), _Echo)) as srv:
        proc, port = start_relay(srv.server_address[1], 200)
        try:
            yield port
        finally:
            proc.terminate()
            proc.wait(10)


def exchange(port: int, payload: bytes) -> bytes:
    """PAYLOAD sent while its echo is read: with the echo not read, the echo server's and
    then the sender's buffers would fill, over the relay as over any TCP path."""
    with socket.create_connection(("127.0.0.1", port), timeout=60) as s:

        def send() -> None:
            s.sendall(payload)
            s.shutdown(socket.SHUT_WR)

        sender = threading.Thread(target=send, daemon=True)
        sender.start()
        chunks = []
        while data := s.recv(1 << 16):
            chunks.append(data)
        sender.join(60)
    return b"".join(chunks)


def test_bytes_pass_unchanged_beyond_the_window(relayed: int) -> None:
    payload = bytes(range(256)) * (40 << 12)  # 40 MiB, over six windows
    assert exchange(relayed, payload) == payload


def test_each_exchange_waits_at_least_the_round_trips(relayed: int) -> None:
    with socket.create_connection(("127.0.0.1", relayed), timeout=30) as s:
        t0 = time.monotonic()
        s.sendall(b"ping")
        assert s.recv(16) == b"ping"
        first = time.monotonic() - t0
        t0 = time.monotonic()
        s.sendall(b"pong")
        assert s.recv(16) == b"pong"
        second = time.monotonic() - t0
    # The first exchange also pays the relay's connection (one more RTT).
    assert first >= 0.4 and second >= 0.2


def test_bad_settings_are_refused() -> None:
    with pytest.raises(RelayError):
        parse_address("nohost")
    assert parse_address("10.0.0.1:80") == ("10.0.0.1", 80)
    for args in (["127.0.0.1:0", "x", "5"], ["127.0.0.1:0", "127.0.0.1:1", "-3"], []):
        done = subprocess.run(
            [sys.executable, "-m", "swift_dss.testbed.relay", *args],
            capture_output=True, text=True, timeout=30,
        )  # fmt: skip
        assert done.returncode != 0 and ("relay:" in done.stderr or "usage" in done.stderr)


def test_the_relay_keeps_serving_after_connections_reset_mid_transfer() -> None:
    """Many clients that vanish mid-upload (as a timed-out load generator's do) leave the
    relay serving the next connection."""
    with serving(_Server(("127.0.0.1", 0), _Echo)) as srv:
        proc, port = start_relay(srv.server_address[1], 0.28)
        try:
            for _ in range(3):
                socks = [socket.create_connection(("127.0.0.1", port)) for _ in range(32)]
                for s in socks:
                    s.setblocking(False)
                    with contextlib.suppress(BlockingIOError):
                        s.send(b"x" * (1 << 20))
                for s in socks:
                    # SO_LINGER 0: close with a reset, as a killed client's socket does.
                    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    s.close()
                time.sleep(0.3)
            assert exchange(port, b"still here") == b"still here"
            assert proc.poll() is None
        finally:
            proc.terminate()
            proc.communicate(timeout=10)
