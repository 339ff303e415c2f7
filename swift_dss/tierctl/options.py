"""The options of `dss-tier mount`, and the sizes its --cache-size takes."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from swift_dss.sizes import parse_size, shown

#: dss-tier's modes (`mount --mode`, a policy's `mode`).
TIER_MODES = ("hdd", "ssd", "lru", "dss", "tiered")
#: dss-tier's device model profiles (a model string is one, optionally with :key=value,...).
MODEL_PROFILES = ("none", "st1000nm0011", "intel710", "hdd", "ssd")


def model_error(which: str, spec: str) -> str | None:
    """Why SPEC cannot be WHICH device's model, if its profile is unknown (dss-tier
    checks the overrides when it mounts)."""
    if spec.split(":", 1)[0].lower() in MODEL_PROFILES:
        return None
    return (
        f"unknown {which} model {spec!r} ({', '.join(MODEL_PROFILES)}, "
        "optionally with :key=value,...)"
    )


@dataclass(frozen=True)
class MountOptions:
    """What a mount is asked for, apart from its SSD, HDD and mount point.

    Options left None are not passed, so the daemon's own defaults apply (the policy's mode,
    device models off).
    """

    cache_size: str
    policy: str | Path
    mode: str | None = None
    ssd_model: str | None = None
    hdd_model: str | None = None
    #: Memory holding file-system metadata (dss-tier's --meta-memory).
    meta_memory: str | None = None
    #: How metadata writes are charged (dss-tier's --meta-writes: sync or buffered).
    meta_writes: str | None = None
    #: Further arguments as they are (e.g. "--warm").
    extra: tuple[str, ...] = ()

    def args(self) -> list[str]:
        out = ["--cache-size", self.cache_size, "--policy", str(self.policy)]
        for flag, value in (
            ("--mode", self.mode),
            ("--ssd-model", self.ssd_model),
            ("--hdd-model", self.hdd_model),
            ("--meta-memory", self.meta_memory),
            ("--meta-writes", self.meta_writes),
        ):
            if value is not None:
                out += [flag, value]
        return [*out, *self.extra]


def mount_command(
    binary: str, ssd: Path, hdd: Path, mountpoint: Path, options: MountOptions
) -> list[str]:
    """The command line of a daemon in the foreground (its messages go to its output)."""
    return [
        binary, "mount", "--ssd", str(ssd), "--hdd", str(hdd), *options.args(), str(mountpoint)
    ]  # fmt: skip


#: dss-tier's --meta-writes values.
META_WRITES = ("sync", "buffered")


def models_error(ssd: str | None, hdd: str | None) -> str | None:
    """Why the SSD or HDD model cannot be, if either cannot (None: not given)."""
    for which, spec in (("SSD", ssd), ("HDD", hdd)):
        if spec is not None and (reason := model_error(which, spec)):
            return reason
    return None


def meta_memory_error(text: str) -> str | None:
    """Why TEXT cannot be a --meta-memory (a size, or 0 for none), if it cannot."""
    if str(text).strip() == "0" or cache_size_bytes(text):
        return None
    return f"metadata memory {shown(text)} is not a size such as 1GiB (0 for none)"


def cache_size_bytes(text: str) -> int:
    """Bytes in TEXT as --cache-size takes it ("256MiB", "4g", "4096"); 0 if it is none.

    The grammar is swift_dss.sizes', narrowed to what dss-tier's own parser takes: whole
    numbers, units up to TiB.
    """
    text = str(text)
    if "." in text or "p" in text.lower():
        return 0
    try:
        return parse_size(text)
    except ValueError:
        return 0
