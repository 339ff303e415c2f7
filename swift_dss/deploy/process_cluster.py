"""What the all-in-one cluster and the local multi-node cluster share: a directory with a
state file, the processes that file records, memcached, and a proxy with tempauth."""

from __future__ import annotations

import contextlib
import os
import shutil
from pathlib import Path
from typing import Any, ClassVar, Self

from swift_dss.deploy.cluster_config import ClusterConfig, json_error
from swift_dss.deploy.processes import ProcessSet, StateFile
from swift_dss.deploy.tempauth import TempauthAccount

#: What a mount record holds (devices.py, tierctl's Daemon.record), and its type.
_MOUNT_KEYS: dict[str, Any] = {
    "path": str,
    "kind": str,
    "pid": int | None,
    "cmd": list[str],
    "log": str | None,
    "log_start": int,
    "over_mount": bool,
}


class ProcessCluster(TempauthAccount):
    """A cluster of processes on this machine, all of whose state lives in one directory.

    A subclass names its state file, its config class and what operators call it, and
    supplies the steps of `up` and all of `down`.
    """

    state_file: ClassVar[str]
    config_type: ClassVar[type[ClusterConfig]]
    #: "cluster", "local cluster": the word in messages such as "no cluster in DIR".
    kind: ClassVar[str]
    #: The state file's keys besides config, processes and mounts, and their types (each
    #: may be absent: a cluster that failed half-way through `up` has not written them all).
    state_keys: ClassVar[dict[str, Any]] = {}
    #: What every process record holds (ProcessSet.spawn), and its type.
    record_keys: ClassVar[dict[str, Any]] = {"pid": int, "cmd": list[str], "log": str}

    def __init__(self, cfg: ClusterConfig, state: dict[str, Any] | None = None) -> None:
        self.cfg = cfg
        self.dir: Path = cfg.dir
        self._state = StateFile(self.dir / self.state_file, state)
        self._procs = ProcessSet(self._state, self.dir, self._error)

    @property
    def state_path(self) -> Path:
        return self._state.path

    @classmethod
    def load(cls, dir: Path | str) -> Self:
        path = Path(dir).absolute() / cls.state_file
        missing = f"no {cls.kind} in {path.parent} (no {cls.state_file})"
        state = StateFile.load(path, cls._error, missing).data
        if reason := cls._state_error(state):
            raise cls._error(f"cannot read {path}: {reason}")
        try:
            cfg = cls.config_type.from_json(state["config"])
        except (TypeError, ValueError) as err:
            raise cls._error(f"cannot read {path}: {err}") from None
        return cls(cfg, state)

    @classmethod
    def _state_error(cls, state: Any) -> str | None:
        """What makes STATE, as read from the state file, unusable, if anything does: every
        later step takes its layout for granted."""
        if not isinstance(state, dict):
            return "not a JSON object"
        if "config" not in state:
            return "no config"
        keys = {**cls.state_keys, "processes": dict[str, dict], "mounts": list[dict]}
        for key, hint in keys.items():
            if key in state and (reason := json_error(state[key], hint, key)):
                return reason
        for name, record in state.get("processes", {}).items():
            for key, hint in cls.record_keys.items():
                if key not in record:
                    return f"processes.{name}.{key} is missing"
                if reason := json_error(record[key], hint, f"processes.{name}.{key}"):
                    return reason
            if reason := json_error(record.get("launch"), list[str] | None, "launch"):
                return f"processes.{name}.{reason}"
        for i, mount in enumerate(state.get("mounts", [])):
            for key, hint in _MOUNT_KEYS.items():
                if key not in mount and key in ("path", "kind"):
                    return f"mounts[{i}].{key} is missing"
                if key in mount and (reason := json_error(mount[key], hint, key)):
                    return f"mounts[{i}].{reason}"
        return None

    def is_up(self) -> bool:
        return self._procs.all_alive()

    def up(self) -> None:
        """Start the cluster; return once the proxy serves authenticated requests."""
        self._refuse_if_running()
        self.cfg.validate()
        memcached = shutil.which("memcached")
        if memcached is None:
            raise self._error("memcached is not installed (apt-get install memcached)")
        self._state.data = self._new_state()
        self._make_dirs()
        self._state.save()
        try:
            self._prepare()
            self._start(memcached)
            self._wait_ready()
        except BaseException:
            # Whatever did start is stopped again, even on Ctrl-C.
            with contextlib.suppress(Exception):
                self.down()
            raise

    def _make_dirs(self) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)

    def _refuse_if_running(self) -> None:
        raise NotImplementedError

    def _new_state(self) -> dict[str, Any]:
        """The state file's content before anything starts: config, ports, no processes."""
        raise NotImplementedError

    def _prepare(self) -> None:
        """What must exist before any process starts: devices, network, configs, rings."""
        raise NotImplementedError

    def _start(self, memcached: str) -> None:
        raise NotImplementedError

    def _wait_ready(self) -> None:
        """Return once every process answers and the proxy serves; fail if one exits."""
        raise NotImplementedError

    @staticmethod
    def _memcached_cmd(memcached: str, port: int) -> list[str]:
        cmd = [memcached, "-l", "127.0.0.1", "-p", str(port), "-U", "0", "-m", "64"]
        if os.geteuid() == 0:
            cmd += ["-u", "root"]  # memcached refuses to run as root without it
        return cmd

    def down(self, timeout: float = 15.0) -> None:
        raise NotImplementedError

    def status(self) -> dict[str, Any]:
        """What runs where, for `status --json`; "up" says whether every process is alive."""
        raise NotImplementedError

    def _mount_paths(self) -> list[str]:
        return [m["path"] for m in self._state.mounts()]
