"""The POST that changes an existing object's classes, and how it is kept to the upload
whose classes it changes.

The ``dss`` middleware reads the object (a HEAD) before it stores new classes (a POST): it
fits the classes to the object's size and re-sends the metadata that a POST replaces. An
upload of the same object between the two would get a POST meant for the object it
replaced: that object's metadata, and classes fitted to its size. So the POST names the
data it read, by the timestamp of its data file (:data:`DATA_TIMESTAMP`); the dss object
server refuses it with 409 where it holds newer data, and the middleware reads the object
again and retries, :data:`ATTEMPTS` times in all before it answers 409 itself. An object
server without dss ignores the header, as it ignores every backend header it does not
know. The gatekeeper strips ``X-Backend-`` headers from clients' requests: only the
middleware sets it.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping

from swift.common.http import HTTP_CONFLICT, is_success
from swift.common.swob import HTTPConflict, Request, Response
from swift.common.utils import Timestamp, close_if_possible
from swift.common.wsgi import make_pre_authed_request

from swift_dss.formats import ClassMap, to_sysmeta
from swift_dss.formats.headers import ENV_OBJECT_CLASS, ENV_RANGE_CLASS
from swift_dss.formats.sysmeta import ENVIRON_PREFIX, PREFIX, environ_key
from swift_dss.object_head import status_response

#: The ``swift.source`` of the middleware's subrequests, in the proxy's logs.
SWIFT_SOURCE = "DSS"
DATA_TIMESTAMP = "X-Backend-Dss-Data-Timestamp"
#: Stored with the classes a POST sets: the data they were set for ...
FOR_DATA = PREFIX + "For-Data"
#: ... and, on a reclassifying POST, that its user metadata is the object's own, re-sent.
KEPT_META = PREFIX + "Kept-Meta"
ATTEMPTS = 3
_PREFIX = PREFIX.lower()


def head(req: Request, app: object) -> Response:
    """The object as it is now. Pre-authorised, so that a user who may write but not read
    can still POST: call it only once the request itself is authorised, and give none of
    its answer to the caller."""
    sub = make_pre_authed_request(
        req.environ, method="HEAD", path=req.path, headers={}, swift_source=SWIFT_SOURCE
    )
    return sub.get_response(app)


def data_timestamp(current: Response) -> str | None:
    """The timestamp of the data ``current`` (a HEAD of the object) was read from, when
    the object server said (Swift's own since 2.x; not after a .meta alone)."""
    return current.headers.get("X-Backend-Data-Timestamp")


def data_is_newer(data: Timestamp, seen: str) -> bool:
    """True when the object server's data (timestamp ``data``) is newer than the data the
    POST was meant for (``seen``, the header's value). A value that is not a timestamp
    holds nothing back: only the middleware sets it, and Swift's own checks follow."""
    try:
        return data > Timestamp(seen)
    except ValueError:
        return False


def set_sysmeta(req: Request, cmap: ClassMap, current: Response | None = None) -> None:
    """Make ``cmap`` the classes ``req`` stores, in place of any it carried; for a POST,
    set for the data ``current`` (a HEAD of the object) was read from."""
    env = req.environ
    for key in [k for k in env if k.startswith(ENVIRON_PREFIX)]:
        del env[key]
    for key, value in to_sysmeta(cmap).items():
        env[environ_key(key)] = value
    seen = data_timestamp(current) if current is not None else None
    if seen:
        env[environ_key(FOR_DATA)] = seen
    # The classes travel on as sysmeta. The client's own headers would only ride along to
    # every backend request, where each header costs Swift a little in every loop over
    # the headers.
    env.pop(ENV_OBJECT_CLASS, None)
    env.pop(ENV_RANGE_CLASS, None)


def changed_under(req: Request) -> Response:
    """The answer when uploads kept replacing the object while its classes were set."""
    return HTTPConflict(
        body=f"the object was replaced {ATTEMPTS} times while its classes were being set; "
        "send the request again\n",
        request=req,
        content_type="text/plain",
    )


def post_classes(
    req: Request,
    app: object,
    env: dict,
    current: Response,
    fit: Callable[[Response], ClassMap],
    kept: Collection[str] | None,
) -> tuple[Response, ClassMap]:
    """POST ``env`` (changed in place) with the classes ``fit`` makes for the object as
    ``current`` shows it and, unless ``kept`` is None, the user metadata and the headers
    named in ``kept`` (lowercase) of ``current``, which a POST would drop; held to the
    data ``current`` was read from. Returns the answer and the classes it stored."""
    cmap = fit(current)
    # The first attempt is the request itself, logged as such; the proxy marks up its
    # environ, so a retry starts from a copy made before, logged as the middleware's.
    base = dict(env, **{"swift.source": SWIFT_SOURCE})
    for attempt in range(ATTEMPTS):
        if attempt:
            current = head(req, app)
            if not is_success(current.status_int):
                return status_response(current, req), cmap
            cmap = fit(current)
            env = dict(base)
        post = Request(env)
        for key, value in current.headers.items() if kept is not None else ():
            low = key.lower()
            if low.startswith("x-object-meta-") or low in kept:
                post.headers[key] = value
        set_sysmeta(post, cmap, current)
        seen = data_timestamp(current)
        if seen:
            post.headers[DATA_TIMESTAMP] = seen
            if kept is not None:
                post.headers[KEPT_META] = "yes"
        resp = post.get_response(app)
        if resp.status_int != HTTP_CONFLICT:
            return resp, cmap
        close_if_possible(resp.app_iter)
    return changed_under(req), cmap


def metadata_for_data(merged: dict, data: Mapping[str, str], meta: Mapping[str, str]) -> dict:
    """An object's metadata as Swift merged it from its .data (``data``) and newest .meta
    (``meta``), but without what that .meta set for other data.

    A POST applies to every upload older than it, one that reaches this server after it
    included: an upload under way when the classes were read and set. What the middleware
    set for the data it had read is no upload's but that one's: its classes (and, on a
    reclassifying POST, the metadata it re-sent) give way to the upload's own. The .meta's
    timestamp stays the object's, so that later POSTs still follow it.
    """
    meant = meta.get(FOR_DATA)
    if meant is None:
        return merged
    try:
        if Timestamp(meant) == Timestamp(data["X-Timestamp"]):
            return merged
    except (KeyError, ValueError):
        # Not a timestamp, or data without one: nothing to hold the .meta to.
        return merged
    if meta.get(KEPT_META):
        own = dict(data)
        for key in ("X-Timestamp", "Content-Type", "Content-Type-Timestamp"):
            if key in merged:
                own[key] = merged[key]
        return own
    own = {k: v for k, v in merged.items() if not k.lower().startswith(_PREFIX)}
    own.update((k, v) for k, v in data.items() if k.lower().startswith(_PREFIX))
    return own
