"""Coverage-guided fuzz target for the class-file and header parsers (atheris).

    .venv/bin/python tests/fuzz/fuzz_classfile.py -runs=200000

Any exception other than ClassError is a bug: the proxy would answer it with a 5xx.
"""

from __future__ import annotations

import contextlib
import sys

import atheris

with atheris.instrument_imports():
    from swift_dss.formats import ClassError, Limits, classmap_from_headers, parse_classfile

SMALL = Limits(max_ranges=64, max_class_section=4096, max_header_length=2048)


def one_input(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    size = fdp.ConsumeIntInRange(0, 1 << 20) if fdp.ConsumeBool() else None
    try:
        cf, _rest = parse_classfile(fdp.ConsumeBytes(fdp.remaining_bytes() // 2), SMALL, size)
        assert cf.size >= 16
    except ClassError:
        pass
    text = fdp.ConsumeUnicodeNoSurrogates(fdp.remaining_bytes())
    with contextlib.suppress(ClassError):
        classmap_from_headers(text if fdp.ConsumeBool() else None, text, SMALL, size)


def main() -> None:
    atheris.Setup(sys.argv, one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
