"""The size an object's class ranges must fit, from a PUT or from the ``dss`` middleware's
HEAD of the object, and the status of a HEAD that failed.

A large object's manifest stands for the object: its ranges refer to that object's bytes,
not to the manifest's own. slo works the size out before the manifest is stored; a
dynamic large object's (``X-Object-Manifest``) is whatever its segments add up to when it
is read, so its ranges are taken as they are, as a chunked PUT's are.
"""

from __future__ import annotations

from swift.common.request_helpers import get_sys_meta_prefix
from swift.common.swob import Request, Response, status_map

from swift_dss.formats.sysmeta import environ_key

SLO_SIZE = get_sys_meta_prefix("object") + "slo-size"
_ENV_SLO_SIZE = environ_key(SLO_SIZE)


def put_size(env: dict) -> int | None:
    """The size a PUT's class ranges must fit (None: not known up front). Raises ValueError
    for a Content-Length that is not a number."""
    if env.get("HTTP_X_OBJECT_MANIFEST"):
        return None
    slo_size = env.get(_ENV_SLO_SIZE)
    if slo_size is not None:
        return int(slo_size)
    length = env.get("CONTENT_LENGTH")
    # As swob's req.content_length, without its trip through the header proxy.
    return int(length) if length is not None else None


def object_size(current: Response) -> int | None:
    """The size of the object the class ranges refer to (None: not known up front)."""
    if current.headers.get("X-Object-Manifest"):
        return None
    slo_size = current.headers.get(SLO_SIZE)
    if slo_size is not None:
        return int(slo_size)
    return current.content_length


def status_response(current: Response, req: Request) -> Response:
    """A fresh response of ``current``'s status for ``req``: a HEAD's own response carries
    a HEAD's headers, wrong for any other method."""
    return status_map[current.status_int](request=req)
