"""The rules of ctk's config parsers and of its daemon.json member edits, pinned in-process.

`load_json_object`: an empty file, a JSON syntax error, NaN/Infinity, a key twice in one object,
a number too long to read and a top level that is not an object each give their own message
(with line and column) and hint. `check_depth` counts brackets outside strings and comments up to
64 deep; `_check_key_depth` counts tables (dotted keys, arrays of tables) up to 64 deep, and
`_too_deep` names the first line with 32 dots. `jsonedit.set_member`: where the file's
indentation step or the caller's default applies, the gap and separator a new member gets, when a
new member is written on one line, and how an empty object is filled.

(issue 26: survivors of the mutation run in `parse.load_json_object` and the TOML/JSON loading
helpers, and in `jsonedit.set_member`.)"""

from __future__ import annotations

import json
import math

import pytest

from ctk import toml_compat
from ctk.errors import CtkError
from ctk.runtime_config import parse
from ctk.runtime_config.jsonedit import set_member
from ctk.runtime_config.parse import JSONValue, load_json_object, load_toml, same_data, type_name

FIX = "fix the file, or pass another one with --config"
NESTING_HINT = "no engine config nests like this; fix the file, or pass another one with --config"
LONG_HINT = "no engine reads a number this long; fix the file, or pass another one with --config"
TOO_DEEP = "c.toml: not valid TOML: tables nested more than 64 deep"


def _json_error(text: str) -> CtkError:
    with pytest.raises(CtkError) as info:
        load_json_object("d.json", text)
    return info.value


def _toml_error(text: str) -> CtkError:
    with pytest.raises(CtkError) as info:
        load_toml("c.toml", text)
    return info.value


def _keys(count: int, prefix: str = "k") -> str:
    return ".".join(f"{prefix}{i}" for i in range(count))


# --- load_json_object -------------------------------------------------------------------------


@pytest.mark.parametrize("text", ["", " \n\t\r\n"])
def test_an_empty_json_file(text: str) -> None:
    error = _json_error(text)
    assert error.message == "d.json: empty file, expected a JSON object"
    assert error.hint == 'write "{}" into it, or remove it, and run again'


def test_an_object_keeps_its_key_order_and_blanks_around_it() -> None:
    data = load_json_object("d.json", ' \n{"b": 1, "a": {"d": [1, 2], "c": null}}\n ')
    assert data == {"b": 1, "a": {"d": [1, 2], "c": None}}
    assert list(data) == ["b", "a"]
    assert list(data["a"]) == ["d", "c"]


def test_a_json_syntax_error_says_where() -> None:
    # the wording and position are the json module's, which differ between Pythons (3.13 says
    # "Illegal trailing comma before end of object (line 2, column 9)", 3.11 "Expecting property
    # name enclosed in double quotes (line 3, column 1)"): the message quotes what it reports
    text = '{\n  "a": 1,\n}'
    with pytest.raises(json.JSONDecodeError) as stdlib:
        json.loads(text)
    where = stdlib.value
    error = _json_error(text)
    assert error.message == (
        f"d.json: not valid JSON: {where.msg} (line {where.lineno}, column {where.colno})"
    )
    assert where.lineno in (2, 3)
    assert error.hint == FIX


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param('{"NaN": NaN}', "NaN is not a JSON number (line 1, column 9)", id="nan"),
        pytest.param(
            '{"s": "Infinity",\n "n": Infinity}',
            "Infinity is not a JSON number (line 2, column 7)",
            id="after-a-string-naming-it",
        ),
        pytest.param(
            '{"s": "a\\"NaN",\n\n   "n": -Infinity}',
            "-Infinity is not a JSON number (line 3, column 9)",
            id="after-an-escaped-quote",
        ),
    ],
)
def test_nan_and_infinity_are_refused(text: str, message: str) -> None:
    error = _json_error(text)
    assert error.message == f"d.json: not valid JSON: {message}"
    assert error.hint == "dockerd refuses it too; write a number or a string"


def test_a_key_twice_in_one_object() -> None:
    error = _json_error('{"a": {"b": 1, "b": 2}}')
    assert error.message == "d.json: not valid JSON: key 'b' appears twice in one object"
    assert error.hint == "keep one of them"


def test_the_same_key_in_two_objects_is_fine() -> None:
    assert load_json_object("d.json", '{"a": {"a": 1}, "b": {"a": 2}}') == {
        "a": {"a": 1},
        "b": {"a": 2},
    }


