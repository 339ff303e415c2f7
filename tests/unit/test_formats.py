"""Class formats: round trips (hypothesis) and the rules of docs/protocol.md."""

from __future__ import annotations

import contextlib
import itertools
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from swift.common.header_key_dict import HeaderKeyDict

from swift_dss.formats import (
    SECTOR,
    ClassError,
    ClassLimitError,
    ClassMap,
    ClassRange,
    Limits,
    Version,
    check_class,
    classmap_from_headers,
    classmap_to_headers,
    encode_blocks,
    encode_classmap,
    encode_object,
    encode_ranges,
    from_sysmeta,
    parse_classfile,
    parse_flag,
    to_sysmeta,
)
from swift_dss.formats.sysmeta import PIECE

classes = st.integers(0, 255)


@st.composite
def classmaps(draw: st.DrawFn, max_ranges: int = 40) -> ClassMap:
    n = draw(st.integers(0, max_ranges))
    pos = draw(st.integers(0, 1000))
    ranges = []
    for _ in range(n):
        pos += draw(st.integers(0, 2000))
        length = draw(st.integers(1, 5000))
        ranges.append((pos, length, draw(classes)))
        pos += length
    return ClassMap.build(draw(classes), draw(st.permutations(ranges)))


def byte_classes(cmap: ClassMap, size: int) -> list[int]:
    """Reference model: the class of every sector, computed the slow way."""
    out = []
    for sector in range(-(-size // SECTOR)):
        cls = cmap.default
        for r in cmap.ranges:
            if r.offset <= sector < r.end:
                cls = r.cls
        out.append(cls)
    return out


@given(classmaps())
def test_header_round_trip(cmap: ClassMap) -> None:
    headers = classmap_to_headers(cmap)
    back = classmap_from_headers(
        headers.get("X-DSS-Object-Class"), headers.get("X-DSS-Range-Class")
    )
    assert back == cmap


@given(classmaps(max_ranges=300))
def test_sysmeta_round_trip(cmap: ClassMap) -> None:
    meta = to_sysmeta(cmap)
    assert all(len(v) <= PIECE for v in meta.values())
    assert from_sysmeta(HeaderKeyDict(meta)) == cmap


@given(classmaps(), st.sampled_from([1, 2, 3, 4]))
def test_classfile_round_trip(cmap: ClassMap, cls_bytes: int) -> None:
    cmap = cmap.with_default(0) if cmap.ranges else cmap
    encoded = encode_classmap(cmap, cls_bytes)
    cf, rest = parse_classfile(encoded + b"payload")
    assert cf.classmap == cmap
    assert rest == b"payload"
    assert cf.size == len(encoded)
    assert cf.cls_bytes == cls_bytes


@given(st.lists(classes, min_size=1, max_size=200), st.integers(1, 64))
def test_block_file_matches_blocks(blocks: list[int], blk: int) -> None:
    cf, _ = parse_classfile(encode_blocks(blocks, blk))
    assert cf.version is Version.BLOCK
    size = len(blocks) * blk * SECTOR
    expected = [c for c in blocks for _ in range(blk)]
    assert byte_classes(cf.classmap, size) == expected


@given(st.lists(classes, max_size=40), st.integers(1, 16), st.integers(0, 40 * 16 * SECTOR))
def test_block_file_for_an_object_of_any_size(blocks: list[int], blk: int, size: int) -> None:
    """The last block may run past the object's end; a block starting past it is refused."""
    sectors = -(-size // SECTOR)
    data = encode_blocks(blocks, blk)
    if len(blocks) * blk - blk >= sectors and blocks:
        with pytest.raises(ClassError, match="need at most"):
            parse_classfile(data, size=size)
        return
    cf, _ = parse_classfile(data, size=size)
    expected = [c for c in blocks for _ in range(blk)][:sectors]
    assert byte_classes(cf.classmap, size) == expected + [0] * (sectors - len(expected))
    assert all(r.end <= sectors for r in cf.classmap.ranges)


@settings(max_examples=200)
@given(classmaps(max_ranges=12), st.integers(0, 40000), st.integers(0, 40000))
def test_segments_cover_exactly(cmap: ClassMap, offset: int, length: int) -> None:
    pieces = list(cmap.segments(offset, length))
    assert sum(p[1] for p in pieces) == length
    pos = offset
    for start, n, cls in pieces:
        assert start == pos and n > 0
        for b in range(start, start + n, 97):
            assert cmap.class_at(b) == cls
        assert cmap.class_at(start + n - 1) == cls
        pos += n
    for a, b in itertools.pairwise(pieces):
        assert a[2] != b[2], "adjacent pieces of one class must be merged"


def test_paper_range_example() -> None:
    cmap = classmap_from_headers(None, "0-64-25,1024-32-26")
    assert cmap.ranges == (ClassRange(0, 64, 25), ClassRange(1024, 32, 26))
    assert cmap.class_at(0) == 25 and cmap.class_at(64 * SECTOR) == 0
    assert cmap.class_at(1024 * SECTOR) == 26


def test_canonical_form_sorts_and_merges() -> None:
    cmap = classmap_from_headers("7", "10-5-3,0-10-3,20-1-4")
    assert classmap_to_headers(cmap) == {
        "X-DSS-Object-Class": "7",
        "X-DSS-Range-Class": "0-15-3,20-1-4",
    }


@pytest.mark.parametrize(
    ("a", "b", "alike"),
    [
        (("26", "0-1-26,1-1-27"), ("26", "1-1-27"), True),
        (("26", "0-8-26"), ("26", None), True),
        ((None, "0-1-0"), ("0", None), True),
        (("26", "1-1-27"), ("26", "1-2-27"), False),
        (("26", "0-1-27"), ("27", "1-1000-26"), False),
        (("26", None), ("27", None), False),
        ((None, "0-1-5"), (None, "0-1-6"), False),
    ],
)
def test_maps_classify_alike_whatever_their_form(
    a: tuple[str | None, str | None], b: tuple[str | None, str | None], alike: bool
) -> None:
    first, second = classmap_from_headers(*a), classmap_from_headers(*b)
    assert first.classifies_like(second) is alike
    assert second.classifies_like(first) is alike


@pytest.mark.parametrize(
    ("obj", "rng", "size", "message"),
    [
        ("256", None, None, "outside"),
        ("-1", None, None, "not a decimal"),
        ("0x19", None, None, "not a decimal"),
        ("", None, None, "not a decimal"),
        (None, "0-64", None, "offset-length-class"),
        (None, "0-64-25,", None, "offset-length-class"),
        (None, "a-1-2", None, "offset-length-class"),
        (None, "0-99999999999-3", None, "up to 10 digits"),
        (None, "0-0-25", None, "empty"),
        (None, "0-10-25,5-10-26", None, "overlaps"),
        (None, "0-10-300", None, "outside"),
        (None, "4294967295-2-1", None, "beyond"),
        (None, "0-3-25", 1024, "object has 2"),
    ],
)
def test_bad_headers(obj: str | None, rng: str | None, size: int | None, message: str) -> None:
    with pytest.raises(ClassError, match=message) as info:
        classmap_from_headers(obj, rng, size=size)
    assert info.value.http_status == 400


def test_partial_last_sector_is_inside() -> None:
    classmap_from_headers(None, "0-3-25", size=1025)


def test_limits_give_413() -> None:
    limits = Limits(max_ranges=4)
    spec = ",".join(f"{i * 2}-1-{i % 2 + 1}" for i in range(5))
    with pytest.raises(ClassLimitError) as info:
        classmap_from_headers(None, spec, limits)
    assert info.value.http_status == 413
    with pytest.raises(ClassLimitError):
        classmap_from_headers(None, "0-1-1", Limits(max_header_length=3))
    big = encode_blocks([1, 2] * 5, 1)
    with pytest.raises(ClassLimitError):
        parse_classfile(big, limits)
    with pytest.raises(ClassLimitError):
        parse_classfile(encode_ranges([(0, 1, 1)] * 10), Limits(max_class_section=50))
    # Limits narrower than the class space refuse classes above them.
    with pytest.raises(ClassError, match="outside 0-31"):
        classmap_from_headers("40", None, Limits(max_class=31))


def _header(version: int, cls_bytes: int, rest: bytes) -> bytes:
    return b"DS" + bytes([version, cls_bytes]) + rest


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "truncated"),
        (b"DS\x00\x01", "truncated"),
        (b"XX" + bytes(14) + b"\x01", "magic"),
        (_header(3, 1, bytes(12)) + b"\x01", "VER_ID"),
        (_header(0, 0, bytes(12)) + b"\x01", "CLS_BYTES"),
        (_header(0, 5, bytes(12)) + b"\x01", "CLS_BYTES"),
        (_header(0, 1, b"\x01" + bytes(11)) + b"\x01", "reserved"),
        (_header(0, 1, bytes(12)), "truncated in class section"),
        (_header(0, 2, bytes(12)) + struct.pack("<H", 300), "outside"),
        (
            _header(1, 1, struct.pack("<I", 2) + bytes(8)) + struct.pack("<IIB", 0, 8, 1),
            "truncated",
        ),
        (_header(1, 1, struct.pack("<I", 1) + bytes(8)) + struct.pack("<IIB", 0, 0, 1), "empty"),
        (
            _header(1, 1, struct.pack("<I", 2) + bytes(8))
            + struct.pack("<IIBIIB", 0, 8, 1, 4, 8, 2),
            "overlaps",
        ),
        (_header(2, 1, struct.pack("<II", 1, 0) + bytes(4)) + b"\x01", "BLK_SECTORS"),
        (_header(2, 1, struct.pack("<II", 1, 8) + b"\x00\x00\x00\x01") + b"\x01", "reserved"),
    ],
)
def test_bad_class_files(data: bytes, message: str) -> None:
    with pytest.raises(ClassError, match=message):
        parse_classfile(data)


