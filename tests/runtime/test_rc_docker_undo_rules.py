"""daemon.json's undo corners in-process: a recorded value text that is a JSON object goes back
whatever the order of its keys, the Docker editor names the file in its notes, takes an empty or
`{}` file as blank, and has no drop-in; and (a bug) a record whose blank inside `{ }` is not
blank must not make unconfigure write a daemon.json dockerd cannot read.

(issue 26: survivors of the mutation run in `docker._restore_value_text` and `DockerEditor`.)"""

from __future__ import annotations

import json

import pytest

from ctk.runtime_config import docker
from ctk.runtime_config.changes import Change, ChangeKind
from ctk.runtime_config.editor import Inputs
from ctk.runtime_config.engines import RuntimeRequest

NAME = "/etc/docker/daemon.json"


@pytest.mark.parametrize(
    ("before", "raw"),
    [
        pytest.param('{"a": {"b": 1, "a": 2}}', '{ "b":1,"a":2 }', id="same-order"),
        pytest.param('{"a": {"a": 2, "b": 1}}', '{ "b":1,"a":2 }', id="other-order"),
        pytest.param('{"a": {"b": 1, "a": 2}}', '{ "a":2,"b":1 }', id="sorted-raw"),
    ],
)
def test_an_object_value_text_goes_back_whatever_its_key_order(before: str, raw: str) -> None:
    change = Change(("a",), True, raw, {"b": 1, "a": 2}, ChangeKind.VALUE_TEXT)
    assert docker.unconfigure(NAME, before, "nvidia", (change,)) == '{"a": ' + raw + "}"


def test_an_object_value_the_user_changed_stays() -> None:
    before = '{"a": {"b": 1, "a": 3}}'
    change = Change(("a",), True, '{ "b":1,"a":2 }', {"b": 1, "a": 2}, ChangeKind.VALUE_TEXT)
    assert docker.unconfigure(NAME, before, "nvidia", (change,)) == before


def test_a_replaced_object_comes_back_byte_for_byte() -> None:
    """configure replaces a `features.cdi` object (dockerd wants a boolean there); unconfigure
    gives back its text, keys in the user's order."""
    text = '{\n    "features": {"cdi": {"z": 1, "a": [2]}}\n}\n'
    edit = docker.configure(NAME, text, RuntimeRequest(enable_cdi=True))
    assert json.loads(edit.text)["features"] == {"cdi": True}
    assert docker.unconfigure(NAME, edit.text, "nvidia", edit.changes, recorded=True) == text


def test_the_editor_names_the_file_in_its_notes() -> None:
    inputs = Inputs(config=NAME, config_text='{"cdi-spec-dirs": []}\n')
    planned = docker.EDITOR.configure_in_place(inputs, RuntimeRequest(enable_cdi=True))
    assert planned.edit.notes == (docker.empty_spec_dirs_note(NAME, []),)
    assert planned.edit.notes[0].startswith(f"{NAME}: cdi-spec-dirs = []")


@pytest.mark.parametrize(
    ("text", "blank"),
    [
        pytest.param("", True, id="empty"),
        pytest.param(" \n\t\n", True, id="whitespace"),
        pytest.param("{}", True, id="empty-object"),
        pytest.param("\n  {}  \n", True, id="empty-object-padded"),
        pytest.param("{ }", False, id="object-with-a-blank-inside"),
        pytest.param('{"a": 1}\n', False, id="a-member"),
    ],
)
def test_blank_files(text: str, blank: bool) -> None:
    assert docker.EDITOR.blank(text) is blank


def test_docker_has_no_drop_in() -> None:
    inputs = Inputs(config=NAME, config_text="{}\n", drop_in="/etc/docker/daemon.d/99.json")
    assert docker.EDITOR.uses_drop_in(inputs) is False
    assert docker.EDITOR.keeps_others(inputs, ("/x", "{}"), "nvidia") is False
    with pytest.raises(ValueError) as info:
        docker.EDITOR.configure_drop_in(inputs, RuntimeRequest(), None)
    assert str(info.value) == "dockerd has no drop-in configs"


@pytest.mark.parametrize(
    "blank",
    [
        pytest.param("oops", id="text"),
        # whitespace to Python's str.strip() but not to JSON (RFC 8259: space, tab, CR, LF)
        pytest.param("\x0b", id="vertical-tab"),
        pytest.param("\x0c", id="form-feed"),
        pytest.param(" \u00a0 ", id="no-break-space"),
    ],
)
def test_a_record_blank_that_is_not_blank_leaves_valid_json(blank: str) -> None:
    change = Change(("features",), True, blank, None, ChangeKind.BLANK_INSIDE)
    out = docker.unconfigure(NAME, '{"features": {}}\n', "nvidia", (change,), recorded=True)
    assert out == '{"features": {}}\n'
    json.loads(out)


def test_a_record_blank_of_json_whitespace_is_put_back() -> None:
    change = Change(("features",), True, " \t\r\n ", None, ChangeKind.BLANK_INSIDE)
    out = docker.unconfigure(NAME, '{"features": {}}\n', "nvidia", (change,), recorded=True)
    assert out == '{"features": { \t\r\n }}\n'
