"""Random Swift requests carrying classes, held against a model of what each object holds.

Hypothesis draws sequences of PUTs (plain, chunked, with a class file in front of the
data), reclassifications (POST, GET, PUT of a class file), POSTs of user metadata, COPYs
(COPY and X-Copy-From, with and without classes), ranged and whole GETs and DELETEs, with
class headers well-formed, malformed, out of the object or not settable. After every
request:

- the status is the one the protocol gives (docs/protocol.md): 201/202 for what is
  valid, else 400, 403 or 404 in the order the middleware checks, never a 5xx;
- a refused request changed nothing;
- the object's data and ETag, and its classes as HEAD and GET answer them, are the model's;
- the bytes a PUT wrote and a whole GET read reached dssio with the model's classes.

The classes the oracle expects are built with ``swift_dss.formats`` (whose parsing has
unit tests of its own): what is tested here is every path they take through the proxy,
the object servers and dssio. `make test` runs a fixed draw; `HTTP_OPS_EXAMPLES` draws
more (`make properties`).
"""

from __future__ import annotations

import hashlib
import os
import uuid
from dataclasses import dataclass

import pytest
from hypothesis import Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, precondition, rule, run_state_machine_as_test

from swift_dss.formats import (
    ClassError,
    ClassLimitError,
    ClassMap,
    classmap_from_headers,
    classmap_to_headers,
    encode_blocks,
    encode_object,
    encode_ranges,
    parse_classfile,
)

from .helpers import Swift, byte_classes, recorded

pytestmark = pytest.mark.integration

EXAMPLES = int(os.environ.get("HTTP_OPS_EXAMPLES", "12"))
#: Shrinking replays hundreds of request sequences: `make test` reports a failing draw as
#: drawn (at most 40 steps); HTTP_OPS_SHRINK=1 shrinks it to a short sequence.
PHASES = [p for p in Phase if p != Phase.shrink or os.environ.get("HTTP_OPS_SHRINK")]
NAMES = ["o0", "o1", "o2"]
#: The session cluster lets clients set 0 and 11-31; 1-10 are reserved, 32-255 not allowed.
SETTABLE = [0, 11, 25, 26, 31]
NOT_SETTABLE = [5, 255]
MALFORMED_OBJECT = ["", "abc", "25.5", "0x19", "256", "-1", "25000000000"]
MALFORMED_RANGES = ["0-64", "0-4-25,", "0-0-25", "0-4-25,2-4-26", "0-4-300", "--", "a-b-c"]

names = st.sampled_from(NAMES)
sizes = st.one_of(st.sampled_from([0, 1, 511, 512, 513, 4096]), st.integers(0, 40_000))
classes = st.one_of(st.sampled_from(SETTABLE), st.sampled_from(NOT_SETTABLE))
ranges = st.lists(st.tuples(st.integers(0, 90), st.integers(1, 6), classes), min_size=1, max_size=4)


@st.composite
def class_headers(draw: st.DrawFn) -> dict[str, str]:
    """X-DSS-Object-Class and X-DSS-Range-Class, each absent, valid or malformed."""
    headers = {}
    kind = draw(st.sampled_from(["none", "valid", "valid", "malformed"]))
    if kind != "none" and draw(st.booleans()):
        if kind == "malformed" and draw(st.booleans()):
            headers["X-DSS-Object-Class"] = draw(st.sampled_from(MALFORMED_OBJECT))
        else:
            headers["X-DSS-Object-Class"] = str(draw(classes))
    if kind != "none" and (not headers or draw(st.booleans())):
        if kind == "malformed" and "X-DSS-Object-Class" not in headers:
            headers["X-DSS-Range-Class"] = draw(st.sampled_from(MALFORMED_RANGES))
        else:
            headers["X-DSS-Range-Class"] = ",".join(f"{o}-{n}-{c}" for o, n, c in draw(ranges))
    return headers


@st.composite
def class_files(draw: st.DrawFn) -> tuple[bytes, int]:
    """A class file (object-, range- or block-based) and its BLK_SECTORS (0: none)."""
    kind = draw(st.sampled_from(["object", "ranges", "blocks"]))
    if kind == "object":
        return encode_object(draw(classes)), 0
    if kind == "ranges":
        return encode_ranges(draw(ranges)), 0
    blk = draw(st.sampled_from([1, 8, 64]))
    return encode_blocks(draw(st.lists(classes, max_size=12)), blk), blk


@dataclass
class Stored:
    data: bytes
    cmap: ClassMap


class Refused(Exception):
    """The statuses a request may be refused with, in the order the middleware checks."""

    def __init__(self, *statuses: int) -> None:
        super().__init__(statuses)
        self.statuses = statuses


