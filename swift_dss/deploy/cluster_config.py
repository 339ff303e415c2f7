"""What every cluster's config shares: the directory that holds all of the cluster's state,
and the round trip through the state file."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Self


@dataclass
class ClusterConfig:
    dir: Path

    def __post_init__(self) -> None:
        self.dir = Path(self.dir).absolute()

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "dir": str(self.dir)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Self:
        # Keys this version does not know (a state file from another version) are left out.
        return cls(**{k: v for k, v in data.items() if k in cls.__dataclass_fields__})

    def validate(self) -> None:
        raise NotImplementedError
