"""What the all-in-one cluster and the local multi-node cluster share: a directory with a
state file, the processes that file records, memcached, and a proxy with tempauth."""

from __future__ import annotations

import contextlib
import os
import shutil
from pathlib import Path
from typing import Any, ClassVar, Self

from swift_dss.deploy.cluster_config import ClusterConfig
from swift_dss.deploy.processes import ProcessSet, StateFile
from swift_dss.deploy.tempauth import TempauthAccount


class ProcessCluster(TempauthAccount):
    """A cluster of processes on this machine, all of whose state lives in one directory.

    A subclass names its state file, its config class and what operators call it, and
    supplies the steps of `up` and all of `down`.
    """

    state_file: ClassVar[str]
    config_type: ClassVar[type[ClusterConfig]]
    #: "cluster", "local cluster": the word in messages such as "no cluster in DIR".
    kind: ClassVar[str]

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
        return cls(cls.config_type.from_json(state["config"]), state)

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
