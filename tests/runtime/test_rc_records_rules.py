"""An undo record's text, the whole-file undo, and the containerd version line, in-process.

(issue 26: survivors of the mutation run in `changes.dump_record`, `changes.restore_whole_file`
and `inspect.containerd_version`.)"""

from __future__ import annotations

import pytest

from ctk.errors import CtkError
from ctk.runtime_config.changes import Change, ChangeKind, dump_record, restore_whole_file
from ctk.runtime_config.inspect import containerd_version
from ctk.runtime_config.parse import JSONValue


def test_a_record_is_indented_json_that_says_who_wrote_it() -> None:
    record = [Change(("runtimes", "nvidia"), False, None, {"path": "/x"})]
    assert dump_record(record) == (
        "{\n"
        '  "written-by": "ctk runtime configure",\n'
        '  "changes": [\n'
        "    {\n"
        '      "kind": "set",\n'
        '      "keys": [\n'
        '        "runtimes",\n'
        '        "nvidia"\n'
        "      ],\n"
        '      "existed": false,\n'
        '      "before": null,\n'
        '      "after": {\n'
        '        "path": "/x"\n'
        "      }\n"
        "    }\n"
        "  ]\n"
        "}\n"
    )


@pytest.mark.parametrize(
    ("change", "restored"),
    [
        pytest.param(Change((), True, "\n\n", None, ChangeKind.WHOLE_FILE), "\n\n", id="was-blank"),
        pytest.param(Change((), False, None, None, ChangeKind.WHOLE_FILE), None, id="was-missing"),
        # a record that says the file was missing wins over a text it holds too
        pytest.param(Change((), False, "x", None, ChangeKind.WHOLE_FILE), None, id="missing-wins"),
        pytest.param(Change(("a",), True, 1, 2), "{}", id="no-whole-file-change"),
    ],
)
def test_a_blank_result_goes_back_to_what_the_file_was(
    change: Change, restored: str | None
) -> None:
    assert restore_whole_file("{}", [change], blank=True) == restored
    assert restore_whole_file("{}", [change], blank=False) == "{}"


@pytest.mark.parametrize(
    ("data", "message", "hint"),
    [
        pytest.param(
            {"version": "2"},
            "c.toml: `version` must be an integer (1, 2 or 3), found a string",
            "containerd itself refuses this file; fix the version line",
            id="a-string",
        ),
        pytest.param(
            {"version": True},
            "c.toml: `version` must be an integer (1, 2 or 3), found a boolean",
            "containerd itself refuses this file; fix the version line",
            id="a-boolean",
        ),
        pytest.param(
            {"version": 4},
            "c.toml: unsupported containerd config version 4",
            "ctk knows versions 1, 2 and 3",
            id="four",
        ),
    ],
)
def test_a_bad_version_line_says_what_and_who_refuses_it(
    data: dict[str, JSONValue], message: str, hint: str
) -> None:
    with pytest.raises(CtkError) as info:
        containerd_version("c.toml", data, empty=False)
    assert (info.value.message, info.value.hint) == (message, hint)


@pytest.mark.parametrize(
    ("data", "empty", "version"),
    [({}, True, 2), ({}, False, 1), ({"version": 3}, False, 3), ({"version": 1}, True, 2)],
)
def test_the_version_containerd_reads(data: dict[str, int], empty: bool, version: int) -> None:
    assert containerd_version("c.toml", data, empty=empty) == version
