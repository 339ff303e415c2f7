"""Swift's logs in a cluster's directory: a server's lines, and where proxy_logging puts
each field of an access line.

The proxy's access-line fields are read by position, in proxy_logging's default order
(`log_msg_template` unset), after the logger's "proxy-server: " prefix.
"""

from __future__ import annotations

from pathlib import Path

PROXY_PREFIX = "proxy-server: "
#: Access-line fields: the method, the path, the status, the transaction id, the request
#: time in seconds, and the subrequest's source ("-" for a client's request).
METHOD, PATH, STATUS, TXN, REQUEST_TIME, SOURCE = 3, 4, 6, 13, 15, 16


def lines(cluster_dir: Path, server: str) -> list[str]:
    """Every line SERVER ("proxy-server", "object-server", ...) logged under a cluster's
    directory: the all-in-one cluster keeps its logs in log/, the testbed its nodes' in
    nodes/<node>/log/ and the proxy's in proxy/log/. Empty when there is none."""
    out: list[str] = []
    for log in sorted(cluster_dir.glob(f"**/{server}.log")):
        out.extend(log.read_text(errors="replace").splitlines())
    return out
