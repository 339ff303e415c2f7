"""The emulated testbed's settings: link rates, the dilation factor, workers, Swift's
timeouts and the device models, and what they become once dilated.

The paper's testbed (Chen, Mesnier, Hahn; MSST 2014): one client and one proxy on 10 GbE,
four storage nodes on 1 GbE, each with an Intel 710 SSD and a Seagate Constellation HDD;
Swift with 3 replicas, conn_timeout 0.5 s, 32 proxy workers and 8 per account, container
and object server.
"""

from __future__ import annotations

from dataclasses import dataclass

from swift_dss.testbed.congestion import HOST_DEFAULT, PAPER, name_error
from swift_dss.testbed.dilation import Dilation, DilationError, with_override
from swift_dss.testbed.shaping import (
    DEFAULT_BURST,
    MIN_BURSTS,
    ShapingError,
    full_queue_seconds,
    parse_rate,
)
from swift_dss.testbed.tcp_timers import LINUX_RTO_MIN_MS
from swift_dss.tierctl.options import META_WRITES, meta_memory_error, models_error

#: The paper's workers. On a 2-core machine 32 + 4 x 3 x 8 = 128 server processes would
#: spend the cores switching between them, so the defaults below are scaled down.
PAPER_PROXY_WORKERS = 32
PAPER_SERVER_WORKERS = 8
#: Swift's own defaults of the timeouts the testbed does not make settings of; dilated
#: like the rest, since a wait that does not stretch with K would cut short K times sooner
#: in the emulated testbed's time.
POST_QUORUM_TIMEOUT = 0.5
CONTAINER_UPDATE_TIMEOUT = 1.0
#: The proxy's windows, Swift's defaults, dilated for the same reason: how long a node
#: that timed out too often is left out (and over what span its errors count), and how
#: long an account's or container's existence stays cached. Left at 60 s, a node left
#: out stayed out 60/K s of emulated time, so how often PUTs found too few nodes
#: depended on K.
PROXY_INTERVALS = {
    "error_suppression_interval": 60,
    "recheck_account_existence": 60,
    "recheck_container_existence": 60,
}
#: Swift's error_suppression_limit: a node with more errors than this within the
#: interval above is left out for that interval.
SWIFT_ERROR_LIMIT = 10
#: The largest --error-limit: beyond any run's request count, so no node is left out.
MAX_ERROR_LIMIT = 10**9
#: Swift's memcache client: connections per proxy worker, and its timeouts to connect,
#: to wait for a pooled connection and for an answer.
MEMCACHE_CONNECTIONS_PER_WORKER = 2
MEMCACHE_TIMEOUTS = {"connect_timeout": 0.3, "pool_timeout": 1.0, "io_timeout": 2.0}
#: The experiments' HDD on the testbed: the paper's disk behind a modelled ext4 page cache
#: (docs/tier.md). 64 MiB is about a fifth of what each device stores at the caching
#: experiment's default scale, as a storage server's memory would be a fraction of its
#: disk's data; its 13 MiB dirty limit is above most objects and far below the large
#: ones, so throttling and periodic flushing both happen. Its files lie over 70 GiB: the
#: paper kept a working set of about 100 GB, three replicas on four disks, 75 GB each,
#: and a fresh ext4 keeps that near the start of its 1 TB; spread over the whole disk,
#: every switch between files paid the average seek of the full stroke.
TESTBED_HDD = "st1000nm0011:pagecache=64MiB,span=70GiB"
#: Roles with a link of their own besides the storage nodes.
ROLES = ("client", "proxy")


class TestbedError(ValueError):
    """A testbed setting that cannot be used, with a one-line reason."""

    __test__ = False  # not a test class, whatever pytest makes of the name


#: The longest queue a link may keep, in emulated milliseconds.
MAX_LINK_QUEUE_MS = 10_000
#: The largest minimum retransmission timeout, in emulated ms.
MAX_RTO_MIN_MS = 10_000
#: What a run recorded before each of these was a setting had (a kept run without the
#: key): the host's congestion control, Swift's error limit, metadata writes that wait,
#: the 128 KiB bucket and the kernel's undilated minimum RTO. The link queue, which
#: depends on the run's K, is `UNRECORDED_REAL_QUEUE_MS`.
UNRECORDED = {
    "tcp_congestion": HOST_DEFAULT,
    "error_limit": SWIFT_ERROR_LIMIT,
    "meta_writes": "sync",
    "link_burst": "gso",
    "tcp_rto_min_ms": 0,
}
#: The real queue every link kept before the queue was a setting (runs that record no
#: `link_queue_ms`): 20 ms at any K, so 20 / K ms of the emulated testbed's time.
UNRECORDED_REAL_QUEUE_MS = 20.0


def integer_in(value: object, low: int, high: int) -> bool:
    """Whether VALUE is an integer (not a bool) in [LOW, HIGH]."""
    return not isinstance(value, bool) and isinstance(value, int) and low <= value <= high


