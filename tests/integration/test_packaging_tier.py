"""dss-tier on its own: the Makefile's choice of cargo, `cargo install`, and the .deb of `make deb`.

The .deb test builds the package only where cargo-deb is installed (`make deb` installs the
pinned version, which compiles for minutes); elsewhere it is skipped with that reason.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).parents[2]
TIER_CRATE = REPO / "tier" / "crates" / "dss-tier"
PRINT_CARGO = "print-cargo: ; @echo '$(CARGO)'"


def rust_version() -> str:
    return tomllib.loads((TIER_CRATE / "Cargo.toml").read_text())["package"]["rust-version"]


def version_after(version: str) -> str:
    major, minor = version.split(".")[:2]
    return f"{major}.{int(minor) + 1}.0"


def version_before(version: str) -> str:
    major, minor = version.split(".")[:2]
    return f"{major}.{int(minor) - 1}.0"


def cargo_reporting(directory: Path, version: str) -> Path:
    """An executable `cargo` in DIRECTORY that reports VERSION, all the Makefile asks of it."""
    directory.mkdir(parents=True, exist_ok=True)
    cargo = directory / "cargo"
    cargo.write_text(f"#!/bin/sh\necho 'cargo {version} (0000000 2026-01-01)'\n")
    cargo.chmod(0o755)
    return cargo


def chosen_cargo(path_dir: Path, home: Path) -> str:
    env = {"PATH": f"{path_dir}:/usr/sbin:/usr/bin:/sbin:/bin", "HOME": str(home)}
    done = subprocess.run(
        ["make", "-s", "--no-print-directory", "--eval", PRINT_CARGO, "print-cargo"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return done.stdout.strip()


def debian_cargo() -> str:
    """/usr/bin/cargo when it is new enough for the tier (the Makefile's last choice)."""
    try:
        out = subprocess.run(
            ["/usr/bin/cargo", "--version"], capture_output=True, text=True, check=True
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        return ""
    have = [int(x) for x in out.split()[1].split("-")[0].split(".")[:2]]
    need = [int(x) for x in rust_version().split(".")[:2]]
    return "/usr/bin/cargo" if have >= need else ""


def test_the_tier_crate_declares_the_rust_the_makefile_checks_for() -> None:
    assert re.fullmatch(r"1\.\d+", rust_version())


def test_a_cargo_on_path_new_enough_for_the_tier_is_chosen(tmp_path: Path) -> None:
    cargo = cargo_reporting(tmp_path / "bin", version_after(rust_version()))
    assert chosen_cargo(cargo.parent, tmp_path / "home") == str(cargo)


def test_a_cargo_on_path_older_than_the_tier_needs_is_passed_over(tmp_path: Path) -> None:
    old = cargo_reporting(tmp_path / "bin", version_before(rust_version()))
    home = tmp_path / "home"
    assert chosen_cargo(old.parent, home) == debian_cargo()
    newer = cargo_reporting(home / ".cargo" / "bin", f"{version_after(rust_version())}-nightly")
    assert chosen_cargo(old.parent, home) == str(newer)


def test_the_tier_installs_with_cargo_install_from_anywhere(tmp_path: Path) -> None:
    # The sources name the policy and ioctl files through variables of the repository's
    # .cargo/config.toml, which `cargo install --path` finds above the crate from any cwd.
    cargo = shutil.which("cargo") or str(Path.home() / ".cargo" / "bin" / "cargo")
    env = {**os.environ, "CARGO_TARGET_DIR": str(REPO / "tier" / "target")}
    subprocess.run(
        [cargo, "install", "--quiet", "--locked", "--path", str(TIER_CRATE), "--root", tmp_path],
        cwd=tmp_path,
        env=env,
        check=True,
        timeout=1800,
    )
    done = subprocess.run(
        [tmp_path / "bin" / "dss-tier", "--help"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0 and "mount" in done.stdout


def cargo_deb_installed() -> bool:
    cargo = shutil.which("cargo") or str(Path.home() / ".cargo" / "bin" / "cargo")
    try:
        return subprocess.run([cargo, "deb", "--version"], capture_output=True).returncode == 0
    except OSError:
        return False


@pytest.mark.skipif(not cargo_deb_installed(), reason="cargo-deb is not installed (make deb)")
def test_make_deb_packages_the_daemon_the_policies_and_its_dependencies() -> None:
    subprocess.run(["make", "-s", "deb"], cwd=REPO, check=True, timeout=1800)
    version = tomllib.loads((REPO / "tier" / "Cargo.toml").read_text())["workspace"]["package"][
        "version"
    ]
    arch = subprocess.run(
        ["dpkg", "--print-architecture"], capture_output=True, text=True, check=True
    ).stdout.strip()
    deb = REPO / "tier" / "target" / "debian" / f"dss-tier_{version}-1_{arch}.deb"
    contents = subprocess.run(
        ["dpkg-deb", "-c", deb], capture_output=True, text=True, check=True
    ).stdout
    files = {line.split()[-1] for line in contents.splitlines()}
    assert "./usr/bin/dss-tier" in files
    shipped = {p.name for p in (REPO / "swift_dss" / "policies").glob("*.toml")}
    assert {f"./usr/share/dss-tier/policies/{name}" for name in shipped} <= files
    fields = {
        name: subprocess.run(
            ["dpkg-deb", "-f", deb, name], capture_output=True, text=True, check=True
        ).stdout.strip()
        for name in ("Package", "Depends", "Maintainer")
    }
    assert fields["Package"] == "dss-tier"
    assert "fuse3" in [dep.split()[0] for dep in fields["Depends"].split(",")]
    assert fields["Maintainer"]
    info = subprocess.run(["dpkg-deb", "-I", deb], capture_output=True, text=True, check=True)
    assert "Depends: " in info.stdout
