"""Asking the auth middleware now what the proxy server will ask it later.

The proxy server authorises an object request only once it knows the container's ACLs,
deep inside its controller. The ``dss`` middleware sits before it and must not make a
request succeed or fail differently, so before it acts on what a request implies (the
object's stored classes, its size) it asks ``swift.authorize`` the proxy's own question:
the same request, with the container's read ACL for GET and HEAD and its write ACL
otherwise. A request that a signature admits (a temporary URL, an S3 presigned URL) is
granted its own method alone, whatever else its signer may do.
"""

from __future__ import annotations

from swift.common.swob import HTTPUnauthorized, Request, Response
from swift.proxy.controllers.base import get_container_info

READ_METHODS = ("GET", "HEAD")
#: The user tempurl gives a request whose signature it accepted (staticweb checks it too).
TEMPURL_USER = ".wsgi.tempurl"
#: The swift.source of the requests s3api makes of S3 ones.
S3_SOURCE = "S3"


def authorize_as_proxy(
    env: dict, app: object, swift_source: str, method: str | None = None
) -> Response | None:
    """None when the proxy would let ``method`` (default: the request's own) on the object
    at ``env``'s path past authorisation, else the denial the auth middleware answers."""
    authorize = env.get("swift.authorize")
    if authorize is None:
        return None
    if method is not None and method != env["REQUEST_METHOD"]:
        if _signed_for_its_method(env, method):
            return HTTPUnauthorized(request=Request(env))
        # Another method's question must not leave its traces (swift_owner) on the request.
        env = {**env, "REQUEST_METHOD": method}
    method = env["REQUEST_METHOD"]
    info = get_container_info(env, app, swift_source=swift_source)
    req = Request(env)
    req.acl = info["read_acl"] if method in READ_METHODS else info["write_acl"]
    if method == "PUT":
        req.environ["swift_sync_key"] = info["sync_key"]
    return authorize(req)


def _signed_for_its_method(env: dict, method: str) -> bool:
    """True when the request's grant is a signature for its own method, which the auth
    middleware no longer tells apart: its swift.authorize answers for the signer.

    - A temporary URL grants the method it was signed for (and HEAD, whatever that was).
      tempurl checks that once; the swift.authorize it leaves allows every method.
    - An S3 presigned URL (query authentication: s3api leaves no Authorization header)
      grants its one operation, though the signer may do more.
    """
    if env.get("REMOTE_USER") == TEMPURL_USER:
        return method != "HEAD"
    return env.get("swift.source") == S3_SOURCE and "HTTP_AUTHORIZATION" not in env