def test_a_number_too_long_to_read_says_where() -> None:
    # the digits in the string before it are not the number (nor is a string of 5,000 digits)
    text = '{"s": "1", "t": "' + "2" * 5000 + '",\n "n": ' + "1" * 4301 + "}"
    error = _json_error(text)
    assert error.message == (
        "d.json: not valid JSON: a number with thousands of digits (line 2, column 7)"
    )
    assert error.hint == LONG_HINT


def test_the_first_long_number_is_named() -> None:
    text = '{"a": [\n' + "1" * 4301 + ",\n" + "2" * 4301 + "]}"
    assert _json_error(text).message == (
        "d.json: not valid JSON: a number with thousands of digits (line 2, column 1)"
    )


def test_a_number_of_4300_digits_is_read() -> None:
    assert load_json_object("d.json", '{"n": ' + "7" * 4300 + "}") == {"n": int("7" * 4300)}


def test_a_long_number_found_nowhere_has_no_position() -> None:
    error = parse._long_number("x.conf", "a = 1", "TOML")
    assert error.message == "x.conf: not valid TOML: a number with thousands of digits"
    assert error.hint == LONG_HINT


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("[]", "an array"),
        ("1.5", "a number"),
        ('"s"', "a string"),
        ("null", "null"),
        ("false", "a boolean"),
    ],
)
def test_the_top_must_be_an_object(text: str, found: str) -> None:
    error = _json_error(text)
    assert error.message == f"d.json: expected a JSON object at the top, found {found}"
    assert error.hint == "the file must look like {...}"


# --- check_depth ------------------------------------------------------------------------------


def test_json_nested_64_deep_is_fine_65_is_not() -> None:
    # `{"a": ` and 63 brackets: 64 levels
    assert load_json_object("d.json", '{"a": ' + "[" * 63 + "]" * 63 + "}") == {"a": _nested(63)}
    error = _json_error('{"a": ' + "[" * 64 + "]" * 64 + "}")
    assert error.message == (
        "d.json: not valid JSON: arrays or objects nested more than 64 deep (line 1, column 70)"
    )
    assert error.hint == NESTING_HINT


def _nested(depth: int) -> JSONValue:
    value: JSONValue = []
    for _ in range(depth - 1):
        value = [value]
    return value


def test_closed_brackets_count_no_more() -> None:
    # After `[]` the depth is 0 again, and stray closers do not take it below 0: 64 more levels
    # are within bounds, and the JSON parser is the one to refuse the text.
    for start, column in (("[]", 3), ("]]", 1), ("{}", 3)):
        error = _json_error(start + "[" * 64 + "]" * 64)
        message = "Extra data" if start != "]]" else "Expecting value"
        assert error.message == f"d.json: not valid JSON: {message} (line 1, column {column})"


def test_a_closed_bracket_takes_away_one_level() -> None:
    # 64 levels, back to 63, then a sibling array of two levels: the second is the 65th
    error = _json_error('{"a": ' + "[" * 63 + "], [[]]" + "]" * 62 + "}")
    assert error.message == (
        "d.json: not valid JSON: arrays or objects nested more than 64 deep (line 1, column 74)"
    )


def test_brackets_in_json_strings_do_not_count() -> None:
    text = '{"a": "' + "[" * 70 + '", "b": "\\"' + "{" * 70 + '"}'
    assert load_json_object("d.json", text) == {"a": "[" * 70, "b": '"' + "{" * 70}


def test_toml_nested_too_deep_by_brackets() -> None:
    error = _toml_error("a = 1\nb = " + "[" * 65 + "]" * 65)
    assert error.message == (
        "c.toml: not valid TOML: arrays or tables nested more than 64 deep (line 2, column 69)"
    )
    assert error.hint == NESTING_HINT


def test_brackets_in_toml_strings_and_comments_do_not_count() -> None:
    deep = "[" * 70
    text = (
        f'a = "{deep}"\nb = \'{deep}\'\n# {deep}\nc = """\n{deep}\\""""\nd = \'\'\'\n{deep}\'\'\'\n'
    )
    data = load_toml("c.toml", text)
    assert data == {"a": deep, "b": deep, "c": deep + '"', "d": deep}


# --- load_toml --------------------------------------------------------------------------------


def test_a_toml_syntax_error_says_where() -> None:
    error = _toml_error("a = 1\nb = \n")
    assert error.message == "c.toml: not valid TOML: Invalid value (at line 2, column 5)"
    assert error.hint == FIX


