"""What /proc says of a process: its state, process group and command line, and whether a
recorded pid still runs the recorded command (a recycled pid must never be mistaken for
it). Used by the clusters' process records and by the tier's daemon control alike.
"""

from __future__ import annotations

from pathlib import Path

DEAD_STATES = ("Z", "X")


def read_proc(pid: int) -> tuple[str, int, list[str]] | None:
    """(state, pgid, argv) of PID, or None if there is no such process."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()
    return fields[0], int(fields[2]), [a.decode(errors="replace") for a in argv if a]


def runs(pid: int, cmds: list[list[str]]) -> bool:
    """PID is alive and runs one of CMDS."""
    info = read_proc(pid)
    return info is not None and info[0] not in DEAD_STATES and info[2] in cmds


def group_members(pgid: int, cmds: list[list[str]]) -> list[int]:
    """Live processes of process group PGID running one of CMDS: a server and its workers."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        info = read_proc(int(entry.name))
        if info and info[1] == pgid and info[0] not in DEAD_STATES and info[2] in cmds:
            pids.append(int(entry.name))
    return pids