def number_in(value: object, high: float) -> bool:
    """Whether VALUE is a number (not a bool) in (0, HIGH]."""
    return not isinstance(value, bool) and isinstance(value, int | float) and 0 < value <= high


@dataclass
class TestbedSettings:
    __test__ = False  # not a test class, whatever pytest makes of the name

    #: K: every link rate divided by it, every timeout and device time multiplied by it.
    dilation: int = 1
    client_rate: str = "10gbit"
    proxy_rate: str = "10gbit"
    storage_rate: str = "1gbit"
    #: One proxy worker per core, and one per storage server (4 nodes x 3 servers are
    #: already 12 processes on 2 cores).
    proxy_workers: int = 2
    server_workers: int = 1
    #: Swift's timeouts before dilation: conn_timeout is the paper's, the others Swift's
    #: defaults.
    conn_timeout: float = 0.5
    node_timeout: float = 10.0
    client_timeout: float = 60.0
    ssd_model: str = "intel710"
    hdd_model: str = "st1000nm0011"
    #: Memory a storage node's kernel keeps file-system metadata in (inodes, dentries,
    #: directory and xattr blocks), not dilated or rate-scaled: the paper's storage nodes
    #: had 24 GB, and Swift drops object data from the page cache, so their metadata
    #: stayed in memory. dss-tier counts metadata reads of blocks held there as reaching
    #: neither its cache nor a device (its --meta-memory).
    meta_memory: str = "24GiB"
    #: How dss-tier charges metadata writes (its --meta-writes): "sync", each waits for
    #: its device; "buffered", each keeps its device busy but returns at once and an fsync
    #: waits for them, as ext4's journal does.
    meta_writes: str = "sync"
    #: Every byte rate (each link; each device model's transfer rates and byte gaps,
    #: dss-tier's `rate_scale`) times this, before dilation. Set to a workload's object
    #: size scale, a scaled object's transfer takes as long as the full-size one's on the
    #: paper's hardware, and seeks, per-operation latencies and CPU keep their share.
    rate_scale: float = 1.0
    #: Each link's queue, in the emulated testbed's milliseconds (tc's tbf `latency`, times
    #: K on the veths): how long a saturated link's queue grows before it drops. 3 ms is
    #: 375 KB at 1 Gbit/s, a commodity switch port's buffer of the paper's time.
    link_queue_ms: float = 3.0
    #: The smallest token bucket of each link's tbf (swift_dss.testbed.shaping's
    #: MIN_BURSTS): "frames", a few Ethernet frames, so that the queue above is most of
    #: what a full queue holds; "gso", 128 KiB, which at the scaled rates holds more than
    #: the default queue itself.
    link_burst: str = DEFAULT_BURST
    #: Every node's TCP congestion control (swift_dss.testbed.congestion): the paper's
    #: CUBIC; empty: the host's default, whatever that is.
    tcp_congestion: str = PAPER
    #: TCP's minimum retransmission timeout on every node, in emulated ms (times K in each
    #: namespace's tcp_rto_min_us, swift_dss.testbed.tcp_timers): Linux's 200 ms, as the
    #: paper's kernel had; 0 leaves the kernel's own, 200 ms of real time.
    tcp_rto_min_ms: float = LINUX_RTO_MIN_MS
    #: The proxy's error_suppression_limit (Swift's default, as the paper's Swift had):
    #: a setting so that a run can tell the failures the errors of one phase cause in
    #: the next (a node left out) from those of the devices themselves.
    error_limit: int = SWIFT_ERROR_LIMIT

    def validate(self) -> None:
        scale = self.rate_scale
        if not number_in(scale, 1):
            raise TestbedError(f"rate_scale must be a number in (0, 1], not {scale!r}")
        try:
            for rate in (self.client_rate, self.proxy_rate, self.storage_rate):
                parse_rate(rate)
            self.models()
        except (DilationError, ShapingError) as err:
            raise TestbedError(str(err)) from None
        if reason := models_error(self.ssd_model, self.hdd_model):
            raise TestbedError(reason)
        if self.meta_writes not in META_WRITES:
            raise TestbedError(
                f"meta_writes must be one of {', '.join(META_WRITES)}, not {self.meta_writes!r}"
            )
        if reason := meta_memory_error(self.meta_memory):
            raise TestbedError(reason)
        for name in ("proxy_workers", "server_workers"):
            value = getattr(self, name)
            if not integer_in(value, 1, 64):
                raise TestbedError(f"{name} must be an integer from 1 to 64, not {value!r}")
        for name in ("conn_timeout", "node_timeout", "client_timeout"):
            if not 0 < getattr(self, name) <= 3600:
                raise TestbedError(f"{name} must be more than 0 and at most 3600 seconds")
        queue = self.link_queue_ms
        if not number_in(queue, MAX_LINK_QUEUE_MS):
            raise TestbedError(
                f"link_queue_ms must be more than 0 and at most {MAX_LINK_QUEUE_MS}, not {queue!r}"
            )
        if self.link_burst not in MIN_BURSTS:
            raise TestbedError(
                f"link_burst must be one of {', '.join(MIN_BURSTS)}, not {self.link_burst!r}"
            )
        rto = self.tcp_rto_min_ms
        if isinstance(rto, bool) or not (rto == 0 or number_in(rto, MAX_RTO_MIN_MS)):
            raise TestbedError(
                f"tcp_rto_min_ms must be 0 (the kernel's) or more than 0 and at most "
                f"{MAX_RTO_MIN_MS}, not {rto!r}"
            )
        if reason := name_error(self.tcp_congestion):
            raise TestbedError(reason)
        if not integer_in(limit := self.error_limit, 0, MAX_ERROR_LIMIT):
            raise TestbedError(
                f"error_limit must be an integer from 0 to {MAX_ERROR_LIMIT}, not {limit!r}"
            )

    @property
    def dilated(self) -> Dilation:
        return Dilation(self.dilation)

    def link_rate(self, role: str) -> int:
        """The dilated rate (bit/s) of ROLE's link: "client", "proxy" or a storage node."""
        text = {"client": self.client_rate, "proxy": self.proxy_rate}.get(role, self.storage_rate)
        return self.dilated.rate(round(parse_rate(text) * self.rate_scale))

    def link_queue(self) -> float:
        """Each link's queue in real milliseconds: the emulated one, K times longer."""
        return self.dilated.timeout(self.link_queue_ms)

    def rto_min_us(self) -> int | None:
        """Every namespace's tcp_rto_min_us: the emulated minimum K times longer (None:
        leave the kernel's)."""
        if not self.tcp_rto_min_ms:
            return None
        return round(self.dilated.timeout(self.tcp_rto_min_ms) * 1000)

    def full_link_queue_ms(self, role: str) -> float:
        """How long a full queue of ROLE's link holds a packet, in emulated ms: the set
        queue plus tbf's burst at the link's scaled rate."""
        seconds = full_queue_seconds(self.link_rate(role), self.link_queue(), self.link_burst)
        return seconds * 1000 / self.dilation

    def _timeouts(self) -> dict[str, str]:
        dil = self.dilated
        return {
            "conn_timeout": f"{dil.timeout(self.conn_timeout):g}",
            "node_timeout": f"{dil.timeout(self.node_timeout):g}",
            "client_timeout": f"{dil.timeout(self.client_timeout):g}",
        }

    def proxy_options(self) -> dict[str, str]:
        """[app:proxy-server] timeouts and intervals, dilated."""
        opts = self._timeouts()
        return {
            **opts,
            # A GET resumed on another replica waits as long as a fresh request would.
            "recoverable_node_timeout": opts["node_timeout"],
            # The wait for the replicas past a quorum (Swift's 0.5 s).
            "post_quorum_timeout": f"{self.dilated.timeout(POST_QUORUM_TIMEOUT):g}",
            **{k: f"{self.dilated.timeout(v):g}" for k, v in PROXY_INTERVALS.items()},
            "error_suppression_limit": str(self.error_limit),
        }

    def memcache_options(self) -> dict[str, str]:
        """[filter:cache] settings: the paper's proxy had PAPER_PROXY_WORKERS workers with
        Swift's connection pool each, and ours has their connections spread over its fewer
        workers; the memcache timeouts are dilated. With Swift's 2 connections and 1 s
        pool wait per worker, tokens went unread under load and requests were answered
        401, since tempauth takes an unreadable token for an unknown one."""
        pool = MEMCACHE_CONNECTIONS_PER_WORKER * PAPER_PROXY_WORKERS
        return {
            "memcache_max_connections": str(-(-pool // self.proxy_workers)),
            **{k: f"{self.dilated.timeout(v):g}" for k, v in MEMCACHE_TIMEOUTS.items()},
        }

    def object_options(self) -> dict[str, str]:
        """[app:object-server] timeouts, dilated: its container updates connect and wait
        as the proxy does, a PUT waits for them as long as Swift's own 1 s stretched, and a
        client (the proxy) may pause as long between chunks."""
        return {
            **self._timeouts(),
            "container_update_timeout": f"{self.dilated.timeout(CONTAINER_UPDATE_TIMEOUT):g}",
        }

    def models(self) -> tuple[str, str]:
        """The SSD and HDD model strings for dss-tier, rate-scaled and K times slower."""
        ssd, hdd = (
            self.dilated.model(self._rate_scaled(m)) for m in (self.ssd_model, self.hdd_model)
        )
        return ssd, hdd

    def _rate_scaled(self, spec: str) -> str:
        if self.rate_scale == 1:
            return spec
        return with_override(spec, "rate_scale", f"{self.rate_scale:g}")
