"""The local multi-node cluster's settings (`LocalClusterConfig`) and its error."""

from __future__ import annotations

from dataclasses import dataclass, field

from swift_dss.deploy.cluster_config import ClusterConfig
from swift_dss.deploy.saio_config import SaioConfig, SaioError
from swift_dss.testbed.settings import TestbedError, TestbedSettings

#: The operator policy of the local cluster: clients may set 0 and 11-31, never the
#: storage system's own classes 1-10. max_ranges below what fits in one header line, so
#: that the limit itself can be exercised (as in the all-in-one test cluster).
DEFAULT_DSS_OPTIONS = {
    "allowed_classes": "0,11-31",
    "reserved_classes": "1-10",
    "max_ranges": "256",
}


class ClusterError(SaioError):
    """A failure of the local cluster, with a one-line explanation."""


@dataclass
class LocalClusterConfig(ClusterConfig):
    nodes: int = 4
    replicas: int = 3
    port: int = 0
    workers: int = 1
    #: Each node's backing tmpfs (tier modes: the device's SSD and HDD directories), or
    #: the tmpfs holding its plain device directory (tier mode none).
    devices_size: str = "512m"
    #: A dss-tier mode for every node's device (see docs/tier.md), or None / "none".
    tier_mode: str | None = "dss"
    tier_cache_size: str = "64MiB"
    tier_policy: str = "reference"
    tier_ssd_model: str = "none"
    tier_hdd_model: str = "none"
    tier_meta_memory: str = "0"
    dssio_backend: str = "record"
    #: Stop the tiers without writing their dirty data back to the HDD (an experiment that
    #: has measured what it needed; with slow device models the write-back takes long).
    tier_discard: bool = False
    dss_options: dict[str, str] = field(default_factory=lambda: dict(DEFAULT_DSS_OPTIONS))
    #: The replicator daemon's pause between passes; tests run passes themselves (--once).
    replicator_interval: int = 3600
    start_timeout: float = 120.0
    #: The paper's testbed emulated: proxy and client in namespaces of their own, shaped
    #: links, dilated time, the testbed's workers, timeouts and device models. None: the
    #: plain local cluster (proxy in the root namespace, no shaping).
    testbed: TestbedSettings | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.tier_mode == "none":
            self.tier_mode = None
        if isinstance(self.testbed, dict):  # from the state file
            # As for the config itself, keys this version does not know are left out.
            known = TestbedSettings.__dataclass_fields__
            self.testbed = TestbedSettings(**{k: v for k, v in self.testbed.items() if k in known})

    def validate(self) -> None:
        if not 1 <= self.nodes <= 200:
            raise ClusterError("nodes must be from 1 to 200")
        if not 1 <= self.replicas <= self.nodes:
            raise ClusterError(f"{self.replicas} replicas need 1 to {self.nodes} storage nodes")
        if self.testbed is not None:
            try:
                self.testbed.validate()
            except TestbedError as err:
                raise ClusterError(f"testbed: {err}") from None
        if self.tier_mode is not None:
            self.tier_config().validate()

    def tier_config(self) -> SaioConfig:
        """The tier settings in the form the all-in-one's tier mounting takes them."""
        ssd_model, hdd_model = self.tier_ssd_model, self.tier_hdd_model
        meta_memory, meta_writes = self.tier_meta_memory, "sync"
        if self.testbed is not None:
            ssd_model, hdd_model = self.testbed.models()
            meta_memory, meta_writes = self.testbed.meta_memory, self.testbed.meta_writes
        return SaioConfig(
            dir=self.dir,
            tier_mode=self.tier_mode,
            tier_cache_size=self.tier_cache_size,
            tier_policy=self.tier_policy,
            tier_ssd_model=ssd_model,
            tier_hdd_model=hdd_model,
            tier_meta_memory=meta_memory,
            tier_meta_writes=meta_writes,
            devices_size=self.devices_size,
        )
