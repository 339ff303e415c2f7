"""Which classes a client may set: the operator's class sets, per account and per role.

A class set is written ``0,11-14,24-31`` in the ``dss`` filter section (see
:mod:`swift_dss.middleware` for the options that take one).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from swift.common.utils import list_from_csv

from swift_dss.formats import ClassMap, Limits
from swift_dss.formats.headers import parse_number
from swift_dss.formats.limits import CLASS_SPACE

ACCOUNT_PREFIX = "account_allowed_classes_"
ROLE_PREFIX = "role_allowed_classes_"


def parse_class_set(text: str, max_class: int = CLASS_SPACE - 1) -> frozenset[int]:
    """``"0,11-14,24-31"`` -> the set of those classes."""
    classes: set[int] = set()
    for item in list_from_csv(text):
        low, sep, high = item.partition("-")
        lo = parse_number(low, "class")
        hi = parse_number(high, "class") if sep else lo
        if lo > hi or hi > max_class:
            raise ValueError(f"class range {item!r} is not within 0-{max_class}")
        classes.update(range(lo, hi + 1))
    return frozenset(classes)


def format_class_set(classes: Iterable[int]) -> str:
    """The inverse of :func:`parse_class_set`, with runs collapsed."""
    out: list[str] = []
    run: list[int] = []
    for c in sorted(classes):
        if run and c == run[-1] + 1:
            run.append(c)
            continue
        if run:
            out.append(str(run[0]) if len(run) == 1 else f"{run[0]}-{run[-1]}")
        run = [c]
    if run:
        out.append(str(run[0]) if len(run) == 1 else f"{run[0]}-{run[-1]}")
    return ",".join(out)


class SettableClasses:
    """Which classes a request may set: per account, per role, never the reserved ones."""

    def __init__(self, conf: Mapping[str, str], limits: Limits) -> None:
        top = limits.max_class
        self.reserved = parse_class_set(conf.get("reserved_classes", "1-10"), top)
        self.default = parse_class_set(conf.get("allowed_classes", f"0-{top}"), top)
        self.accounts: dict[str, frozenset[int]] = {}
        self.roles: dict[str, frozenset[int]] = {}
        for key, value in conf.items():
            if key.startswith(ACCOUNT_PREFIX):
                self.accounts[key[len(ACCOUNT_PREFIX) :]] = parse_class_set(value, top)
            elif key.startswith(ROLE_PREFIX):
                self.roles[key[len(ROLE_PREFIX) :]] = parse_class_set(value, top)
        # What an account allows before any role adds to it: when a request's classes are
        # all in here, which is nearly always, its roles need not be looked at.
        self._base = {a: self._settable(s) for a, s in self.accounts.items()}
        self._default_base = self._settable(self.default)

    def _settable(self, classes: Iterable[int]) -> frozenset[int]:
        return frozenset((set(classes) | {0}) - self.reserved)

    def permits_without_roles(self, classes: set[int], account: str) -> bool:
        """True when ``account`` may set ``classes`` whatever roles the caller has."""
        return classes <= self._base.get(account, self._default_base)

    def allowed(self, account: str, roles: Iterable[str]) -> frozenset[int]:
        allowed = set(self.accounts.get(account, self.default))
        for role in roles:
            allowed |= self.roles.get(role, frozenset())
        return self._settable(allowed)

    def refused(self, cmap: ClassMap, account: str, roles: Iterable[str]) -> set[int]:
        return cmap.classes() - self.allowed(account, roles)
