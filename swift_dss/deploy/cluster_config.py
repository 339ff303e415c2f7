"""What every cluster's config shares: the directory that holds all of the cluster's state,
and the round trip through the state file."""

from __future__ import annotations

import dataclasses
import types
import typing
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Self

#: How a JSON value of each Python type is called in a message.
_KINDS = {
    bool: "true or false",
    int: "an integer",
    float: "a number",
    str: "a string",
    Path: "a path",
    dict: "an object",
    list: "a list",
}


def _fits(value: Any, hint: Any) -> bool:
    """VALUE is of HINT's type, not looking into a list's or an object's items."""
    origin = typing.get_origin(hint) or hint
    if origin is bool:
        return isinstance(value, bool)
    if isinstance(value, bool):
        return False  # JSON's true is no number
    if origin is float:
        return isinstance(value, int | float)
    if origin is Path:
        return isinstance(value, str)
    return isinstance(value, origin)


def json_error(value: Any, hint: Any, where: str) -> str | None:
    """Why VALUE, read from JSON, cannot be of type HINT (a dataclass: checked field by
    field; a list or object: item by item); WHERE names the value in the message."""
    union = typing.get_origin(hint) in (typing.Union, types.UnionType)
    options = typing.get_args(hint) if union else (hint,)
    if value is None and type(None) in options:
        return None
    options = tuple(o for o in options if o is not type(None))
    for option in options:
        if dataclasses.is_dataclass(option):
            return fields_error(option, value, where)
        if not _fits(value, option):
            continue
        args = typing.get_args(option)
        if isinstance(value, dict) and args:
            items = [(f"{where}.{k}", v) for k, v in value.items()]
        elif isinstance(value, list) and args:
            items = [(f"{where}[{i}]", v) for i, v in enumerate(value)]
        else:
            items = []
        return next(filter(None, (json_error(v, args[-1], name) for name, v in items)), None)
    kinds = " or ".join(_KINDS.get(typing.get_origin(o) or o, str(o)) for o in options)
    return f"{where} must be {kinds}, not {value!r}"


def fields_error(cls: type, data: Any, where: str) -> str | None:
    """Why DATA cannot be the JSON form of dataclass CLS: a field it lacks that has no
    default, or one of the wrong type. Keys CLS does not know are left to the caller."""
    if not isinstance(data, dict):
        return f"{where} must be an object, not {data!r}"
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        if f.name in data:
            if reason := json_error(data[f.name], hints[f.name], f"{where}.{f.name}"):
                return reason
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            return f"{where}.{f.name} is missing"
    return None


@dataclass
class ClusterConfig:
    dir: Path

    def __post_init__(self) -> None:
        self.dir = Path(self.dir).absolute()

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "dir": str(self.dir)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Self:
        """The config a state file holds; ValueError saying what is missing or wrong."""
        if reason := fields_error(cls, data, "config"):
            raise ValueError(reason)
        # Keys this version does not know (a state file from another version) are left out.
        return cls(**{k: v for k, v in data.items() if k in cls.__dataclass_fields__})

    def validate(self) -> None:
        raise NotImplementedError