def test_a_toml_number_too_long_to_read() -> None:
    # the digits of the comment before it are not the number
    error = _toml_error("# " + "1" * 5000 + "\na = " + "1" * 4301 + "\n")
    assert error.message == (
        "c.toml: not valid TOML: a number with thousands of digits (line 2, column 5)"
    )
    assert error.hint == LONG_HINT


def test_a_parser_recursing_too_deep(monkeypatch: pytest.MonkeyPatch) -> None:
    """tomli (Python 3.10) recurses into a key of many dotted parts: the same error as ours."""

    def recurse(text: str) -> dict[str, JSONValue]:
        raise RecursionError

    monkeypatch.setattr(toml_compat, "loads", recurse)
    error = _toml_error("recursing = 1\n" + _keys(40, "r") + " = 1\n")
    assert error.message == TOO_DEEP + " (line 2)"
    assert error.hint == NESTING_HINT


def test_load_toml_reads_the_data() -> None:
    assert load_toml("c.toml", '[a.b]\nc = [1, {d = "e"}]\n') == {
        "a": {"b": {"c": [1, {"d": "e"}]}}
    }


# --- _check_key_depth and _too_deep -----------------------------------------------------------


def test_dotted_keys_64_levels_deep_with_the_value() -> None:
    # 62 tables under the top one, and the value: 64 levels
    assert load_toml("c.toml", _keys(63, "a") + " = 1\n")
    error = _toml_error(_keys(64, "b") + " = 1\n")
    assert error.message == TOO_DEEP + " (line 1)"
    assert error.hint == NESTING_HINT


def test_arrays_of_tables_count_as_a_level() -> None:
    # the array, the table in it and x: 61 tables around them make 64 levels
    assert load_toml("c.toml", f"[[{_keys(61, 'c')}]]\nx = 1\n")
    assert _toml_error(f"[[{_keys(62, 'd')}]]\nx = 1\n").message == TOO_DEEP + " (line 1)"


def test_arrays_count_as_levels() -> None:
    ok = "a = " + "[" * 63 + "]" * 63 + "\n"
    assert load_toml("c.toml", ok) == {"a": _nested(63)}
    # 64 arrays: the brackets are within bounds, the levels with the top table are not
    too_deep = "a = " + "[" * 64 + "]" * 64 + "\n"
    assert _toml_error(too_deep).message == TOO_DEEP


@pytest.mark.parametrize(
    ("lines", "where"),
    [
        pytest.param([_keys(32, "e") + " = 1"], "", id="31-dots-name-no-line"),
        pytest.param([_keys(33, "f") + " = 1"], " (line 1)", id="32-dots"),
        pytest.param(["x = 1", _keys(40, "g") + " = 1"], " (line 2)", id="counted-from-1"),
    ],
)
def test_the_line_named_for_tables_too_deep(lines: list[str], where: str) -> None:
    deep = "z = " + "[" * 64 + "]" * 64
    error = _toml_error("\n".join([*lines, deep]) + "\n")
    assert error.message == TOO_DEEP + where


# --- same_data and type_name ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        ({"a": 1}, {"a": 1}, True),
        ({"a": 1}, {"b": 1}, False),
        ({"a": 1}, {"a": 2}, False),
        ({"a": 1}, {"a": 1, "b": 1}, False),
        ({"a": 1}, 1, False),
        ([1, 2], [1, 2], True),
        ([1, 2], [1, 3], False),
        ([1], [1, 1], False),
        ([1], 1, False),
        (math.nan, math.nan, True),
        ({"a": [math.nan]}, {"a": [math.nan]}, True),
        (math.nan, 1.0, False),
        (1.0, math.nan, False),
        (1.0, 2.0, False),
        (1.0, 1.0, True),
        ("a", "a", True),
        ("a", "b", False),
    ],
)
def test_same_data(a: JSONValue, b: JSONValue, same: bool) -> None:
    assert same_data(a, b) is same


@pytest.mark.parametrize(
    ("value", "name"),
    [
        ({}, "an object"),
        ([], "an array"),
        (True, "a boolean"),
        (0, "a number"),
        (0.5, "a number"),
        ("", "a string"),
        (None, "null"),
        (b"", "bytes"),
    ],
)
def test_type_name(value: object, name: str) -> None:
    assert type_name(value) == name


# --- jsonedit.set_member ----------------------------------------------------------------------

