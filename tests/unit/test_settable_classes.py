"""Which classes a client may set: the operator's class sets, per account and per role."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from swift_dss.formats import ClassMap, Limits
from swift_dss.middleware import _roles
from swift_dss.settable_classes import SettableClasses, format_class_set, parse_class_set

CONF = {
    "allowed_classes": "11-31",
    "reserved_classes": "1-10",
    "account_allowed_classes_AUTH_small": "24-25",
    "role_allowed_classes_gold": "0-255",
}


@given(st.frozensets(st.integers(0, 255)))
def test_class_set_round_trip(classes: frozenset[int]) -> None:
    assert parse_class_set(format_class_set(classes)) == classes


def test_class_set_syntax() -> None:
    assert parse_class_set("0, 11-14,24") == {0, 11, 12, 13, 14, 24}
    assert format_class_set({0, 11, 12, 13, 14, 24}) == "0,11-14,24"
    for bad in ("5-3", "300", "a", "1-2-3", "-1"):
        with pytest.raises(ValueError):
            parse_class_set(bad)
    with pytest.raises(ValueError):
        parse_class_set("0-40", max_class=31)


def test_settable_by_account_and_role() -> None:
    settable = SettableClasses(CONF, Limits())
    assert settable.allowed("AUTH_any", []) == {0, *range(11, 32)}
    assert settable.allowed("AUTH_small", []) == {0, 24, 25}
    # A role adds classes, but never the reserved ones.
    assert settable.allowed("AUTH_small", ["gold"]) == {0, *range(11, 256)}
    cmap = ClassMap.build(25, [(0, 8, 3), (8, 8, 31)])
    assert settable.refused(cmap, "AUTH_small", []) == {3, 31}
    assert settable.refused(cmap, "AUTH_small", ["gold"]) == {3}


def test_roles_come_from_tempauth_groups_and_keystone_roles() -> None:
    env = {"REMOTE_USER": "test:tester,test,AUTH_test,.admin", "HTTP_X_ROLES": "member,gold"}
    assert _roles(env) == {"test:tester", "test", "AUTH_test", ".admin", "member", "gold"}
    assert _roles({}) == set()


@given(
    st.frozensets(st.integers(0, 255), max_size=4),
    st.sampled_from(["AUTH_any", "AUTH_small"]),
    st.lists(st.sampled_from(["gold", "other"]), max_size=2),
)
def test_the_no_roles_shortcut_never_lets_a_refused_class_through(
    classes: frozenset[int], account: str, roles: list[str]
) -> None:
    settable = SettableClasses(CONF, Limits())
    wanted = set(classes) or {0}
    cmap = ClassMap.build(min(wanted), [(i * 8, 8, c) for i, c in enumerate(sorted(wanted))])
    if settable.permits_without_roles(cmap.classes(), account):
        assert settable.refused(cmap, account, roles) == set()
    # Without roles the shortcut is exact.
    assert settable.permits_without_roles(cmap.classes(), account) == (
        not settable.refused(cmap, account, [])
    )
