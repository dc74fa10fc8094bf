"""daemon.json edits in-process: configure then unconfigure gives the user's bytes back, whatever
the layout of the values ctk replaced, and a value the user changed since stays theirs.

(issue 26: the mutation run found `docker._value_text` and `_restore_value_text` reached only by
tests that run ctk as a child process.)"""

from __future__ import annotations

import json

import pytest

from ctk.runtime_config import docker
from ctk.runtime_config.changes import ChangeKind
from ctk.runtime_config.engines import RuntimeRequest

NAME = "/etc/docker/daemon.json"
CDI_DEFAULT = RuntimeRequest(set_as_default=True, enable_cdi=True)


@pytest.mark.parametrize(
    ("text", "request_"),
    [
        pytest.param('{"default-runtime" :   "runc"}\n', CDI_DEFAULT, id="default-spaced"),
        pytest.param('{"default-runtime": "r\\u0075nc"}\n', CDI_DEFAULT, id="default-escaped"),
        pytest.param('{"cdi-spec-dirs": [ "" ]}\n', CDI_DEFAULT, id="empty-dirs-spaced"),
        pytest.param('{"cdi-spec-dirs": []}\n', CDI_DEFAULT, id="no-dirs"),
        pytest.param('{"features": {"cdi": false }}\n', CDI_DEFAULT, id="cdi-off"),
        pytest.param('{"features": { }}\n', CDI_DEFAULT, id="blank-features"),
        pytest.param(
            '{"runtimes": {"nvidia": {"path": "/old/nvidia-container-runtime"  , "args": []}}}\n',
            RuntimeRequest(),
            id="own-runtime-other-path",
        ),
        pytest.param(
            '{"runtimes": {"nvidia": {"path": "\\/old/nvidia-container-runtime"}}}\n',
            RuntimeRequest(),
            id="own-runtime-path-escaped",
        ),
        pytest.param('{\n  "runtimes": { }\n}\n', RuntimeRequest(), id="blank-runtimes"),
    ],
)
def test_unconfigure_gives_the_bytes_back(text: str, request_: RuntimeRequest) -> None:
    edit = docker.configure(NAME, text, request_)
    assert edit.text != text
    assert docker.unconfigure(NAME, edit.text, request_.name, edit.changes) == text


def test_a_replaced_value_keeps_its_own_text_in_the_record() -> None:
    text = '{"default-runtime" :   "r\\u0075nc"}\n'
    edit = docker.configure(NAME, text, CDI_DEFAULT)
    kept = [c for c in edit.changes if c.kind is ChangeKind.VALUE_TEXT]
    assert [(c.keys, c.before, c.after) for c in kept] == [
        (("default-runtime",), '"r\\u0075nc"', "runc")
    ]
    assert json.loads(edit.text)["default-runtime"] == "nvidia"


def test_a_value_the_user_changed_since_stays_theirs() -> None:
    text = '{"default-runtime" :   "r\\u0075nc"}\n'
    edit = docker.configure(NAME, text, CDI_DEFAULT)
    changed = edit.text.replace(':   "nvidia", ', ':   "crun", ', 1)
    assert changed != edit.text
    after = docker.unconfigure(NAME, changed, "nvidia", edit.changes)
    assert json.loads(after)["default-runtime"] == "crun"


@pytest.mark.parametrize(
    ("before", "raw", "after", "expected"),
    [
        pytest.param(
            '{"a": "runc"}', '"r\\u0075nc"', "runc", '{"a": "r\\u0075nc"}', id="same-value"
        ),
        pytest.param('{"a": true}', "1", 1, '{"a": true}', id="true-is-not-1"),
        pytest.param('{"a": 1.0}', "1", 1, '{"a": 1.0}', id="1.0-is-not-1"),
        pytest.param('{"a": 1}', "not json", 1, '{"a": 1}', id="record-not-json"),
        pytest.param('{"b": 1}', "1", 1, '{"b": 1}', id="member-gone"),
    ],
)
def test_restoring_a_value_text(before: str, raw: str, after: int | str, expected: str) -> None:
    """The recorded text goes back only where the value is still the one undo restored, as JSON
    text (1, 1.0 and true differ)."""
    from ctk.runtime_config.changes import Change

    change = Change(("a",), True, raw, after, ChangeKind.VALUE_TEXT)
    assert docker.unconfigure(NAME, before, "nvidia", (change,)) == expected


@pytest.mark.parametrize(
    "before",
    [
        pytest.param('{"x": {"y": {"a": "runc"}}}', id="nested"),
        pytest.param('{"z": 1}', id="its-object-gone"),
    ],
)
def test_restoring_a_nested_value_text(before: str) -> None:
    from ctk.runtime_config.changes import Change

    change = Change(("x", "y", "a"), True, '"r\\u0075nc"', "runc", ChangeKind.VALUE_TEXT)
    expected = before.replace('"runc"', '"r\\u0075nc"')
    assert docker.unconfigure(NAME, before, "nvidia", (change,)) == expected


def test_empty_spec_dirs_are_named_in_the_note() -> None:
    edit = docker.configure(NAME, '{"cdi-spec-dirs": [""]}\n', CDI_DEFAULT)
    assert edit.notes == (
        f'{NAME}: cdi-spec-dirs = [""] names no directory, so dockerd would fail every CDI '
        'device request; setting it to ["/etc/cdi", "/var/run/cdi"], dockerd\'s defaults '
        "(unconfigure puts it back)",
    )
    assert json.loads(edit.text)["cdi-spec-dirs"] == ["/etc/cdi", "/var/run/cdi"]
