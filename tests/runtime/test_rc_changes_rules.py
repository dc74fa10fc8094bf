"""Rules of `changes`: how a record without `kind` is read (`_legacy`), which values a record may
hold (`_storable`, nesting up to MAX_DEPTH), when a table is the user's (`kept_existing`), and the
line end of a CRLF file (`newline_of`)."""

from __future__ import annotations

import pytest

from ctk.runtime_config import changes
from ctk.runtime_config.changes import (
    FINAL_NEWLINE_ADDED,
    HEADER_VALUE,
    MAX_DEPTH,
    Change,
    ChangeKind,
    kept_existing,
    newline_of,
)

INSIDE = "\u0000inside"


@pytest.mark.parametrize("existed", [True, False])
def test_legacy_whole_file_keeps_every_field(existed: bool) -> None:
    old = Change((), existed, "  \n", "after")
    assert changes._legacy(old) == Change((), existed, "  \n", "after", ChangeKind.WHOLE_FILE)


def test_legacy_final_newline() -> None:
    assert changes._legacy(Change(("\n",), False, None, None)) == FINAL_NEWLINE_ADDED


def test_legacy_blank_inside_drops_the_marker_key_only() -> None:
    old = Change(("a", "b", INSIDE), True, "{ }", "{}")
    assert changes._legacy(old) == Change(("a", "b"), True, "{ }", "{}", ChangeKind.BLANK_INSIDE)


def test_legacy_header_needs_both_values() -> None:
    both = Change(("a", "b"), True, HEADER_VALUE, HEADER_VALUE)
    assert changes._legacy(both) == Change(
        ("a", "b"), True, HEADER_VALUE, HEADER_VALUE, ChangeKind.HEADER
    )
    for old in (
        Change(("a",), True, HEADER_VALUE, "x"),
        Change(("a",), True, "x", HEADER_VALUE),
    ):
        assert changes._legacy(old) == old
        assert changes._legacy(old).kind is ChangeKind.SET


def test_legacy_new_table_needs_empty_table_and_absent() -> None:
    assert changes._legacy(Change(("t",), False, None, {})) == Change(
        ("t",), False, None, {}, ChangeKind.NEW_TABLE
    )
    for old in (Change(("t",), False, None, "v"), Change(("t",), True, {"k": 1}, {})):
        assert changes._legacy(old) == old


def nested(levels: int, inner: object, *, as_dict: bool) -> object:
    value = inner
    for _ in range(levels):
        value = {"k": value} if as_dict else [value]
    return value


@pytest.mark.parametrize("as_dict", [False, True])
def test_storable_nesting_limit(as_dict: bool) -> None:
    deepest = nested(MAX_DEPTH, "x", as_dict=as_dict)
    too_deep = nested(MAX_DEPTH + 1, "x", as_dict=as_dict)
    assert changes._storable(deepest, top=True, nested_null=False, depth=0) is True
    assert changes._storable(too_deep, top=True, nested_null=False, depth=0) is False


def test_storable_depth_bound_itself() -> None:
    assert changes._storable("x", top=False, nested_null=False, depth=MAX_DEPTH) is True
    assert changes._storable("x", top=False, nested_null=False, depth=MAX_DEPTH + 1) is False


@pytest.mark.parametrize("as_dict", [False, True])
def test_storable_nested_null(as_dict: bool) -> None:
    value = nested(2, None, as_dict=as_dict)
    assert changes._storable(value, top=True, nested_null=True, depth=0) is True
    assert changes._storable(value, top=True, nested_null=False, depth=0) is False
    assert changes._storable(None, top=True, nested_null=False, depth=0) is True


@pytest.mark.parametrize("value", [(1,), {1}, b"x", object()])
def test_storable_other_types(value: object) -> None:
    assert changes._storable(value, top=True, nested_null=True, depth=0) is False


def test_kept_existing_without_record_needs_edits_inside() -> None:
    assert kept_existing([], ("a",)) is False
    assert kept_existing([], ("a",), recorded=True) is True
    # an edit elsewhere, or of the table itself, is not an edit inside it
    assert kept_existing([Change(("b", "c"), True, 1, 2)], ("a",)) is False
    assert kept_existing([Change(("a",), True, 1, 2)], ("a",)) is False
    assert kept_existing([Change(("a", "c"), True, 1, 2)], ("a",)) is True


def test_newline_of() -> None:
    assert newline_of("a\r\nb\r\n") == "\r\n"
    assert newline_of("a\nb\r\n") == "\n"
