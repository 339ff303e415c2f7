"""Running work inside a network namespace: a command, or a Python function in a
subprocess of its own (`python -m swift_dss.testbed.netexec MODULE:FUNCTION ARGS-JSON`,
which prints the function's result as JSON).

The testbed's client runs this way in its namespace, so that its traffic crosses the
client's shaped link.
"""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from typing import Any


class NetexecError(Exception):
    """Work in a namespace that failed, with the last line it wrote."""


def command(namespace: str, cmd: list[str]) -> list[str]:
    """CMD run in NAMESPACE (`ip netns exec` execs it in place: same pid, same group)."""
    return ["ip", "netns", "exec", namespace, *cmd]


def write(namespace: str, path: str, value: str) -> str | None:
    """Write VALUE to the file PATH inside NAMESPACE (a /proc/sys/net file is the writer's
    own namespace's); why it failed, or None."""
    cmd = command(namespace, ["tee", path])
    done = subprocess.run(cmd, input=value, capture_output=True, text=True, check=False)
    if done.returncode == 0:
        return None
    lines = done.stderr.strip().splitlines()
    return lines[-1] if lines else f"exit {done.returncode}"


def python_command(namespace: str, target: str, *args: Any) -> list[str]:
    """The command that calls TARGET ("module:function") with ARGS in NAMESPACE."""
    return command(
        namespace, [sys.executable, "-m", "swift_dss.testbed.netexec", target, json.dumps(args)]
    )


def spawn(namespace: str, target: str, *args: Any) -> subprocess.Popen[str]:
    """Start TARGET(*ARGS) in NAMESPACE; `result` waits for what it returns."""
    return subprocess.Popen(
        python_command(namespace, target, *args),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def result(proc: subprocess.Popen[str], timeout: float) -> Any:
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise NetexecError(f"{proc.args[-2]} did not finish within {timeout:g} s") from None
    if proc.returncode != 0:
        lines = (err or out).strip().splitlines()
        raise NetexecError(
            f"{proc.args[-2]} exited {proc.returncode}: {lines[-1] if lines else 'no output'}"
        )
    return json.loads(out.strip().splitlines()[-1])


def call(namespace: str, target: str, *args: Any, timeout: float = 300) -> Any:
    """TARGET(*ARGS) run in NAMESPACE in a subprocess; its (JSON-able) return value."""
    return result(spawn(namespace, target, *args), timeout)


def main(argv: list[str]) -> None:
    target, args = argv
    module, _, func = target.partition(":")
    value = getattr(importlib.import_module(module), func)(*json.loads(args))
    print(json.dumps(value))


if __name__ == "__main__":
    main(sys.argv[1:])
