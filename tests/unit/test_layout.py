"""The shape of the source tree: import paths are file paths, packages import one another
without a loop, and no module grows past the size a reader can hold.

The graph is drawn from the real imports (every ``import`` statement, function-level ones
included) and from the ``"module:function"`` targets the CLI loads lazily.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "swift_dss"
TIER = ROOT / "tier" / "crates"
PY_MAX_LINES = 500
RUST_MAX_LINES = 900
_LAZY_TARGET = re.compile(r"^(swift_dss(?:\.\w+)+):\w+$")


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def python_modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def imported(path: Path, name: str) -> Iterator[str]:
    """Every swift_dss module ``path`` (module ``name``) names in an import or lazy target."""
    tree = ast.parse(path.read_text(), str(path))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            yield base
            yield from (f"{base}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            m = _LAZY_TARGET.match(node.value)
            if m:
                yield m.group(1)


def unit_of(module: str) -> str:
    """The package a module belongs to: ``swift_dss.X`` (a top-level module is its own)."""
    return ".".join(module.split(".")[:2])


def package_graph() -> dict[str, set[str]]:
    modules = python_modules()
    graph: dict[str, set[str]] = {unit_of(m): set() for m in modules if m != "swift_dss"}
    for name, path in modules.items():
        if name == "swift_dss":
            continue
        src = unit_of(name)
        for target in imported(path, name):
            dst = unit_of(target)
            if target.startswith("swift_dss.") and dst in graph and dst != src:
                graph[src].add(dst)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_cycle_finder_sees_a_loop_through_three_packages() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_relative_and_lazy_imports_are_edges(tmp_path: Path) -> None:
    src = tmp_path / "m.py"
    src.write_text(
        "from .sibling import x\nfrom ..formats import y\n"
        "def f():\n    import swift_dss.deploy.saio\n"
        "T = {'run': 'swift_dss.bench.tier:run'}\n"
    )
    found = set(imported(src, "swift_dss.loadgen.m"))
    assert {"swift_dss.loadgen.sibling", "swift_dss.formats", "swift_dss.deploy.saio"} <= found
    assert "swift_dss.bench.tier" in found


def test_no_package_imports_itself_through_others() -> None:
    graph = package_graph()
    assert "swift_dss.loadgen" in graph and "swift_dss.deploy" in graph
    assert cycles(graph) == []


def test_every_python_folder_is_a_package_under_swift_dss() -> None:
    # Import path = file path: no Python module outside swift_dss/ and tests/.
    stray = [
        p.relative_to(ROOT)
        for p in ROOT.glob("*/**/*.py")
        if p.relative_to(ROOT).parts[0] not in {"swift_dss", "tests", ".venv", "tier", "run"}
        and not p.relative_to(ROOT).parts[0].startswith(".")
    ]
    assert stray == []
    for folder in {p.parent for p in PACKAGE.rglob("*.py")}:
        assert (folder / "__init__.py").exists(), f"{folder} is not a package"


@pytest.mark.parametrize("name", sorted(python_modules()))
def test_python_module_fits_in_a_reading(name: str) -> None:
    lines = python_modules()[name].read_text().count("\n")
    assert lines <= PY_MAX_LINES, f"{name} has {lines} lines"


def rust_code_lines(path: Path) -> int:
    """Lines before a file's ``#[cfg(test)]`` block: tests do not count toward the size."""
    lines = path.read_text().splitlines()
    for i, line in enumerate(lines):
        if line.strip() == "#[cfg(test)]":
            return i
    return len(lines)


def rust_sources() -> list[Path]:
    return sorted(
        p
        for p in TIER.glob("*/src/**/*.rs")
        if p.name != "tests.rs" and "tests" not in p.relative_to(TIER).parts[2:-1]
    )


@pytest.mark.parametrize("path", rust_sources(), ids=lambda p: str(p.relative_to(TIER)))
def test_rust_module_fits_in_a_reading(path: Path) -> None:
    assert rust_code_lines(path) <= RUST_MAX_LINES, f"{path} has {rust_code_lines(path)} lines"


# A path of the repository in a Makefile line that is not a comment; build outputs
# (tier/target) need not exist before the build.
_MAKEFILE_PATH = re.compile(r"(?:^|(?<=[\s=\"']))((?:tests|swift_dss|tier|docs|\.ci)/[\w./-]+)")


def test_every_path_the_makefile_names_exists() -> None:
    """A renamed test module must not leave a target (`make properties`) pointing at
    nothing, which pytest answers with an error only when that target runs."""
    named = {
        match.rstrip(".")
        for line in (ROOT / "Makefile").read_text().splitlines()
        if not line.lstrip().startswith("#")
        for match in _MAKEFILE_PATH.findall(line)
        if not match.startswith("tier/target/")
    }
    assert "tests/unit/test_formats.py" in named
    assert sorted(p for p in named if not (ROOT / p).exists()) == []
