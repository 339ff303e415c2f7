"""Reliability scenarios on the local multi-node cluster, and `dss reliability run`.

Each scenario returns plain figures (counts, and lists naming every failure) so that the
tests assert on them and `run` writes them to DIR/reliability.json.

- :mod:`~swift_dss.reliability.client`: ``ClusterClient``, the project's client logged in to
  the cluster, with requests straight to one node's object server.
- :mod:`~swift_dss.reliability.checks`: objects stored and checked through the proxy, on
  every replica, in the record log and in a tier's cache.
- :mod:`~swift_dss.reliability.scenarios`: a device wiped, a node or a tier daemon killed
  under load, an SSD cache lost.
- :mod:`~swift_dss.reliability.soak`: the paper's workload at capacity, memory sampled.
- :mod:`~swift_dss.reliability.abuse`: policy, malformed and fuzzed inputs.
- :mod:`~swift_dss.reliability.cli`: every scenario in turn, and the ``reliability`` group.
"""
