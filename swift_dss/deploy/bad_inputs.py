"""Malformed and abusive class information for a proxy: a fixed corpus and a seeded mutator.

Every input here must be refused with a 4xx before anything reaches an object server. The
integration tests add the cases of tests/integration/test_bad_input.py to this corpus.
"""

from __future__ import annotations

import random
import struct
from collections.abc import Iterator
from dataclasses import dataclass

from swift_dss.formats import encode_blocks, encode_object, encode_ranges

#: Classes the local cluster's operator policy refuses: the reserved 1-10 (the paper's
#: highest priority, file-system metadata) and values outside allowed_classes 0,11-31.
RESERVED = tuple(range(1, 11))
DISALLOWED = (32, 64, 128, 200, 255)
DATA = bytes(range(256)) * 16  # 4 KiB, 8 sectors


@dataclass(frozen=True)
class BadInput:
    name: str
    method: str
    headers: dict[str, str]
    body: bytes | None


def _hdr(version: int, cls_bytes: int, rest: bytes) -> bytes:
    return b"DS" + bytes([version, cls_bytes]) + rest


def policy_inputs() -> list[BadInput]:
    """A client asking for the highest-priority classes, by every channel there is."""
    out = []
    for cls in (*RESERVED, *DISALLOWED):
        out.append(
            BadInput(f"policy: object class {cls}", "PUT", {"X-DSS-Object-Class": str(cls)}, DATA)
        )
    for cls in (1, 5, 10, 32, 255):
        out += [
            BadInput(
                f"policy: range class {cls}", "PUT", {"X-DSS-Range-Class": f"0-4-{cls}"}, DATA
            ),
            BadInput(
                f"policy: range among allowed {cls}",
                "PUT",
                {"X-DSS-Range-Class": f"0-2-25,2-2-{cls},4-2-26"},
                DATA,
            ),
            BadInput(
                f"policy: object file {cls}",
                "PUT",
                {"X-DSS-Object-File": "True"},
                encode_object(cls) + DATA,
            ),
            BadInput(
                f"policy: range file {cls}",
                "PUT",
                {"X-DSS-Object-File": "True"},
                encode_ranges([(0, 4, 25), (4, 4, cls)]) + DATA,
            ),
            BadInput(
                f"policy: block file {cls}",
                "PUT",
                {"X-DSS-Object-File": "True"},
                encode_blocks([25, cls], 4) + DATA,
            ),
            BadInput(
                f"policy: meta form {cls}",
                "PUT",
                {"X-Object-Meta-Dss-Object-Class": str(cls)},
                DATA,
            ),
            BadInput(
                f"policy: default class {cls} under allowed ranges",
                "PUT",
                {"X-DSS-Object-Class": str(cls), "X-DSS-Range-Class": "0-8-25"},
                DATA,
            ),
        ]
    return out


def malformed_inputs() -> list[BadInput]:
    """Inputs no parser should accept, beyond those of the integration tests."""
    out = []
    # Arabic-Indic digits 2 and 5 as the UTF-8 bytes a client would send (headers are bytes).
    arabic_25 = "\u0662\u0665".encode().decode("latin-1")
    for value in ("1e3", "+25", "25,26", "25;", "0x", arabic_25, "25 26", "2 5", "nan", "0b11"):
        out.append(BadInput(f"class {value!r}", "PUT", {"X-DSS-Object-Class": value}, DATA))
    for value in (
        "0-1-25,,1-1-26",
        "a-1-25",
        "0-1-25-3",
        "0-4294967296-25",
        "0-1-" + "9" * 40,
        "9" * 40 + "-1-25",
        "0-1-25,0-1-25",
        "0-2-25,1-2-26",
        ",0-1-25",
        "0_1_25",
        "0-1-+25",
        "0-1--25",
    ):
        out.append(BadInput(f"ranges {value[:24]!r}", "PUT", {"X-DSS-Range-Class": value}, DATA))
    full = encode_object(25)
    for n in range(0, len(full)):
        out.append(
            BadInput(f"object file cut at {n}", "PUT", {"X-DSS-Object-File": "True"}, full[:n])
        )
    out += [
        BadInput(
            "range file claims 2^32-1 ranges",
            "PUT",
            {"X-DSS-Object-File": "True"},
            _hdr(1, 1, struct.pack("<I", 2**32 - 1) + bytes(8)) + DATA,
        ),
        BadInput(
            "block file claims 2^32-1 blocks",
            "PUT",
            {"X-DSS-Object-File": "True"},
            _hdr(2, 1, struct.pack("<II", 2**32 - 1, 1) + bytes(4)) + DATA,
        ),
        BadInput(
            "4-byte class 2^32-1",
            "PUT",
            {"X-DSS-Object-File": "True"},
            _hdr(0, 4, bytes(12)) + b"\xff\xff\xff\xff" + DATA,
        ),
        BadInput(
            "range file reserved bytes",
            "PUT",
            {"X-DSS-Object-File": "True"},
            _hdr(1, 1, struct.pack("<I", 1) + b"\x00" * 7 + b"\x01")
            + struct.pack("<IIB", 0, 1, 25)
            + DATA,
        ),
        BadInput(
            "block file past data",
            "PUT",
            {"X-DSS-Object-File": "True"},
            encode_blocks([25] * 64, 8) + DATA,
        ),
        BadInput(
            "meta form ranges overlap",
            "PUT",
            {"X-Object-Meta-Dss-Range-Class": "0-4-25,2-2-26"},
            DATA,
        ),
    ]
    return out


