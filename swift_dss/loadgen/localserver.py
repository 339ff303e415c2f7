"""A small object store over HTTP/1.1 on loopback, for tests and for ``dss bench loadgen``.

It speaks just enough Swift (tempauth ``/auth/v1.0``, ``/v1/ACCOUNT/CONTAINER/OBJECT``) and
S3 (path style, signatures not checked) for the load generator, keeps connections alive,
logs every request (method, path, body length, class header), and injects faults on a
deterministic schedule: ``status:503@4`` answers every 4th object request with 503,
``reset@5`` resets every 5th connection half way through the answer, ``stall@7`` never answers every
7th (until the server stops), ``slow@3`` sends every 3rd answer's body, or reads every
3rd request's body, in ten pieces `SLOW_PAUSE` seconds apart: a slow store's download,
or an upload whose bytes the client has sent long before they arrive. Written on asyncio
streams rather than http.server because the faults need control of the socket (a reset is
an RST, a stall holds the connection) and the benchmark needs keep-alive at a few thousand
requests per second.

    python -m swift_dss.loadgen.localserver --port 0 [--faults ...] [--store]
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import struct
import sys
import threading
from dataclasses import dataclass, field

#: Seconds between the pieces of a ``slow`` answer's or request's body.
SLOW_PAUSE = 0.4
SLOW_PIECES = 10


@dataclass(frozen=True)
class Fault:
    kind: str  # status, reset, stall, slow
    every: int
    status: int = 0

    @classmethod
    def parse(cls, text: str) -> Fault:
        what, _, every = text.partition("@")
        kind, _, status = what.partition(":")
        if (
            kind not in ("status", "reset", "stall", "slow")
            or not every.isdigit()
            or int(every) < 1
        ):
            raise ValueError(f"fault {text!r}: expected status:CODE@N, reset@N, stall@N or slow@N")
        return cls(kind, int(every), int(status) if status else 0)


@dataclass
class LoggedRequest:
    method: str
    path: str
    length: int
    cls: str | None
    outcome: str  # status code, "reset" or "stall"


@dataclass
class ServerState:
    faults: list[Fault] = field(default_factory=list)
    store: bool = False  # keep bodies (else sizes only; GET returns zeros)
    log: list[LoggedRequest] = field(default_factory=list)
    keep_log: bool = True
    objects: dict[str, bytes | int] = field(default_factory=dict)
    counter: int = 0


class LocalServer:
    def __init__(
        self, faults: list[str] | None = None, store: bool = False, keep_log: bool = True
    ) -> None:
        self.state = ServerState([Fault.parse(f) for f in faults or []], store, keep_log=keep_log)
        self.port = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._server: asyncio.AbstractServer | None = None
        self._stop: asyncio.Event | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def log(self) -> list[LoggedRequest]:
        return self.state.log

    # --- lifecycle ---------------------------------------------------------------------------

    async def serve(self, port: int = 0, ready: threading.Event | None = None) -> None:
        self._stop = asyncio.Event()
        self._server = await asyncio.start_server(
            self._client, "127.0.0.1", port, limit=1 << 20, backlog=1024
        )
        self.port = self._server.sockets[0].getsockname()[1]
        if ready is not None:
            ready.set()
        async with self._server:
            await self._stop.wait()
        # Kept-alive connections still wait for their next request: end them with the
        # server, so that no handler is left pending when the loop is dropped.
        handlers = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for task in handlers:
            task.cancel()
        await asyncio.gather(*handlers, return_exceptions=True)

    def start(self) -> LocalServer:
        ready = threading.Event()

        def main() -> None:
            self._loop = asyncio.new_event_loop()
            self._loop.run_until_complete(self.serve(0, ready))

        self._thread = threading.Thread(target=main, daemon=True)
        self._thread.start()
        if not ready.wait(10):
            raise RuntimeError("local server did not start")
        return self

    def stop(self) -> None:
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        if self._thread is not None:
            self._thread.join(10)

    def __enter__(self) -> LocalServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- requests ----------------------------------------------------------------------------

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while await self._one(reader, writer):
                pass
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError):
            pass
        finally:
            with contextlib.suppress(Exception):
                writer.close()

    def _fault(self) -> Fault | None:
        s = self.state
        s.counter += 1
        for f in s.faults:
            if s.counter % f.every == 0:
                return f
        return None

    async def _one(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        head = await reader.readuntil(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        method, target, _version = lines[0].split(" ", 2)
        headers = {}
        for line in lines[1:]:
            if line:
                k, _, v = line.partition(":")
                headers[k.strip().lower()] = v.strip()
        path = target.split("?", 1)[0]
        length = int(headers.get("content-length", "0") or 0)
        is_object = path.count("/") >= (4 if path.startswith("/v1/") else 2)
        fault = self._fault() if is_object and not path.startswith("/auth") else None
        slow = fault is not None and fault.kind == "slow"
        body = await self._body(reader, length, slow) if length else b""
        cls = headers.get("x-dss-object-class")
        if fault is not None and fault.kind == "reset":
            self._record(method, path, length, cls, "reset")
            # Half an answer first: a client that received nothing may retry on a fresh
            # connection (curl does, for a reused one), one that received a part cannot.
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n" + bytes(10))
            await writer.drain()
            sock = writer.get_extra_info("socket")
            if sock is not None:  # linger 0: close sends RST, the client sees a reset
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            writer.transport.abort()
            return False
        if fault is not None and fault.kind == "stall":
            self._record(method, path, length, cls, "stall")
            assert self._stop is not None
            await self._stop.wait()
            return False
        status, rheaders, rbody, send = self._answer(method, path, headers, body, length)
        if fault is not None and fault.kind == "status":
            status, rbody, send = fault.status, b"", 0
        self._record(method, path, length, cls, str(status))
        reason = {200: "OK", 201: "Created", 202: "Accepted", 204: "No Content"}.get(status, "X")
        out = [f"HTTP/1.1 {status} {reason}"]
        out += [f"{k}: {v}" for k, v in rheaders.items()]
        out.append(f"Content-Length: {send}")
        writer.write(("\r\n".join(out) + "\r\n\r\n").encode())
        if method != "HEAD" and send:
            if slow and not length:
                await self._trickle(writer, rbody or bytes(send))
            elif rbody:
                writer.write(rbody)
            else:
                zeros = bytes(min(send, 1 << 20))
                left = send
                while left:
                    writer.write(zeros[: min(left, len(zeros))])
                    left -= min(left, len(zeros))
                    await writer.drain()
        await writer.drain()
        return headers.get("connection", "").lower() != "close"

    async def _body(self, reader: asyncio.StreamReader, length: int, slow: bool) -> bytes:
        """The request's body (kept only when the server stores objects); read in
        `SLOW_PIECES` pieces with a pause before each when SLOW."""
        step = -(-length // SLOW_PIECES) if slow else 1 << 20
        kept = []
        left = length
        while left:
            if slow:
                await asyncio.sleep(SLOW_PAUSE)
            want = min(left, step)
            while want:
                chunk = await reader.read(want)
                if not chunk:
                    raise asyncio.IncompleteReadError(b"", left)
                if self.state.store:
                    kept.append(chunk)
                want -= len(chunk)
                left -= len(chunk)
        return b"".join(kept)

    @staticmethod
    async def _trickle(writer: asyncio.StreamWriter, body: bytes) -> None:
        """BODY in `SLOW_PIECES` pieces with a pause before each: slow, never idle for long."""
        step = -(-len(body) // SLOW_PIECES)
        for start in range(0, len(body), step):
            await asyncio.sleep(SLOW_PAUSE)
            writer.write(body[start : start + step])
            await writer.drain()

    def _record(self, method: str, path: str, length: int, cls: str | None, out: str) -> None:
        if self.state.keep_log:
            self.state.log.append(LoggedRequest(method, path, length, cls, out))

    def _answer(
        self, method: str, path: str, headers: dict[str, str], body: bytes, length: int
    ) -> tuple[int, dict[str, str], bytes, int]:
        objects = self.state.objects
        if path.startswith("/auth/"):
            return (
                200,
                {"X-Storage-Url": f"{self.url}/v1/AUTH_test", "X-Auth-Token": "AUTH_tk_local"},
                b"",
                0,
            )
        is_object = path.count("/") >= (4 if path.startswith("/v1/") else 2)
        if not is_object:
            return {"PUT": 201, "DELETE": 204, "GET": 200, "HEAD": 204}.get(method, 405), {}, b"", 0
        if method == "PUT":
            objects[path] = body if self.state.store else length
            return 201, {"Etag": "x"}, b"", 0
        stored = objects.get(path)
        if stored is None:
            return 404, {}, b"", 0
        if method == "DELETE":
            del objects[path]
            return 204, {}, b"", 0
        size = len(stored) if isinstance(stored, bytes) else stored
        rbody = stored if isinstance(stored, bytes) else b""
        if method in ("GET", "HEAD"):
            return 200, {}, rbody, size
        return 405, {}, b"", 0


def main(argv: list[str] | None = None) -> None:
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--faults", nargs="*", default=[])
    ap.add_argument("--store", action="store_true")
    args = ap.parse_args(argv)
    server = LocalServer(args.faults, args.store, keep_log=False)

    async def run() -> None:
        ready = threading.Event()
        task = asyncio.create_task(server.serve(args.port, ready))
        while not ready.is_set():
            await asyncio.sleep(0.01)
        print(server.port, flush=True)
        await task

    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(run())


if __name__ == "__main__":
    main(sys.argv[1:])