SET = [
    pytest.param("{}", ("b",), 1, '{\n  "b": 1\n}', id="empty-top"),
    pytest.param("\n{}\n", ("b",), 1, '\n{\n  "b": 1\n}\n', id="empty-top-after-a-blank-line"),
    pytest.param("  {}", ("b",), 1, '  {\n    "b": 1\n  }', id="empty-top-indented"),
    pytest.param("{}", ("é",), "ü", '{\n  "é": "ü"\n}', id="empty-top-non-ascii"),
    pytest.param(
        '{"a": 1}\n', ("a",), {"x": 1}, '{"a": {"x": 1}}\n', id="replaced-in-a-one-line-file"
    ),
    pytest.param(
        '\n{"a": 1}\n', ("a",), {"x": 1}, '\n{"a": {"x": 1}}\n', id="one-line-after-a-blank-line"
    ),
    pytest.param(
        '{\n"a": 1\n}',
        ("b",),
        {"x": 1},
        '{\n"a": 1,\n"b": {\n  "x": 1\n}\n}',
        id="no-indentation-takes-the-default-step",
    ),
    pytest.param('{"a":1}', ("b",), 2, '{"a":1,"b":2}', id="no-space-after-the-colon"),
    pytest.param('{"a" :1}', ("b",), 2, '{"a" :1,"b" :2}', id="a-space-before-the-colon"),
    pytest.param('{ "a": 1 }', ("b",), 2, '{ "a": 1, "b": 2 }', id="blanks-inside-one-line"),
    pytest.param(
        '{"a": 1,  "b": 2}', ("c",), 3, '{"a": 1,  "b": 2,  "c": 3}', id="the-gap-between-two"
    ),
    pytest.param(
        '{\n  "a": {\n    "x": 1\n  }\n}',
        ("b",),
        {"y": 2},
        '{\n  "a": {\n    "x": 1\n  },\n  "b": {\n    "y": 2\n  }\n}',
        id="after-a-block-a-block",
    ),
    pytest.param(
        '{\n  "a": []\n}',
        ("b",),
        {"y": 2},
        '{\n  "a": [],\n  "b": {"y": 2}\n}',
        id="after-an-empty-array-one-line",
    ),
    pytest.param(
        '{\n  "r": {\n    "n": 1\n  }\n}',
        ("r", "m"),
        2,
        '{\n  "r": {\n    "n": 1,\n    "m": 2\n  }\n}',
        id="added-in-a-nested-object",
    ),
    pytest.param(
        '{\n  "n": 0,\n  "r": {\n    "n": 1\n  }\n}',
        ("r", "n"),
        [1, 2],
        '{\n  "n": 0,\n  "r": {\n    "n": [\n      1,\n      2\n    ]\n  }\n}',
        id="replaced-in-a-nested-object",
    ),
    pytest.param(
        '{\n  "r": {\n    "s": {}\n  }\n}',
        ("r", "s", "n"),
        1,
        '{\n  "r": {\n    "s": {\n      "n": 1\n    }\n  }\n}',
        id="into-an-empty-object-two-down",
    ),
    pytest.param(
        '{"a": 1, "r": {}}',
        ("r", "n"),
        {"k": [1]},
        '{"a": 1, "r": {"n": {"k": [1]}}}',
        id="into-an-empty-object-one-line",
    ),
    pytest.param(
        '{"a":1,"r":{ }}', ("r", "n"), 2, '{"a":1,"r":{"n":2}}', id="into-a-blank-object-one-line"
    ),
    pytest.param(
        '{"a": 1, "r": {}}', ("r", "é"), "ü", '{"a": 1, "r": {"é": "ü"}}', id="one-line-non-ascii"
    ),
    pytest.param(
        '{"a": 1, "r": {"s": {}}}',
        ("r", "s", "n"),
        2,
        '{"a": 1, "r": {"s": {"n": 2}}}',
        id="one-line-two-down",
    ),
    pytest.param(
        '{\n  "r": {}\n}\n ',
        ("r", "n"),
        1,
        '{\n  "r": {\n    "n": 1\n  }\n}\n ',
        id="blanks-after-the-object-are-no-indentation",
    ),
]


@pytest.mark.parametrize(("text", "keys", "value", "expected"), SET)
def test_set_member(text: str, keys: tuple[str, ...], value: JSONValue, expected: str) -> None:
    assert set_member(text, keys, value, default_unit="  ") == expected


def test_set_member_takes_the_default_step_given() -> None:
    assert set_member("{}\n", ("b",), [1], default_unit="\t") == '{\n\t"b": [\n\t\t1\n\t]\n}\n'
