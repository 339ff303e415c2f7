"""Which container and object names a request can address.

HTTP clients (requests under swiftclient, curl without ``--path-as-is``) resolve ``.`` and
``..`` path segments before they send a URL, as RFC 3986 says they should. Swift stores
such names when they arrive percent-encoded, but through these clients
``container/../x`` reaches the container ``x`` and ``a/./b`` the object ``a/b``: an upload
would create a container, and a HEAD of it would answer for an object. So the client
refuses them, with the reason, before any request.
"""

from __future__ import annotations

_DOTS = (".", "..")


def address_error(container: str, name: str | None = None) -> str | None:
    """Why ``container`` (and ``name``) cannot be addressed, or None."""
    if not container or "/" in container:
        return f"{container!r} is not a container name: one non-empty name, no '/'"
    if container in _DOTS:
        return f"container name {container!r} would be resolved away by HTTP clients"
    if name is None:
        return None
    if not name:
        return "an object name may not be empty"
    dots = [seg for seg in name.split("/") if seg in _DOTS]
    if dots:
        return (
            f"object name {name!r} has a {dots[0]!r} segment, which HTTP clients resolve "
            "away: the request would reach another path"
        )
    return None
