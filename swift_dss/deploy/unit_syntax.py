"""Values written into systemd unit files so that systemd reads back exactly what was meant.

The rules are those of systemd.syntax(7) ("Quoting") and systemd.service(5) ("Command
lines"): a word of a command line may be wrapped in double quotes, inside which C-style
escapes apply; ``%`` starts a specifier everywhere and ``$`` a variable in command lines,
so both are doubled to stay literal.
"""

from __future__ import annotations

import re

#: Words that need no quoting: none of whitespace, quotes, backslash, ``$``, ``%`` or ``;``.
_PLAIN = re.compile(r"[^\s\"'\\$%;]+")
#: Characters a unit file cannot hold as they are: they end or break the line.
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_ESCAPES = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}


def specifiers_escaped(text: str) -> str:
    """TEXT in a setting that expands specifiers (Description=, RequiresMountsFor=, ...)."""
    return text.replace("%", "%%")


def exec_word(word: str) -> str:
    """WORD as one argument of an Exec*= command line."""
    if _PLAIN.fullmatch(word):
        return word
    text = word.replace("\\", "\\\\").replace('"', '\\"')
    text = _CONTROL.sub(lambda m: _ESCAPES.get(m[0], f"\\x{ord(m[0]):02x}"), text)
    return '"' + text.replace("%", "%%").replace("$", "$$") + '"'


def exec_line(argv: list[str]) -> str:
    """ARGV as the value of an Exec*= setting, each word given to the process as it is."""
    return " ".join(exec_word(word) for word in argv)
