"""daemon.json edits keep the file's own layout: its indentation step (spaces or a tab), one-line
objects on one line, its key separator, blank lines between members, and non-ASCII text as
written (no \\u escapes).

(issue 26: the mutation run found jsonedit's layout rules pinned only through whole-file tests
that run ctk as a child process.)"""

from __future__ import annotations

import pytest

from ctk.runtime_config.jsonedit import delete_member, indent_unit, set_member
from ctk.runtime_config.parse import JSONValue

TABLE = [
    pytest.param(
        '{\n    "a": 1\n}\n',
        ("b",),
        {"x": [1]},
        '{\n    "a": 1,\n    "b": {\n        "x": [\n            1\n        ]\n    }\n}\n',
        id="four-spaces",
    ),
    pytest.param(
        '{\n\t"a": 1\n}\n',
        ("b",),
        {"x": [1]},
        '{\n\t"a": 1,\n\t"b": {\n\t\t"x": [\n\t\t\t1\n\t\t]\n\t}\n}\n',
        id="a-tab",
    ),
    pytest.param('{"a": 1}\n', ("b",), {"x": [1]}, '{"a": 1, "b": {"x": [1]}}\n', id="one-line"),
    pytest.param(
        "{}\n",
        ("b",),
        {"x": [1]},
        '{\n  "b": {\n    "x": [\n      1\n    ]\n  }\n}\n',
        id="empty-takes-the-default-step",
    ),
    pytest.param(
        '{\n  "a": {"x": 1}\n}\n',
        ("b",),
        {"y": 2},
        '{\n  "a": {"x": 1},\n  "b": {"y": 2}\n}\n',
        id="after-a-one-line-object-one-line",
    ),
    pytest.param(
        '{\n  "a": 1\n}\n', ("p",), "/opt/é", '{\n  "a": 1,\n  "p": "/opt/é"\n}\n', id="non-ascii"
    ),
    pytest.param('{"a": 1}\n', ("é",), ["ü"], '{"a": 1, "é": ["ü"]}\n', id="non-ascii-one-line"),
    pytest.param(
        '{\n  "a": 1\n}\n',
        ("p",),
        {"é": "ü"},
        '{\n  "a": 1,\n  "p": {\n    "é": "ü"\n  }\n}\n',
        id="non-ascii-block",
    ),
    pytest.param(
        '{\n  "r": {\n    "n": 1\n  }\n}\n',
        ("r", "n"),
        {"k": "v"},
        '{\n  "r": {\n    "n": {\n      "k": "v"\n    }\n  }\n}\n',
        id="replaced-at-its-own-indentation",
    ),
    pytest.param(
        '{\n\n  "a": 1\n}\n',
        ("b",),
        {"k": "v"},
        '{\n\n  "a": 1,\n\n  "b": {\n    "k": "v"\n  }\n}\n',
        id="a-blank-line-before-members",
    ),
    pytest.param(
        '{\n  "a": 1,\n  "b": 2\n}\n',
        ("c",),
        3,
        '{\n  "a": 1,\n  "b": 2,\n  "c": 3\n}\n',
        id="third",
    ),
    pytest.param('{"a" : 1}\n', ("b",), 2, '{"a" : 1, "b" : 2}\n', id="its-separator"),
    pytest.param(
        '{\n  "r": {}\n}\n',
        ("r", "n"),
        {"k": "v"},
        '{\n  "r": {\n    "n": {\n      "k": "v"\n    }\n  }\n}\n',
        id="into-an-empty-nested-object",
    ),
]


@pytest.mark.parametrize(("text", "keys", "value", "expected"), TABLE)
def test_set_member_keeps_the_layout(
    text: str, keys: tuple[str, ...], value: JSONValue, expected: str
) -> None:
    assert set_member(text, keys, value, default_unit="  ") == expected


@pytest.mark.parametrize(("text", "keys", "value", "expected"), TABLE)
def test_delete_member_takes_the_member_back(
    text: str, keys: tuple[str, ...], value: JSONValue, expected: str
) -> None:
    if keys[-1] in text:  # a replaced member: deleting it is another edit
        pytest.skip("the member was there before")
    assert delete_member(expected, keys) == text


@pytest.mark.parametrize(
    ("text", "unit"),
    [
        pytest.param('{\n  "a": 1\n}', "  ", id="two"),
        pytest.param('{\n\n    "a": 1\n}', "    ", id="after-a-blank-line"),
        pytest.param('{\n\t"a": 1\n}', "\t", id="tab"),
        pytest.param('{"a": 1}', None, id="one-line"),
        pytest.param('{\n"a": 1\n}', None, id="no-indentation"),
        pytest.param("{}", None, id="empty"),
    ],
)
def test_indent_unit(text: str, unit: str | None) -> None:
    assert indent_unit(text) == unit
