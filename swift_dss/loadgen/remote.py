"""One process's part of a run (`runner.work`) in a subprocess started with a command
prefix, such as `ip netns exec CLIENT` on the emulated testbed, so that its requests cross
the client node's shaped link, while the caller keeps control between phases.

The subprocess and the caller speak JSON lines over its stdout and stdin:

    child -> parent  {"tick": [index, name, done, failed, bytes, seconds]}  (progress)
                     {"phase": index}   (about to start phase INDEX, or with INDEX = the
                                         number of phases, done with all; waits for a line)
                     {"result": {...}}  (what `runner.work` returned)
    parent -> child  "go" (start the phase) or "abort"

so the caller can read the storage tier before each phase, exactly where an in-process
run's barrier would. The workload goes over as a pickle (it is what multiprocessing sends
its workers too).
"""

from __future__ import annotations

import json
import pickle
import queue
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from swift_dss.loadgen import runner
from swift_dss.loadgen.protocols import Protocol, from_json
from swift_dss.loadgen.workload import Workload

#: Progress lines at most this often, so that they cost the client nothing measurable.
TICK_INTERVAL = 0.5


class RemoteError(RuntimeError):
    """The subprocess failed, hung or broke the protocol; the message says how."""


def work(
    prefix: list[str],
    workload: Workload,
    protocol: Protocol,
    t0: float,
    on_phase: Callable[[int], None],
    tick: runner.Progress | None = None,
    log: Path | None = None,
    on_start: Callable[[int], None] | None = None,
) -> dict[str, Any]:
    """`runner.work(WORKLOAD, PROTOCOL, T0)` run as PREFIX + this module; ON_PHASE(i) is
    called before phase i starts and once more after the last (i = number of phases),
    while the subprocess still runs; ON_START(pid) once the subprocess runs (PREFIX must
    exec in place, as `ip netns exec` does, for the pid to be the load generator's). LOG
    receives the subprocess's stderr."""
    # The child may wait this long for a request without a line: the barrier's own limit.
    silence = workload.timeout * 4 + 60
    with tempfile.NamedTemporaryFile(suffix=".pickle") as req:
        pickle.dump((workload, protocol.to_json(), t0), req)
        req.flush()
        err = open(log, "ab") if log else subprocess.DEVNULL  # noqa: SIM115
        try:
            proc = subprocess.Popen(
                [*prefix, sys.executable, "-m", "swift_dss.loadgen.remote", req.name],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=err,
                text=True,
                bufsize=1,
            )
            try:
                if on_start is not None:
                    on_start(proc.pid)
                return _converse(proc, on_phase, tick, silence)
            finally:
                if proc.poll() is None:
                    proc.kill()
                proc.wait()
        finally:
            if log:
                err.close()  # type: ignore[union-attr]


def _converse(
    proc: subprocess.Popen[str],
    on_phase: Callable[[int], None],
    tick: runner.Progress | None,
    silence: float,
) -> dict[str, Any]:
    assert proc.stdout is not None and proc.stdin is not None
    # A thread reads the lines: select() on a buffered pipe misses lines already buffered.
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=_pump, args=(proc.stdout, lines), daemon=True).start()
    while True:
        try:
            line = lines.get(timeout=silence)
        except queue.Empty:
            raise RemoteError(f"the load generator said nothing for {silence:g} s") from None
        if not line:
            code = proc.wait()
            raise RemoteError(f"the load generator exited {code} before its result")
        try:
            msg = json.loads(line)
        except ValueError:
            raise RemoteError(f"the load generator wrote {line.strip()[:80]!r}") from None
        if "result" in msg:
            return msg["result"]
        if "tick" in msg:
            if tick is not None:
                tick(*msg["tick"])
            continue
        if "phase" in msg:
            try:
                on_phase(int(msg["phase"]))
            except BaseException:
                _say(proc.stdin, "abort")
                raise
            _say(proc.stdin, "go")
            continue
        raise RemoteError(f"the load generator wrote an unknown message {line.strip()[:80]!r}")


def _pump(stream: IO[str], lines: queue.Queue[str]) -> None:
    for line in stream:
        lines.put(line)
    lines.put("")  # the end


def _say(stream: IO[str], word: str) -> None:
    try:
        stream.write(word + "\n")
        stream.flush()
    except BrokenPipeError:
        pass  # the child is gone; the next read says so


class _LineBarrier:
    """The child's side of the phase handshake."""

    def __init__(self, out: IO[str]) -> None:
        self.out = out
        self.index = 0

    def wait(self, timeout: float | None = None) -> None:
        _emit(self.out, {"phase": self.index})
        self.index += 1
        answer = sys.stdin.readline().strip()
        if answer != "go":
            raise RemoteError(f"the caller stopped the run before phase {self.index - 1}")

    def abort(self) -> None:
        pass


def _emit(out: IO[str], msg: dict[str, Any]) -> None:
    out.write(json.dumps(msg) + "\n")
    out.flush()


def main(argv: list[str]) -> None:
    workload, proto_json, t0 = pickle.loads(Path(argv[0]).read_bytes())
    # Nothing else may write to the protocol's stream: stdout becomes stderr for the rest.
    out = sys.stdout
    sys.stdout = sys.stderr
    last = [0.0]

    def tick(index: int, name: str, done: int, failed: int, nbytes: int, sec: float) -> None:
        now = time.monotonic()
        if now - last[0] >= TICK_INTERVAL:
            last[0] = now
            _emit(out, {"tick": [index, name, done, failed, nbytes, sec]})

    barrier = _LineBarrier(out)
    result = runner.work(workload, from_json(proto_json), t0, barrier=barrier, tick=tick)
    # One more handshake once every phase is done, so that the caller's last reading
    # still finds this process alive (its CPU time is part of that reading).
    barrier.wait()
    _emit(out, {"result": result})


if __name__ == "__main__":
    main(sys.argv[1:])