def _syntax(check: object) -> ClassMap | None:
    try:
        return check()
    except ClassLimitError:
        raise Refused(413) from None
    except ClassError:
        raise Refused(400) from None


def _settable(cmap: ClassMap | None) -> None:
    if cmap is not None and not cmap.classes() <= set(SETTABLE):
        raise Refused(403)


def _fits(cmap: ClassMap, size: int, block_sectors: int = 0) -> ClassMap:
    try:
        return cmap.fitted(size, block_sectors)
    except ClassError:
        raise Refused(400) from None


class ClassesAgainstModel(RuleBasedStateMachine):
    def __init__(self, swift: Swift, saio: object) -> None:
        super().__init__()
        self.swift, self.saio = swift, saio
        self.container = f"ops-{uuid.uuid4().hex[:8]}"
        assert self.request("PUT", self.container).status_code == 201
        self.model: dict[str, Stored] = {}

    def request(self, method: str, path: str, **kwargs: object) -> object:
        resp = self.swift.request(method, path, **kwargs)
        assert resp.status_code < 500, (method, path, kwargs.get("headers"), resp.text)
        return resp

    def path(self, name: str) -> str:
        return f"{self.container}/{name}"

    def expect(self, resp: object, outcome: object, success: int) -> bool:
        """Check ``resp`` against the oracle's ``outcome``; True when it should succeed."""
        if isinstance(outcome, Refused):
            assert resp.status_code in outcome.statuses, (resp.status_code, resp.text)
            assert resp.text.strip() and "\n" not in resp.text.strip(), resp.text
            return False
        assert resp.status_code == success, (resp.status_code, resp.text)
        return True

    def check_object(self, name: str) -> None:
        head = self.request("HEAD", self.path(name))
        stored = self.model.get(name)
        if stored is None:
            assert head.status_code == 404
            return
        assert head.status_code == 200
        assert head.headers["Etag"] == hashlib.md5(stored.data).hexdigest()
        self.check_classes(head, stored.cmap)

    @staticmethod
    def check_classes(resp: object, cmap: ClassMap) -> None:
        want = classmap_to_headers(cmap)
        got = {k: resp.headers.get(k) for k in ("X-DSS-Object-Class", "X-DSS-Range-Class")}
        assert got == {k: want.get(k) for k in got}

    def reached_dssio(self, io: list, op: str, stored: Stored) -> None:
        want = [stored.cmap.class_at(i) for i in range(len(stored.data))]
        assert byte_classes(io, op, len(stored.data)) == want, op

    # -- writes -----------------------------------------------------------------------

    @rule(name=names, size=sizes, headers=class_headers(), chunked=st.booleans())
    def put(self, name: str, size: int, headers: dict, chunked: bool) -> None:
        data = os.urandom(size)
        try:
            if chunked:
                # The proxy is not told the length: the object servers keep what fits.
                cmap = _syntax(lambda: classmap_from_headers(*_values(headers)))
                _settable(cmap)
                cmap = cmap.clipped(size) if cmap is not None else ClassMap()
            else:
                cmap = _syntax(lambda: classmap_from_headers(*_values(headers), size=size))
                _settable(cmap)
            outcome: object = cmap or ClassMap()
        except Refused as refused:
            outcome = refused
        body = iter([data[:1000], data[1000:]]) if chunked else data
        with recorded(self.saio.record_log) as io:
            resp = self.request("PUT", self.path(name), data=body, headers=headers)
        if self.expect(resp, outcome, 201):
            assert resp.headers["Etag"] == hashlib.md5(data).hexdigest()
            self.model[name] = Stored(data, outcome)
            self.reached_dssio(io, "write", self.model[name])
        self.check_object(name)

    @rule(name=names, size=sizes, cf=class_files(), default=st.none() | classes)
    def put_object_file(
        self, name: str, size: int, cf: tuple[bytes, int], default: int | None
    ) -> None:
        classfile, blk = cf
        data = os.urandom(size)
        headers = {"X-DSS-Object-File": "True"}
        if default is not None:
            headers["X-DSS-Object-Class"] = str(default)
        try:
            parsed = _syntax(lambda: parse_classfile(classfile)[0].classmap)
            cmap = _fits(parsed, size, blk)
            if default is not None and not cmap.default:
                cmap = cmap.with_default(default)
            _settable(cmap)
            outcome: object = cmap
        except Refused as refused:
            outcome = refused
        resp = self.request("PUT", self.path(name), data=classfile + data, headers=headers)
        if self.expect(resp, outcome, 201):
            self.model[name] = Stored(data, outcome)
        self.check_object(name)

    @rule(name=names, headers=class_headers(), via=st.sampled_from(["POST", "GET", "POST+meta"]))
    def reclassify(self, name: str, headers: dict, via: str) -> None:
        headers = headers or {"X-DSS-Object-Class": "26"}
        stored = self.model.get(name)
        try:
            cmap = _syntax(lambda: classmap_from_headers(*_values(headers)))
            _settable(cmap)
            if stored is None:
                raise Refused(404)
            outcome: object = _fits(cmap, len(stored.data))
        except Refused as refused:
            outcome = refused
        method = via.split("+")[0]
        extra = {"X-Object-Meta-Via": "random"} if via == "POST+meta" else {}
        resp = self.request(method, self.path(name), headers={**headers, **extra})
        if self.expect(resp, outcome, 202 if method == "POST" else 200):
            stored.cmap = outcome
            self.check_classes(resp, outcome)
            if method == "GET":
                assert resp.content == stored.data
        self.check_object(name)

    @rule(name=names, cf=class_files())
    def reclassify_by_class_file(self, name: str, cf: tuple[bytes, int]) -> None:
        classfile, blk = cf
        stored = self.model.get(name)
        try:
            cmap = _syntax(lambda: parse_classfile(classfile)[0].classmap)
            _settable(cmap)
            if stored is None:
                raise Refused(404)
            outcome: object = _fits(cmap, len(stored.data), blk)
        except Refused as refused:
            outcome = refused
        resp = self.request(
            "PUT", self.path(name), data=classfile, headers={"X-DSS-Class-File": "True"}
        )
        if self.expect(resp, outcome, 202):
            stored.cmap = outcome
            self.check_classes(resp, outcome)
        self.check_object(name)

    @rule(name=names)
    def post_user_metadata(self, name: str) -> None:
        resp = self.request("POST", self.path(name), headers={"X-Object-Meta-Note": "x"})
        assert resp.status_code == (202 if name in self.model else 404)
        self.check_object(name)

    @rule(
        src=names,
        dst=names,
        headers=class_headers(),
        via=st.sampled_from(["COPY", "X-Copy-From"]),
    )
    def copy(self, src: str, dst: str, headers: dict, via: str) -> None:
        stored = self.model.get(src)
        try:
            # The copy middleware reads the source before the copy's PUT reaches dss.
            if stored is None:
                raise Refused(404)
            # The copy is a PUT of known length: its classes are checked as a PUT's are.
            size = len(stored.data)
            cmap = _syntax(lambda: classmap_from_headers(*_values(headers), size=size))
            _settable(cmap)
            outcome: object = stored.cmap if cmap is None else cmap
        except Refused as refused:
            outcome = refused
        if via == "COPY":
            resp = self.request(
                "COPY", self.path(src), headers={**headers, "Destination": self.path(dst)}
            )
        else:
            resp = self.request(
                "PUT", self.path(dst), data=b"", headers={**headers, "X-Copy-From": self.path(src)}
            )
        if self.expect(resp, outcome, 201):
            self.model[dst] = Stored(stored.data, outcome)
        self.check_object(src)
        self.check_object(dst)

    @rule(name=names)
    def delete(self, name: str) -> None:
        resp = self.request("DELETE", self.path(name))
        assert resp.status_code == (204 if self.model.pop(name, None) else 404)

    # -- reads ------------------------------------------------------------------------

    @precondition(lambda self: self.model)
    @rule(data=st.data())
    def get(self, data: st.DataObject) -> None:
        name = data.draw(st.sampled_from(sorted(self.model)))
        stored = self.model[name]
        size = len(stored.data)
        if size and data.draw(st.booleans()):
            first = data.draw(st.integers(0, size - 1))
            last = data.draw(st.integers(first, size + 100))
            resp = self.request("GET", self.path(name), headers={"Range": f"bytes={first}-{last}"})
            assert resp.status_code == 206
            assert resp.content == stored.data[first : last + 1]
        else:
            with recorded(self.saio.record_log) as io:
                resp = self.request("GET", self.path(name))
            assert resp.status_code == 200
            assert resp.content == stored.data
            self.reached_dssio(io, "read", stored)
        self.check_classes(resp, stored.cmap)


def _values(headers: dict[str, str]) -> tuple[str | None, str | None]:
    return headers.get("X-DSS-Object-Class"), headers.get("X-DSS-Range-Class")


def test_random_requests_agree_with_the_model(saio: object) -> None:
    swift = Swift.connect(saio)
    run_state_machine_as_test(
        lambda: ClassesAgainstModel(swift, saio),
        settings=settings(max_examples=EXAMPLES, stateful_step_count=40, phases=PHASES),
    )
