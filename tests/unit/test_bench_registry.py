"""Every registered benchmark names a function that exists."""

from __future__ import annotations

import importlib
import inspect

import pytest

from swift_dss.bench.cli import BENCHES


@pytest.mark.parametrize("name", sorted(BENCHES))
def test_bench_target_resolves(name: str) -> None:
    module, func = BENCHES[name].target.split(":")
    run = getattr(importlib.import_module(module), func)
    assert list(inspect.signature(run).parameters)[:3] == ["out", "rounds", "progress"]
    assert BENCHES[name].rounds >= 1