def test_wide_class_values_within_the_space() -> None:
    cf, rest = parse_classfile(encode_object(200, 4) + b"x")
    assert (cf.classmap.default, cf.cls_bytes, cf.size, rest) == (200, 4, 20, b"x")
    with pytest.raises(ClassError, match="outside"):
        parse_classfile(encode_object(256, 2))
    with pytest.raises(ClassError, match="range"):
        parse_classfile(encode_ranges([(0, 1, 1)]) + b"data", size=0)


def test_one_class_check_names_where_the_class_came_from() -> None:
    assert check_class(255) == 255
    assert check_class(31, Limits(max_class=31), "dssio class") == 31
    with pytest.raises(ClassError, match=r"^class 32 outside 0-31$"):
        check_class(32, Limits(max_class=31))
    with pytest.raises(ClassError, match=r"^class file class 256 outside 0-255$"):
        parse_classfile(encode_object(256, 2))
    # A ValueError too: callers that only know ValueError still catch it.
    for bad in (-1, 1.5, True, "3", None):
        with pytest.raises(ValueError, match=r"^dssio class .*0-255"):
            check_class(bad, what="dssio class")


@given(st.binary(max_size=300))
def test_parser_never_fails_unexpectedly(data: bytes) -> None:
    with contextlib.suppress(ClassError):
        parse_classfile(data)


