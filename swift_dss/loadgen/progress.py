"""The live display of a run (rich): one line per phase with requests, failures and MB/s."""

from __future__ import annotations

from types import TracebackType

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from swift_dss.loadgen.workload import Workload


class RunProgress:
    def __init__(self, workload: Workload, console: Console | None = None) -> None:
        self.w = workload
        self.progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[failed]} failed  {task.fields[mbps]:.1f} MB/s"),
            TimeElapsedColumn(),
            console=console or Console(stderr=True),
            transient=False,
        )
        self.tasks: dict[int, int] = {}

    def __enter__(self) -> RunProgress:
        self.progress.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.progress.stop()

    def _total(self, index: int) -> int | None:
        p = self.w.phases[index]
        if p.op in ("create_containers", "delete_containers"):
            return self.w.containers
        return p.count

    def __call__(
        self, index: int, name: str, done: int, failed: int, nbytes: int, seconds: float
    ) -> None:
        if index not in self.tasks:
            for i in sorted(self.tasks):
                task = self.tasks[i]
                self.progress.update(task, total=self.progress.tasks[task].completed)
            self.tasks[index] = self.progress.add_task(
                f"{name} ({self.w.phases[index].op})",
                total=self._total(index),
                failed=0,
                mbps=0.0,
            )
        self.progress.update(
            self.tasks[index], completed=done, failed=failed, mbps=nbytes / max(seconds, 1e-3) / 1e6
        )
