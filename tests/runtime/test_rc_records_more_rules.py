"""Reading a damaged record, merging two runs' records, and the replaced keys, in-process.

(issue 26: survivors of the mutation run in `changes.load_record`, `changes.merge_records` and
`changes.replaced_keys`.)"""

from __future__ import annotations

import json

import pytest

from ctk.errors import CtkError
from ctk.runtime_config.changes import (
    MAX_DEPTH,
    RECORD_HINT,
    Change,
    ChangeKind,
    load_record,
    merge_records,
    replaced_keys,
)
from ctk.runtime_config.parse import JSONValue


def _record(**fields: JSONValue) -> str:
    item: dict[str, JSONValue] = {"kind": "set", "keys": ["a"], "existed": False, "before": None}
    item.update(fields)
    return json.dumps({"changes": [item]})


def test_null_inside_a_value_is_refused_by_default() -> None:
    with pytest.raises(CtkError) as err:
        load_record("r.json", _record(after={"x": None}))
    assert err.value.message == (
        "r.json: not a ctk record of changes (change 1: `after` holds a value no config file can "
        "hold)"
    )
    assert err.value.hint == RECORD_HINT


def test_null_inside_a_value_is_kept_when_allowed() -> None:
    assert load_record("r.json", _record(after={"x": None}), nested_null=True) == (
        Change(("a",), False, None, {"x": None}),
    )


def test_json_nested_too_deeply_to_read() -> None:
    text = '{"changes": ' + "[" * 100_000 + "]" * 100_000 + "}"
    with pytest.raises(CtkError) as err:
        load_record("deep.json", text)
    assert err.value.message == "deep.json: not a ctk record of changes (nested too deeply)"
    assert err.value.hint == RECORD_HINT


@pytest.mark.parametrize("after", [2**63, float("inf")])
def test_an_after_no_config_can_hold_is_refused(after: JSONValue) -> None:
    with pytest.raises(CtkError) as err:
        load_record("r.json", _record(after=after))
    assert err.value.message == (
        "r.json: not a ctk record of changes (change 1: `after` holds a value no config file can "
        "hold)"
    )


def test_the_deepest_value_a_record_may_hold() -> None:
    value: JSONValue = "x"
    for _ in range(MAX_DEPTH):
        value = [value]
    assert load_record("r.json", _record(after=value)) == (Change(("a",), False, None, value),)
    with pytest.raises(CtkError, match="`after` holds a value"):
        load_record("r.json", _record(after=[value]))


def test_an_unknown_kind_is_named() -> None:
    with pytest.raises(CtkError) as err:
        load_record("r.json", _record(kind="moved", after=1))
    assert (
        err.value.message
        == "r.json: not a ctk record of changes (change 1: unknown `kind` 'moved')"
    )
    assert err.value.hint == RECORD_HINT


def test_a_later_run_updates_only_its_own_change() -> None:
    old = (
        Change(("a",), True, 1, 2),
        Change(("b",), False, None, {}, ChangeKind.NEW_TABLE),
        Change(("c",), True, "x", "y"),
    )
    new = (
        Change(("a",), False, None, 3),
        Change(("d",), False, None, 4),
        Change(("c",), False, None, "z", ChangeKind.HEADER),
    )
    assert merge_records(old, new) == (
        Change(("a",), True, 1, 3),
        Change(("b",), False, None, {}, ChangeKind.NEW_TABLE),
        Change(("c",), True, "x", "z"),
        Change(("d",), False, None, 4),
    )


def test_replaced_keys_are_keys_set_over_existing_values() -> None:
    changes = (
        Change(("t", "a"), True, 1, 2),
        Change(("t", "b"), False, None, 2),
        Change(
            ("t", "h"), True, {"implicit-table": True}, {"implicit-table": True}, ChangeKind.HEADER
        ),
        Change((), False, None, None),
        Change(("c",), True, 0, 1),
    )
    assert replaced_keys(changes) == ("a", "c")
