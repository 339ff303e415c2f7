"""What the ``dss`` middleware takes from its HEAD of an object: the size its class ranges
must fit, and the status of a HEAD that failed."""

from __future__ import annotations

from swift.common.request_helpers import get_sys_meta_prefix
from swift.common.swob import Request, Response, status_map

SLO_SIZE = get_sys_meta_prefix("object") + "slo-size"


def object_size(current: Response) -> int | None:
    """The size of the object the class ranges refer to (None: not known up front)."""
    if current.headers.get("X-Object-Manifest"):
        return None
    slo_size = current.headers.get(SLO_SIZE)
    if slo_size is not None:
        # A large object's manifest: ranges refer to the object it stands for.
        return int(slo_size)
    return current.content_length


def status_response(current: Response, req: Request) -> Response:
    """A fresh response of ``current``'s status for ``req``: a HEAD's own response carries
    a HEAD's headers, wrong for any other method."""
    return status_map[current.status_int](request=req)
