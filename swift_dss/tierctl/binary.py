"""Where the dss-tier binary is, and why it cannot run here."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from swift_dss.tierctl.errors import TierError

NAME = "dss-tier"
#: What `make setup` builds in this checkout (the benches and the tier tests use it as is).
SOURCE_BUILD = Path(__file__).resolve().parents[2] / "tier" / "target" / "release" / NAME
NO_FUSE = "dss-tier mounts need FUSE: /dev/fuse and fusermount3 (apt-get fuse3)"


def find() -> str | None:
    """dss-tier on PATH, else beside this Python (a venv's bin/, where `make setup` links
    it), else None."""
    return shutil.which(NAME) or shutil.which(NAME, path=str(Path(sys.executable).parent))


def fuse_missing() -> bool:
    return shutil.which("fusermount3") is None or not Path("/dev/fuse").exists()


def why_unusable(path: str | Path | None, hint: str = "") -> str | None:
    """Why the binary at PATH (None: not found) cannot mount here, or None if it can.
    HINT is added to the advice on a missing binary."""
    if path is None or not Path(path).exists():
        advice = f"make setup builds it; {hint}" if hint else "make setup builds it"
        return f"the dss-tier binary is missing ({advice})"
    if fuse_missing():
        return NO_FUSE
    return None


def require(hint: str = "") -> str:
    """The dss-tier binary, or a TierError saying why the tier cannot run."""
    path = find()
    reason = why_unusable(path, hint)
    if reason is not None or path is None:
        raise TierError(reason)
    return path


def resolve(path: str | Path | None) -> str:
    """PATH as given, or the binary `require` finds when PATH is None."""
    return require() if path is None else str(path)
