"""A TCP relay that adds a round-trip time: the emulated testbed's long-distance client.

The kernel here has no netem, so tc can limit a link's rate but not delay its packets.
This relay, run on the client node, accepts the client's connections and opens one to the
server for each; every chunk read from either side is written to the other side RTT/2
after it arrived, in order. A request and its answer therefore take one RTT more than
without the relay, each new connection one RTT more for the server's SYN-ACK (the relay's
connect), as over a long link.

TCP's flow control over a real long link lets at most a window of data be in flight per
connection; the relay holds at most WINDOW bytes per direction of a connection and stops
reading until the oldest are written, which is what bounds one connection's bandwidth to
WINDOW / RTT, as Linux's default maximum receive window of 6 MiB would (net.ipv4.tcp_rmem).

Run it as `python -m swift_dss.testbed.relay LISTEN_HOST:PORT SERVER_HOST:PORT RTT_MS`;
it prints "ready PORT" once it listens (port 0 picks a free one) and runs until killed.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import sys
import time

#: Bytes in flight per direction of a connection (Linux's default maximum TCP window).
WINDOW = 6 << 20
_CHUNK = 256 << 10


class RelayError(ValueError):
    """A relay setting that cannot be used, with a one-line reason."""


def parse_address(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 <= int(port) < 65536:
        raise RelayError(f"{text!r} is not HOST:PORT")
    return host, int(port)


class Delayed:
    """One direction of a connection: chunks leave DELAY seconds after they arrived."""

    def __init__(self, delay: float, window: int = WINDOW) -> None:
        self.delay = delay
        self.window = window
        self.queue: collections.deque[tuple[float, bytes]] = collections.deque()
        self.held = 0
        self.changed = asyncio.Event()

    async def pump_in(self, reader: asyncio.StreamReader) -> None:
        """Read until EOF, holding at most WINDOW bytes not yet written."""
        while data := await reader.read(_CHUNK):
            while self.held + len(data) > self.window and self.queue:
                self.changed.clear()
                await self.changed.wait()
            self.queue.append((time.monotonic() + self.delay, data))
            self.held += len(data)
            self.changed.set()
        self.queue.append((time.monotonic() + self.delay, b""))
        self.changed.set()

    async def pump_out(self, writer: asyncio.StreamWriter) -> None:
        """Write each chunk when it is due; half-close at the end of the stream."""
        while True:
            while not self.queue:
                self.changed.clear()
                await self.changed.wait()
            due, data = self.queue[0]
            wait = due - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            self.queue.popleft()
            if not data:
                with contextlib.suppress(OSError):
                    writer.write_eof()
                return
            writer.write(data)
            await writer.drain()
            self.held -= len(data)
            self.changed.set()


async def _connection(
    client_r: asyncio.StreamReader,
    client_w: asyncio.StreamWriter,
    server: tuple[str, int],
    rtt: float,
) -> None:
    half = rtt / 2
    try:
        # The SYN and its answer cross the long link once each way.
        await asyncio.sleep(rtt)
        server_r, server_w = await asyncio.open_connection(*server)
    except OSError:
        client_w.close()
        return
    up, down = Delayed(half), Delayed(half)
    tasks = [
        asyncio.ensure_future(up.pump_in(client_r)),
        asyncio.ensure_future(up.pump_out(server_w)),
        asyncio.ensure_future(down.pump_in(server_r)),
        asyncio.ensure_future(down.pump_out(client_w)),
    ]
    try:
        await asyncio.gather(*tasks)
    except (OSError, asyncio.IncompleteReadError):
        pass  # one side reset: the other is closed below
    finally:
        for t in tasks:
            t.cancel()
        # Let the cancelled pumps finish before their connection goes.
        await asyncio.gather(*tasks, return_exceptions=True)
        for w in (server_w, client_w):
            w.close()


async def serve(listen: tuple[str, int], server: tuple[str, int], rtt: float) -> None:
    # asyncio's stream protocol drops its reference to a connection's task once the client
    # side closes, and the loop keeps only weak ones: a task still relaying the other
    # direction would be garbage-collected mid-await (and its server connection leaked).
    running: set[asyncio.Task[object] | None] = set()

    async def handle(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        running.add(task)
        try:
            await _connection(r, w, server, rtt)
        finally:
            running.discard(task)

    srv = await asyncio.start_server(handle, *listen)
    port = srv.sockets[0].getsockname()[1]
    print(f"ready {port}", flush=True)
    async with srv:
        await srv.serve_forever()


def main(argv: list[str]) -> None:
    if len(argv) != 3:
        sys.exit("usage: python -m swift_dss.testbed.relay LISTEN:PORT SERVER:PORT RTT_MS")
    try:
        listen, server = parse_address(argv[0]), parse_address(argv[1])
        rtt_ms = float(argv[2])
        if not 0 <= rtt_ms <= 10_000:
            raise RelayError(f"RTT {rtt_ms} ms is outside 0-10000 ms")
    except (RelayError, ValueError) as err:
        sys.exit(f"relay: {err}")
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve(listen, server, rtt_ms / 1000))


if __name__ == "__main__":
    main(sys.argv[1:])
