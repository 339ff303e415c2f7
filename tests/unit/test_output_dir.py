"""Every command's ``--out`` is made and checked before the command runs: a directory that
cannot be written ends the command with a usage error naming it, not with a traceback
after the run."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from swift_dss.cli import main

#: Each command that writes its results under --out, with what else it needs to start.
COMMANDS = [
    ["bench", "engine"],
    ["experiment", "caching"],
    ["experiment", "traffic"],
    ["experiment", "compare", "."],
    ["experiment", "sweep"],
    ["experiment", "fs"],
    ["loadgen", "run", "paper"],
    ["loadgen", "sweep"],
    ["loadgen", "cache-study"],
    ["reliability", "run"],
]


@pytest.fixture
def regular_file(tmp_path: Path) -> Path:
    path = tmp_path / "a-file"
    path.write_text("not a directory\n")
    return path


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_an_out_beneath_a_file_is_a_usage_error(command: list[str], regular_file: Path) -> None:
    out = regular_file / "results"
    result = CliRunner().invoke(main, [*command, "--out", str(out)])
    assert result.exit_code == 2, result.output
    assert f"cannot create {out}: Not a directory" in result.output
    assert "Traceback" not in result.output
    assert regular_file.read_text() == "not a directory\n"


@pytest.mark.parametrize("command", COMMANDS[:2], ids=" ".join)
def test_an_out_that_is_a_file_is_a_usage_error(command: list[str], regular_file: Path) -> None:
    result = CliRunner().invoke(main, [*command, "--out", str(regular_file)])
    assert result.exit_code == 2, result.output
    assert "is a file" in result.output


def test_a_directory_this_process_cannot_write_in_is_refused() -> None:
    # procfs refuses writes to a process's directory even to root, whose permission checks
    # a mode bit could not show.
    result = CliRunner().invoke(main, ["bench", "engine", "--out", "/proc/self"])
    assert result.exit_code == 2, result.output
    assert "cannot write in /proc/self" in result.output


def test_a_missing_out_is_made_with_its_parents(tmp_path: Path) -> None:
    from swift_dss.output_dir import OutputDir

    out = tmp_path / "a" / "b"
    assert OutputDir().convert(str(out), None, None) == out
    assert out.is_dir()
