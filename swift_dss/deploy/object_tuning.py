"""Object-server settings for nodes whose devices are dss-tier mounts.

The object server writes a PUT's body in pieces of ``network_chunk_size`` (64 KiB in
Swift). On a tier mount each write is a round trip to the daemon, and data the tier sends
straight to the HDD (a bypassed class, mode hdd) reaches it in pieces of that size, each
paying a seek when other uploads interleave with it. A block-device cache has the kernel's
I/O scheduler merge such writes; the tier sees them as the object server issues them, so
the object server issues fewer, larger ones. 1 MiB is the largest write FUSE passes to the
daemon in one request; the price is that much memory per upload in flight.

An object server worker is one eventlet hub: a greenthread gives the others their turn
only when a socket would block. Reads and writes on a tier mount block the whole worker
for the device's time instead, and a large object that streams from or to the HDD model
more slowly than the node's link carries it never meets a full socket: it held its
worker's other requests, small GETs served from the SSD among them, for the whole
transfer (44 s, past the proxy's node timeout, in a testbed GET phase). Swift's
``cooperative_period`` yields after every N chunks of a GET's or a PUT's body; 1 gives the
others a turn after each chunk.
"""

from __future__ import annotations

from collections.abc import Mapping

#: Merged under an operator's own [app:object-server] options, which win.
TIER_OBJECT_OPTIONS: dict[str, str] = {"network_chunk_size": "1048576", "cooperative_period": "1"}


def object_options(own: Mapping[str, str], tiered: bool) -> dict[str, str]:
    """A node's object-server options: the operator's ``own``, over the tier settings when
    the node's devices are tier mounts."""
    return {**(TIER_OBJECT_OPTIONS if tiered else {}), **own}
