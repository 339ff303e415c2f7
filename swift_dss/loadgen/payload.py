"""Object bodies: reproducible from (seed, object id), streamed, never held whole.

One 1 MiB random block per seed (twice over, so that any window of up to 1 MiB is one
slice); object ``id`` is the block read cyclically from an offset derived from the id. The
data does not compress (random), differs between objects, and a GET can be checked against
the same generator chunk by chunk.
"""

from __future__ import annotations

import hashlib
import random

BLOCK = 1 << 20


class PayloadSource:
    def __init__(self, seed: int) -> None:
        block = random.Random(f"payload:{seed}").randbytes(BLOCK)
        self._block2 = block + block

    def start(self, obj: int) -> int:
        digest = hashlib.blake2b(obj.to_bytes(8, "little", signed=True), digest_size=4).digest()
        return int.from_bytes(digest, "little") % BLOCK

    def chunk(self, obj_start: int, offset: int, n: int) -> bytes:
        """Bytes [offset, offset+n) of the object whose stream starts at ``obj_start``;
        at most 1 MiB."""
        pos = (obj_start + offset) % BLOCK
        return self._block2[pos : pos + min(n, BLOCK)]

    def reader(self, obj: int, size: int) -> BodyReader:
        return BodyReader(self, self.start(obj), size)

    def checker(self, obj: int, size: int) -> BodyChecker:
        return BodyChecker(self, self.start(obj), size)

    def whole(self, obj: int, size: int) -> bytes:
        """The object in one piece (tests and small bodies only)."""
        r = self.reader(obj, size)
        return b"".join(iter(lambda: r.read(BLOCK), b""))


class BodyReader:
    """A curl READFUNCTION: the next piece of the body on each call."""

    __slots__ = ("_src", "_start", "offset", "size")

    def __init__(self, src: PayloadSource, start: int, size: int) -> None:
        self._src, self._start, self.size, self.offset = src, start, size, 0

    def read(self, n: int) -> bytes:
        left = self.size - self.offset
        if left <= 0:
            return b""
        data = self._src.chunk(self._start, self.offset, min(n, left))
        self.offset += len(data)
        return data

    def seek(self, offset: int, origin: int) -> int:
        base = {0: 0, 1: self.offset, 2: self.size}[origin]
        self.offset = max(0, min(self.size, base + offset))
        return 0  # CURL_SEEKFUNC_OK


class BodyChecker:
    """A curl WRITEFUNCTION that compares a GET's body with what was PUT."""

    __slots__ = ("_src", "_start", "offset", "ok", "size")

    def __init__(self, src: PayloadSource, start: int, size: int) -> None:
        self._src, self._start, self.size, self.offset, self.ok = src, start, size, 0, True

    def write(self, data: bytes) -> None:
        n = len(data)
        if self.ok:
            pos = 0
            while pos < n:
                want = self._src.chunk(self._start, self.offset + pos, n - pos)
                if data[pos : pos + len(want)] != want:
                    self.ok = False
                    break
                pos += len(want)
        self.offset += n

    @property
    def complete(self) -> bool:
        return self.ok and self.offset == self.size
