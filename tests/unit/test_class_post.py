"""The reclassifying POST's retries and what it carries, against a stand-in for the proxy
that answers HEAD from a list of object states and POST from a list of statuses."""

from __future__ import annotations

from collections.abc import Iterable

from swift.common.swob import Request, Response

from swift_dss.class_post import (
    ATTEMPTS,
    DATA_TIMESTAMP,
    FOR_DATA,
    KEPT_META,
    SWIFT_SOURCE,
    metadata_for_data,
    post_classes,
)
from swift_dss.formats import ClassMap, from_sysmeta
from swift_dss.formats.sysmeta import CLASS_KEY


class Proxy:
    def __init__(self, heads: list[tuple[int, dict[str, str]]], posts: list[int]) -> None:
        self.heads = heads
        self.posts = posts
        self.posted: list[dict[str, str]] = []
        self.sources: list[str | None] = []

    def __call__(self, env: dict, start_response: object) -> Iterable[bytes]:
        req = Request(env)
        if req.method == "HEAD":
            status, headers = self.heads.pop(0)
            return Response(status=status, headers=headers)(env, start_response)
        self.posted.append(dict(req.headers))
        self.sources.append(env.get("swift.source"))
        return Response(status=self.posts.pop(0), body=b"from the proxy")(env, start_response)


def state(data: str, size: int, **meta: str) -> dict[str, str]:
    return {"X-Backend-Data-Timestamp": data, "Content-Length": str(size), **meta}


def fit_to_size(current: Response) -> ClassMap:
    # Classes that tell which object state they were fitted to.
    return ClassMap.build(int(current.headers["Content-Length"]) % 200 + 11)


def run(proxy: Proxy, current: dict[str, str], kept: frozenset[str] | None) -> tuple:
    req = Request.blank("/v1/a/c/o", environ={"REQUEST_METHOD": "POST"})
    first = Response(headers=current)
    return post_classes(req, proxy, dict(req.environ), first, fit_to_size, kept)


def test_a_post_an_upload_overtook_is_made_again_for_the_upload() -> None:
    proxy = Proxy([(200, state("2.00000", 30, **{"X-Object-Meta-V": "2"}))], [409, 202])
    resp, cmap = run(proxy, state("1.00000", 20, **{"X-Object-Meta-V": "1"}), frozenset())
    assert resp.status_int == 202
    assert cmap == ClassMap.build(41)
    first, second = proxy.posted
    assert (first[DATA_TIMESTAMP], first["X-Object-Meta-V"]) == ("1.00000", "1")
    assert (second[DATA_TIMESTAMP], second["X-Object-Meta-V"]) == ("2.00000", "2")
    assert second[FOR_DATA] == "2.00000" and second[KEPT_META] == "yes"
    assert from_sysmeta(second) == ClassMap.build(41)
    # The first POST is the request itself; the second, the middleware's own, as logged.
    assert proxy.sources == [None, SWIFT_SOURCE]


def test_uploads_that_keep_overtaking_end_in_409_with_a_reason() -> None:
    heads = [(200, state(f"{n}.00000", 20)) for n in range(2, ATTEMPTS + 1)]
    proxy = Proxy(heads, [409] * ATTEMPTS)
    resp, _ = run(proxy, state("1.00000", 20), frozenset())
    assert resp.status_int == 409
    assert b"replaced" in resp.body
    assert len(proxy.posted) == ATTEMPTS and not proxy.heads


def test_an_object_deleted_in_between_answers_as_its_head() -> None:
    proxy = Proxy([(404, {})], [409])
    resp, _ = run(proxy, state("1.00000", 20), frozenset())
    assert resp.status_int == 404
    assert len(proxy.posted) == 1


def test_the_client_s_own_metadata_is_not_replaced_or_marked_as_kept() -> None:
    current = state("1.00000", 20, **{"X-Object-Meta-V": "1", "Content-Disposition": "x"})
    proxy = Proxy([], [202])
    resp, _ = run(proxy, current, None)
    assert resp.status_int == 202
    (posted,) = proxy.posted
    assert "X-Object-Meta-V" not in posted and "Content-Disposition" not in posted
    assert KEPT_META not in posted and posted[FOR_DATA] == "1.00000"
    proxy = Proxy([], [202])
    run(proxy, current, frozenset({"content-disposition"}))
    (posted,) = proxy.posted
    assert posted["X-Object-Meta-V"] == "1" and posted["Content-Disposition"] == "x"


def test_without_the_data_s_timestamp_the_post_is_held_to_nothing() -> None:
    # An object server that does not say which data it read from (not Swift's).
    proxy = Proxy([], [202])
    run(proxy, {"Content-Length": "20"}, frozenset())
    (posted,) = proxy.posted
    assert DATA_TIMESTAMP not in posted and FOR_DATA not in posted and KEPT_META not in posted


def test_a_meta_for_other_data_gives_way_only_in_what_it_set() -> None:
    data = {"X-Timestamp": "2.00000", "X-Object-Meta-V": "2", CLASS_KEY: "21", "Etag": "e"}
    meta = {"X-Timestamp": "3.00000", "X-Object-Meta-V": "1", CLASS_KEY: "12"}
    merged = {**data, **meta}
    assert metadata_for_data(merged, data, meta) == merged
    for marker in ("2.00000", "not a timestamp"):
        assert metadata_for_data(merged, data, {**meta, FOR_DATA: marker}) == merged
    other = {**meta, FOR_DATA: "1.00000"}
    assert metadata_for_data(merged, data, other) == {**merged, CLASS_KEY: "21"}
    kept = {**other, KEPT_META: "yes"}
    assert metadata_for_data(merged, data, kept) == {**data, "X-Timestamp": "3.00000"}
