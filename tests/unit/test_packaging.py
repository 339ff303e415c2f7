"""What each install of swift_dss brings: the base (a Swift node) pulls no load-generation or
plotting package, the servers import nothing outside it, and `dss` names the missing extra."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import tomllib
from functools import cache
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from swift_dss.cli import COMMANDS, EXTRA_OF

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "swift_dss"
#: Never wanted on a Swift node (the proxy and object servers).
LAB_ONLY = {"locust", "matplotlib", "pycurl", "boto3", "hdrhistogram", "gevent", "psutil"}
#: What every venv has, whatever is installed into it.
VENV_TOOLS = {"pip", "setuptools", "wheel"}


@cache
def pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def resolved(target: str) -> set[str]:
    """The distributions pip would install for TARGET into an empty environment."""
    proc = subprocess.run(
        [
            sys.executable,
            *("-m", "pip", "install", "--dry-run", "--quiet", "--ignore-installed"),
            *("--report", "-", target),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    return {canonicalize_name(item["metadata"]["name"]) for item in report["install"]}


def test_base_install_pulls_swift_and_nothing_for_load_or_plots() -> None:
    names = resolved(".")
    assert {"swift", "swift-dss", "click"} <= names
    assert not names & LAB_ONLY
    assert not names & {"python-swiftclient", "pyyaml", "rich"}


def test_client_extra_pulls_the_clients_and_no_load_or_plot_package() -> None:
    names = resolved(".[client]")
    assert {"swift", "python-swiftclient", "boto3", "pyyaml"} <= names
    assert not names & (LAB_ONLY - {"boto3"})


def base_distributions() -> set[str]:
    """swift_dss and every distribution its base requirements pull in, as installed here."""
    seen: set[str] = set()
    todo = ["swift_dss"]
    while todo:
        name = canonicalize_name(todo.pop())
        if name in seen:
            continue
        seen.add(name)
        for line in metadata.requires(name) or []:
            req = Requirement(line)
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                todo.append(req.name)
    return seen


def test_servers_import_nothing_outside_the_base_install() -> None:
    """The middlewares, the object server and dssio, loaded as Swift loads them (paste entry
    points), import no module of an installed distribution the base does not require."""
    probe = (
        "import sys, json\n"
        "from importlib.metadata import entry_points\n"
        "import swift_dss.middleware, swift_dss.objserver, swift_dss.dssio\n"
        "loaded = []\n"
        "for group in ('paste.filter_factory', 'paste.app_factory'):\n"
        "    for ep in entry_points(group=group):\n"
        "        if ep.dist.name == 'swift_dss':\n"
        "            ep.load()\n"
        "            loaded.append(ep.name)\n"
        "print(json.dumps([loaded, sorted({m.partition('.')[0] for m in sys.modules})]))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    loaded, modules = json.loads(proc.stdout.splitlines()[-1])
    assert {"dss", "object"} <= set(loaded)
    allowed = base_distributions() | VENV_TOOLS
    outside = {
        module: dists
        for module, dists in metadata.packages_distributions().items()
        if module in modules and not {canonicalize_name(d) for d in dists} & allowed
    }
    assert not outside, f"imported outside the base install: {outside}"


def third_party_imports() -> set[str]:
    """Top-level names of every module swift_dss imports from outside itself and the stdlib."""
    names: set[str] = set()
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names.update(alias.name.partition(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module.partition(".")[0])
    return names - set(sys.stdlib_module_names) - {"swift_dss", "__future__"}


def test_every_dependency_is_in_the_base_or_named_by_its_extra() -> None:
    """A new import outside the base must be declared in an extra, and the CLI must know
    which one, so that a missing extra is reported rather than a traceback."""
    provided = metadata.packages_distributions()
    absent = sorted(set(EXTRA_OF) - set(provided))
    if absent:
        pytest.skip(f"needs every extra installed (absent: {', '.join(absent)})")
    base = base_distributions()
    extras = {
        extra: {canonicalize_name(Requirement(r).name) for r in reqs}
        for extra, reqs in pyproject()["project"]["optional-dependencies"].items()
    }
    undeclared = set()
    for module in third_party_imports():
        dists = {canonicalize_name(d) for d in provided.get(module, [])}
        if dists & base:
            continue
        extra = EXTRA_OF.get(module)
        if extra is None or not dists & extras[extra]:
            undeclared.add(module)
    assert not undeclared, f"imported outside the base, not in EXTRA_OF's extra: {undeclared}"


# -- the dss command without the extras --------------------------------------------------------


def dss_without_extras(*args: str) -> subprocess.CompletedProcess[str]:
    """`dss ARGS` in a Python where no module of any extra can be imported."""
    blocked = sorted(EXTRA_OF)
    code = (
        "import sys\n"
        f"for name in {blocked!r}:\n"
        "    sys.modules[name] = None\n"
        "from swift_dss.cli import main\n"
        f"sys.argv = ['dss', *{list(args)!r}]\n"
        "main()\n"
    )
    return subprocess.run(
        [sys.executable, "-W", "ignore", "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize(
    ("args", "extra"),
    [
        # Fails when the command's module is imported.
        (["deploy", "generate", "inventory.yaml", "--out", "x"], "client"),
        (["reliability", "--help"], "lab"),
        (["experiment", "caching", "--out", "x"], "lab"),
        # Fails only once the command runs (its dependencies are imported late).
        (["loadgen", "workloads"], "loadgen"),
    ],
)
def test_a_command_without_its_extra_names_it_in_one_line(args: list[str], extra: str) -> None:
    proc = dss_without_extras(*args)
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert f"dss {args[0]} needs the '{extra}' extra" in lines[0]
    assert f"pip install 'swift_dss[{extra}]'" in lines[0]


def test_help_lists_every_command_and_what_the_missing_ones_need() -> None:
    proc = dss_without_extras("--help")
    assert proc.returncode == 0, proc.stderr
    for name in COMMANDS:
        assert name in proc.stdout
    assert "(needs the 'client' extra)" in proc.stdout
    assert "(needs the 'lab' extra)" in proc.stdout


def test_commands_of_the_base_install_still_run() -> None:
    proc = dss_without_extras("saio", "--help")
    assert proc.returncode == 0, proc.stderr
    assert "all-in-one" in proc.stdout