def corpus() -> list[BadInput]:
    return policy_inputs() + malformed_inputs()


# --- the mutator -------------------------------------------------------------------------------

_HEADER_ALPHABET = "0123456789-,+ x.;/_e"
_BOUNDARY_NUMBERS = ("0", "1", "10", "11", "31", "32", "255", "256", "4294967295", "4294967296")
_SEEDS_HEADER = ("25", "0-4-25,4-4-26", "0-1-11,2-1-12,4-4-31")


def _mutate_text(rng: random.Random, text: str) -> str:
    chars = list(text)
    for _ in range(rng.randint(1, 4)):
        op = rng.randrange(5)
        pos = rng.randrange(len(chars) + 1)
        if op == 0 and chars:
            chars[min(pos, len(chars) - 1)] = rng.choice(_HEADER_ALPHABET)
        elif op == 1:
            chars.insert(pos, rng.choice(_HEADER_ALPHABET))
        elif op == 2 and chars:
            del chars[min(pos, len(chars) - 1)]
        elif op == 3:
            chars[pos:pos] = list(rng.choice(_BOUNDARY_NUMBERS))
        else:
            chars = chars * rng.randint(1, 3)
    # HTTP cannot carry leading or trailing blanks: the server would strip them anyway.
    return "".join(chars).strip() or "-"


def _mutate_bytes(rng: random.Random, blob: bytes) -> bytes:
    data = bytearray(blob)
    for _ in range(rng.randint(1, 4)):
        op = rng.randrange(5)
        pos = rng.randrange(len(data) + 1)
        if op == 0 and data:
            data[min(pos, len(data) - 1)] ^= 1 << rng.randrange(8)
        elif op == 1:
            data.insert(pos, rng.randrange(256))
        elif op == 2 and data:
            del data[min(pos, len(data) - 1)]
        elif op == 3 and len(data) >= 16:
            # A header field set to an extreme: count, sector size, class width.
            field = rng.choice((2, 3, 4, 8))
            value = rng.choice((0, 1, 255, 2**16, 2**32 - 1))
            size = 1 if field in (2, 3) else 4
            data[field : field + size] = (value % 256**size).to_bytes(size, "little")
        else:
            data = data[: rng.randrange(len(data) + 1)]
    return bytes(data)


def mutations(seed: int, count: int) -> Iterator[BadInput]:
    """COUNT mutated inputs from valid ones, reproducible from SEED. Some stay valid; the
    property is only that none gets a 5xx and that refused ones reach no object server."""
    rng = random.Random(seed)
    class_files = (
        encode_object(25),
        encode_ranges([(0, 4, 25), (4, 4, 26)]),
        encode_blocks([25, 26], 4),
        encode_object(25, 2),
    )
    for i in range(count):
        kind = rng.randrange(4)
        if kind == 0:
            value = _mutate_text(rng, rng.choice(_SEEDS_HEADER[:1]))
            yield BadInput(f"fuzz {i} class", "PUT", {"X-DSS-Object-Class": value}, DATA)
        elif kind == 1:
            value = _mutate_text(rng, rng.choice(_SEEDS_HEADER[1:]))
            yield BadInput(f"fuzz {i} ranges", "PUT", {"X-DSS-Range-Class": value}, DATA)
        elif kind == 2:
            value = _mutate_text(rng, rng.choice(_SEEDS_HEADER))
            key = rng.choice(("X-Object-Meta-Dss-Object-Class", "X-Object-Meta-Dss-Range-Class"))
            yield BadInput(f"fuzz {i} meta form", "PUT", {key: value}, DATA)
        else:
            blob = _mutate_bytes(rng, rng.choice(class_files))
            yield BadInput(
                f"fuzz {i} class file", "PUT", {"X-DSS-Object-File": "True"}, blob + DATA
            )