@given(st.text(max_size=200))
def test_header_parser_never_fails_unexpectedly(text: str) -> None:
    with contextlib.suppress(ClassError):
        classmap_from_headers(text, text)


@given(classmaps(max_ranges=4))
def test_uniform_class_is_the_class_of_every_byte(cmap: ClassMap) -> None:
    # Past the last range too: the default class is the class of those bytes.
    size = ((cmap.ranges[-1].end if cmap.ranges else 0) + 4) * SECTOR
    seen = set(byte_classes(cmap, size))
    if cmap.uniform_class is None:
        assert len(seen) > 1
    else:
        assert seen == {cmap.uniform_class}
        assert list(cmap.segments(0, size)) == [(0, size, cmap.uniform_class)]


def test_maps_without_ranges_are_shared_and_still_validated() -> None:
    assert ClassMap.build(25) is ClassMap.build(25, [])
    assert ClassMap.build(25) == ClassMap(25)
    assert ClassMap.build(25, [(0, 4, 25)]).uniform_class == 25
    assert ClassMap.build(25, [(0, 4, 26)]).uniform_class is None
    with pytest.raises(ClassError):
        ClassMap.build(40, [], Limits(max_class=31))


@given(classmaps())
def test_sysmeta_read_from_a_request_environ(cmap: ClassMap) -> None:
    from swift.common.swob import Request

    from swift_dss.formats.sysmeta import EnvironHeaders

    req = Request.blank("/v1/a/c/o", headers=to_sysmeta(cmap))
    assert from_sysmeta(EnvironHeaders(req.environ)) == cmap
    assert from_sysmeta(EnvironHeaders(Request.blank("/v1/a/c/o").environ)) is None


@pytest.mark.parametrize("value", ["True", "true", " 1", "yes", "ON", "t", "Y"])
def test_flag_true(value: str) -> None:
    assert parse_flag(value, "X-DSS-Object-File") is True


@pytest.mark.parametrize("value", [None, "False", "0", "no", "off", "F", "n"])
def test_flag_false(value: str | None) -> None:
    assert parse_flag(value, "X-DSS-Object-File") is False


@pytest.mark.parametrize("value", ["", "Tru", "2", "yes please", "\u00e9"])
def test_flag_neither_is_refused(value: str) -> None:
    with pytest.raises(ClassError, match=r"X-DSS-Object-File is .*: give true or false"):
        parse_flag(value, "X-DSS-Object-File")
