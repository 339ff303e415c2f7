"""Parsing the engine benchmark's output (the figures themselves come from the Rust
example)."""

from __future__ import annotations

import pytest

from swift_dss.bench.engine import parse, parse_memory

OUTPUT = """\
engine dss 1.123 M decisions/s, cpu 2.985 M decisions/s (2000000 operations, read hit ratio 0.053)
engine dss-slru 0.970 M decisions/s, cpu 3.226 M decisions/s (2000000 operations, ...)
baseline 0.913 M decisions/s, cpu 3.012 M decisions/s (plain LRU; 954171 write-backs, 1)
"""


def test_parse_reads_every_policy_and_the_baseline() -> None:
    engine, baseline = parse(OUTPUT)
    assert engine == {"dss": 2.985, "dss-slru": 3.226}
    assert baseline == 3.012


@pytest.mark.parametrize("text", ["", OUTPUT.splitlines()[0], OUTPUT.splitlines()[-1]])
def test_parse_refuses_output_without_figures(text: str) -> None:
    with pytest.raises(RuntimeError):
        parse(text)


def test_parse_memory_reads_every_policy_and_the_baseline() -> None:
    text = OUTPUT + (
        "memory dss 48.07 bytes/entry (12601288 bytes, 262144 entries)\n"
        "memory dss-clockpro 108.07 bytes/entry (28329928 bytes, 262144 entries)\n"
        "baseline memory 75.00 bytes/entry (19660952 bytes, 262144 entries)\n"
    )
    memory, baseline = parse_memory(text)
    assert memory == {"dss": 48.07, "dss-clockpro": 108.07}
    assert baseline == 75.0
    # The memory lines leave the decision figures as they were.
    assert parse(text) == parse(OUTPUT)
    assert parse_memory(OUTPUT) == ({}, None)
