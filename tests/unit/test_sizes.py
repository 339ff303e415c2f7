"""Byte counts from people: what is too large for any file or cache is refused with a
ValueError that repeats only the start of the value, as every command's one-line error."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from swift_dss.cli import main
from swift_dss.sizes import MAX_SIZE, parse_size, shown

BIG = "9" * 400


@pytest.mark.parametrize(
    "value", [BIG, f"{BIG}KiB", f"{BIG}.5", "8192P", "9223372036854775808", 2**63, 10**400]
)
def test_a_size_of_8_eib_or_more_is_too_large(value: int | str) -> None:
    # float() read a number of hundreds of digits as infinity, which int() refused with an
    # OverflowError that no caller caught.
    with pytest.raises(
        ValueError, match=r"^size '?\w{1,20}(\u2026)?'? is too large \(sizes are below 8 EiB\)$"
    ):
        parse_size(value)


@pytest.mark.parametrize(
    ("text", "n"),
    [("8191P", 8191 << 50), (str(MAX_SIZE), MAX_SIZE), ("0009KiB", 9 << 10),
     ("1." + "0" * 5000 + "1K", 1024), ("0.5K", 512), ("1.1K", 1126)],
)  # fmt: skip
def test_sizes_below_the_limit_are_exact(text: str, n: int) -> None:
    assert parse_size(text) == n


def test_a_long_value_is_shown_cut_short() -> None:
    assert shown(BIG) == "'" + "9" * 20 + "\u2026'"
    assert shown("10MiB") == "'10MiB'"
    assert shown(1.5) == "1.5"
    with pytest.raises(ValueError, match=r"^size 'x{20}\u2026' is not a number"):
        parse_size("x" * 1000)


@pytest.mark.parametrize(
    "args",
    [["classify", "--size", BIG, "f.bin"], ["classify", "--large-threshold", BIG, "f.bin"]],
)
def test_the_commands_refuse_it_in_one_line(args: list[str]) -> None:
    result = CliRunner().invoke(main, args)
    assert result.exit_code != 0 and isinstance(result.exception, SystemExit), result.output
    assert result.output.strip().splitlines()[-1].startswith("Error: "), result.output
    assert "size '99999999999999999999\u2026' is too large" in result.output
