"""The all-in-one cluster's settings (`SaioConfig`), their checks, and its error."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from swift_dss.deploy.cluster_config import ClusterConfig
from swift_dss.deploy.tempauth import DEFAULT_USERS, tempauth_options
from swift_dss.policies import policy_path
from swift_dss.sizes import shown
from swift_dss.tierctl import TierError, binary
from swift_dss.tierctl.options import (
    TIER_MODES,
    MountOptions,
    cache_size_bytes,
    meta_memory_error,
    models_error,
)

#: Device model profiles dss-tier knows (each may carry ":key=value,..." overrides).
DEFAULT_CACHE_SIZE = "256MiB"


class SaioError(Exception):
    """A failure with a one-line explanation for the operator."""


@contextlib.contextmanager
def tier_errors(error: type[Exception] = SaioError) -> Iterator[None]:
    """Re-raise what the dss-tier face raises as ERROR, the cluster's own one-line error."""
    try:
        yield
    except TierError as err:
        raise error(str(err)) from None


def tier_binary() -> str:
    """The dss-tier binary, or a one-line SaioError saying why the tier cannot run."""
    try:
        return binary.require(hint="--tier-mode none runs on plain directories")
    except TierError as err:
        raise SaioError(str(err)) from None


@dataclass
class SaioConfig(ClusterConfig):
    port: int = 8080
    dss: bool = True
    dssio_backend: str = "auto"
    #: A dss-tier mode for every device (see docs/tier.md), or None / "none" for plain
    #: directories on a tmpfs.
    tier_mode: str | None = "dss"
    #: The SSD cache of each device. Mode ssd pins everything on the SSD, so there the
    #: default is the whole backing tmpfs (devices_size) unless another size is set.
    tier_cache_size: str = DEFAULT_CACHE_SIZE
    #: A policy shipped in swift_dss/policies/ by name, or a policy file's path.
    tier_policy: str = "reference"
    tier_ssd_model: str = "none"
    tier_hdd_model: str = "none"
    #: Memory each tier counts metadata as held in, unread from its cache and devices
    #: (dss-tier's --meta-memory; 0: none).
    tier_meta_memory: str = "0"
    #: How each tier mount charges metadata writes (dss-tier's --meta-writes).
    tier_meta_writes: str = "sync"
    devices: int = 1
    replicas: int = 1
    workers: int = 1
    #: The tmpfs holding the devices (tier modes: every device's SSD and HDD directories).
    devices_size: str = "4g"
    dss_options: dict[str, str] = field(default_factory=dict)
    object_options: dict[str, str] = field(default_factory=dict)
    #: Settings of the proxy app (e.g. node_timeout, conn_timeout for slow modelled devices).
    proxy_options: dict[str, str] = field(default_factory=dict)
    #: tempauth users, "account:user" -> "key [group ...]" (groups such as .admin).
    tempauth_users: dict[str, str] = field(default_factory=lambda: dict(DEFAULT_USERS))
    #: At `down`, kill the tier daemons instead of unmounting them: the dirty blocks are
    #: not written back, so the devices' data is lost. For runs that measure and throw the
    #: cluster away, where the write-back through an HDD model takes minutes.
    tier_discard: bool = False
    start_timeout: float = 90.0

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.tier_mode == "none":
            self.tier_mode = None

    def tier_cache(self) -> str:
        """The --cache-size each device's dss-tier mount gets."""
        if self.tier_mode == "ssd" and self.tier_cache_size == DEFAULT_CACHE_SIZE:
            return self.devices_size
        return self.tier_cache_size

    def tier_policy_file(self) -> Path:
        try:
            return policy_path(self.tier_policy).absolute()
        except FileNotFoundError as err:
            raise SaioError(str(err)) from None

    def tier_options(self) -> MountOptions:
        """What each device's dss-tier mount is asked for."""
        return MountOptions(
            cache_size=self.tier_cache(),
            policy=self.tier_policy_file(),
            mode=str(self.tier_mode),
            ssd_model=self.tier_ssd_model,
            hdd_model=self.tier_hdd_model,
            meta_memory=self.tier_meta_memory,
            meta_writes=self.tier_meta_writes,
        )

    def validate(self) -> None:
        if self.tier_mode is not None and self.tier_mode not in TIER_MODES:
            raise SaioError(f"unknown tier mode {self.tier_mode!r} (none, {', '.join(TIER_MODES)})")
        if not 0 <= self.port < 65536:
            raise SaioError(f"port {self.port} is out of range")
        if self.devices < 1 or self.workers < 0:
            raise SaioError("devices must be at least 1 and workers at least 0")
        if not 1 <= self.replicas <= self.devices:
            raise SaioError(f"{self.replicas} replicas need 1 to {self.devices} devices")
        try:
            tempauth_options(self.tempauth_users)
        except ValueError as err:
            raise SaioError(str(err)) from None
        if self.tier_mode is None:
            return
        what = "tier cache size" if self.tier_cache() == self.tier_cache_size else "devices size"
        if not cache_size_bytes(self.tier_cache()):
            raise SaioError(f"{what} {shown(self.tier_cache())} is not a size such as 256MiB")
        self.tier_policy_file()
        if reason := models_error(self.tier_ssd_model, self.tier_hdd_model):
            raise SaioError(reason)
        if reason := meta_memory_error(self.tier_meta_memory):
            raise SaioError(reason)
        tier_binary()
