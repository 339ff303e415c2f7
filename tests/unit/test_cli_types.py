"""The commands' shared option types. Every ``--out`` is checked before the command runs:
a directory that cannot be made or written ends the command with a usage error naming it,
not with a traceback after the run. Every scale, duration and timeout is a
finite number above 0: nan and inf are refused as zero and negatives are, before anything
starts."""

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
    assert f"cannot create {out}: {regular_file} is not a directory" in result.output
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


def test_a_missing_out_is_accepted_and_left_to_the_command_to_make(tmp_path: Path) -> None:
    from swift_dss.cli_types import OutputDir

    out = tmp_path / "a" / "b"
    assert OutputDir().convert(str(out), None, None) == out
    assert not (tmp_path / "a").exists()


#: (command, option) of each scale, duration and timeout that must be finite and above 0.
POSITIVE_OPTIONS = [
    (["loadgen", "run", "paper"], "--scale"),
    (["loadgen", "run", "paper"], "--count-scale"),
    (["loadgen", "run", "paper"], "--duration-scale"),
    (["loadgen", "run", "paper"], "--timeout"),
    (["loadgen", "sweep"], "--time-cap"),
    (["loadgen", "sweep"], "--timeout"),
    (["experiment", "caching"], "--scale"),
    (["experiment", "caching"], "--size-scale"),
    (["experiment", "caching"], "--count-scale"),
    (["experiment", "traffic"], "--duration"),
    (["experiment", "fs"], "--scale"),
    (["reliability", "run"], "--duration"),
]


@pytest.mark.parametrize("value", ["nan", "inf", "0", "-1"])
@pytest.mark.parametrize(
    ("command", "option"), POSITIVE_OPTIONS, ids=[f"{' '.join(c)} {o}" for c, o in POSITIVE_OPTIONS]
)
def test_a_scale_or_time_must_be_finite_and_above_zero(
    command: list[str], option: str, value: str, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    result = CliRunner().invoke(main, [*command, option, value, "--out", str(out)])
    assert result.exit_code == 2, result.output
    assert f"Invalid value for '{option}'" in result.output
    assert "Traceback" not in result.output


@pytest.mark.parametrize("value", ["nan", "inf", "-1"])
def test_the_soak_may_be_skipped_but_not_endless(value: str, tmp_path: Path) -> None:
    args = ["reliability", "run", "--soak-duration", value, "--out", str(tmp_path)]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2, result.output
    assert "Invalid value for '--soak-duration'" in result.output


@pytest.mark.parametrize("command", [["saio", "up"], ["deploy", "local-cluster", "up"], ["demo"]])
@pytest.mark.parametrize("port", ["-1", "65536"])
def test_a_proxy_port_out_of_range_is_refused_before_anything_starts(
    command: list[str], port: str, tmp_path: Path
) -> None:
    cluster = tmp_path / "cluster"
    result = CliRunner().invoke(main, [*command, "--port", port, "--dir", str(cluster)])
    assert result.exit_code == 2, result.output
    assert "Invalid value for '--port'" in result.output
    assert not cluster.exists()


@pytest.mark.parametrize("command", [["upload"], ["download"], ["classes"], ["reclassify"]])
@pytest.mark.parametrize(
    ("container", "reason"),
    [
        ("photos/2024", "'photos/2024' is not a container name"),
        ("", "'' is not a container name"),
        ("..", "container name '..' would be resolved away"),
    ],
)
def test_a_container_name_with_a_slash_or_none_is_refused(
    command: list[str], container: str, reason: str, regular_file: Path
) -> None:
    # Swift would read photos/2024/OBJ as the object 2024/OBJ in photos.
    args = [*command, container, str(regular_file)]
    result = CliRunner().invoke(main, args, env={"ST_AUTH": "http://127.0.0.1:9/auth/v1.0"})
    assert result.exit_code == 2, result.output
    assert reason in result.output


@pytest.mark.parametrize(
    ("args", "reason"),
    [
        # Swift would take the request for the container's: its HEAD answers 200.
        (["download", "c", ""], "an object name may not be empty"),
        (["classes", "c", ""], "an object name may not be empty"),
        (["reclassify", "c", "", "--class", "25"], "an object name may not be empty"),
        (["upload", "c", "FILE", "--name", ""], "an object name may not be empty"),
        # HTTP clients resolve dot segments away: c/../up would be the container up.
        (["download", "c", "../up"], "segment, which HTTP clients resolve away"),
        (["classes", "c", "a/./b"], "segment, which HTTP clients resolve away"),
        (["reclassify", "c", "..", "--class", "25"], "segment, which HTTP clients resolve away"),
        (["upload", "c", "FILE", "--name", "x/../up"], "segment, which HTTP clients resolve away"),
    ],
    ids=lambda a: a[0] if isinstance(a, list) else "",
)
def test_an_object_name_a_request_cannot_address_is_refused(
    args: list[str], reason: str, regular_file: Path
) -> None:
    args = [str(regular_file) if a == "FILE" else a for a in args]
    result = CliRunner().invoke(main, args, env={"ST_AUTH": "http://127.0.0.1:9/auth/v1.0"})
    assert result.exit_code == 2, result.output
    assert reason in result.output


def test_an_upload_named_by_a_relative_path_with_dots_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "f").write_bytes(b"x")
    monkeypatch.chdir(tmp_path / "sub")
    result = CliRunner().invoke(
        main, ["upload", "c", "../f"], env={"ST_AUTH": "http://127.0.0.1:9/auth/v1.0"}
    )
    assert result.exit_code != 0, result.output
    assert "Traceback" not in result.output
    last = result.output.strip().splitlines()[-1]
    assert last.startswith("Error: ") and "'..' segment" in last and "--name" in last, last


@pytest.mark.parametrize(
    ("output", "reason"),
    [("/proc/nope", "cannot write in /proc"), ("FILE/x", "is not a directory")],
)
def test_a_download_target_that_cannot_be_written_is_refused_first(
    output: str, reason: str, regular_file: Path
) -> None:
    # Checked before any request: the auth URL here answers nothing.
    output = output.replace("FILE", str(regular_file))
    args = ["download", "c", "o", "-o", output]
    result = CliRunner().invoke(main, args, env={"ST_AUTH": "http://127.0.0.1:9/auth/v1.0"})
    assert result.exit_code == 2, result.output
    assert reason in result.output
