"""Policy files shipped with swift-dss, found by name.

Each ``*.toml`` file in this folder is one policy (the client's classification schemes, the
tier's class priorities, ...). Every file has its own format; this module only finds and
parses them, so each consumer validates what it reads.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

#: The folder holding the shipped policy files.
POLICY_DIR = Path(__file__).resolve().parent
SUFFIX = ".toml"


def available() -> list[str]:
    """Names of the shipped policies (file names without ``.toml``), sorted."""
    return sorted(p.stem for p in POLICY_DIR.glob(f"*{SUFFIX}") if p.is_file())


def policy_path(name_or_path: str | Path) -> Path:
    """The file of a shipped policy (``"reference"``, ``"lru.toml"``) or an explicit path.

    A value naming an existing file is taken as a path; otherwise it must be the name of a
    shipped policy. Raises FileNotFoundError naming the shipped policies.
    """
    given = Path(name_or_path)
    if given.is_file():
        return given
    if given.name == str(name_or_path):
        name = given.name.removesuffix(SUFFIX)
        shipped = POLICY_DIR / f"{name}{SUFFIX}"
        if shipped.is_file():
            return shipped
    names = ", ".join(available()) or "none"
    raise FileNotFoundError(f"no policy file {str(name_or_path)!r} (shipped policies: {names})")


def load_policy(name_or_path: str | Path) -> dict[str, Any]:
    """Parse a policy file (see :func:`policy_path`) as TOML.

    Raises ValueError naming the file when it is not UTF-8 TOML.
    """
    path = policy_path(name_or_path)
    with path.open("rb") as f:
        try:
            return tomllib.load(f)
        except tomllib.TOMLDecodeError as e:
            raise ValueError(f"{path}: {e}") from None
        except UnicodeDecodeError as e:
            raise ValueError(f"{path}: not UTF-8 text (byte {e.start})") from None
