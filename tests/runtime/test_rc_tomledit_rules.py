"""`tomledit`'s rules pinned in-process: what `undo_changes` takes back, in which order, and what
it leaves alone.

(issue 26: survivors of the mutation run in `ctk.runtime_config.tomledit`.)"""

from __future__ import annotations

import pytest
import tomlkit

from ctk.runtime_config.changes import Change, ChangeKind, header, new_table
from ctk.runtime_config.tomledit import append_table, copy_item, plain, undo_changes

TEXT = 'a = 1\n\n[t]\nb = "x"\n'


@pytest.mark.parametrize(
    "change",
    [
        pytest.param(Change(("a",), False, None, 1, ChangeKind.WHOLE_FILE), id="whole-file-keyed"),
        pytest.param(Change(("t", "b"), False, None, "x", ChangeKind.FINAL_NEWLINE), id="newline"),
        pytest.param(Change((), False, None, 1, ChangeKind.SET), id="set-without-keys"),
        pytest.param(Change((), True, {}, {}, ChangeKind.NEW_TABLE), id="table-without-keys"),
    ],
)
def test_a_change_about_the_whole_file_or_without_keys_is_not_undone_in_the_tables(
    change: Change,
) -> None:
    """A whole-file or final-newline change is undone on the text, never as a value (a record
    may give such a kind keys); a change without keys names no value to take back."""
    doc = tomlkit.parse(TEXT)
    undo_changes(doc, [change])
    assert doc.as_string() == TEXT


def test_a_set_change_with_the_same_keys_is_undone() -> None:
    """The control case: the same keys as a SET change, the value still ctk's, go away."""
    doc = tomlkit.parse(TEXT)
    undo_changes(doc, [Change(("a",), False, None, 1, ChangeKind.SET)])
    assert doc.as_string() == '\n[t]\nb = "x"\n'


SET_A = Change(("a",), True, "old", "new", ChangeKind.SET)


@pytest.mark.parametrize(
    ("text", "changes", "undone"),
    [
        pytest.param(
            "[t.u]\n[t.u.v]\nx = 1\n", [header(("t", "u"))], "[t.u.v]\nx = 1\n", id="header-goes"
        ),
        pytest.param(
            "[t.u]\ny = 2\n[t.u.v]\nx = 1\n",
            [header(("t", "u"))],
            "[t.u]\ny = 2\n[t.u.v]\nx = 1\n",
            id="header-of-a-table-with-keys-stays",
        ),
        pytest.param(
            "[t]\nb = 1\n",
            [Change(("t", "b"), False, None, 1, ChangeKind.HEADER)],
            "[t]\nb = 1\n",
            id="header-change-on-a-value-leaves-it",
        ),
        pytest.param("a = 1\n[t]\n", [new_table(("t",))], "a = 1\n", id="empty-new-table-goes"),
        pytest.param(
            "a = 1\n[t]\nb = 2\n", [new_table(("t",))], "a = 1\n[t]\nb = 2\n", id="filled-stays"
        ),
        pytest.param("t = 1\n", [new_table(("t",))], "t = 1\n", id="new-table-now-a-value"),
        pytest.param("a = 'new'\n", [SET_A], "a = 'old'\n", id="restored-in-its-quotes"),
        pytest.param('a = "user"\n', [SET_A], 'a = "user"\n', id="changed-since-stays"),
        pytest.param(
            "[t]\nb = 1\n", [Change(("t", "b"), False, None, 1)], "[t]\n", id="added-goes"
        ),
        pytest.param(
            "a = 1\n", [Change(("x", "y"), False, None, 1)], "a = 1\n", id="no-parent-table"
        ),
        pytest.param(
            "a = 1\n", [Change(("a", "y"), False, None, 1)], "a = 1\n", id="parent-is-a-value"
        ),
        pytest.param(
            "[t]\nb = 1\n", [Change(("t", "zz"), False, None, 1)], "[t]\nb = 1\n", id="key-gone"
        ),
        pytest.param(
            "[t]\nb = 1\n",
            [Change(("t", "b"), False, None, 1), new_table(("t",))],
            "[t]\n",
            id="newest-first-table-then-key",
        ),
        pytest.param(
            "[t]\nb = 1\n",
            [new_table(("t",)), Change(("t", "b"), False, None, 1)],
            "",
            id="newest-first-key-then-table",
        ),
    ],
)
def test_undo_changes_takes_back_only_what_is_still_ctks(
    text: str, changes: list[Change], undone: str
) -> None:
    doc = tomlkit.parse(text)
    undo_changes(doc, changes)
    assert doc.as_string() == undone


SPLIT = "[a.b]\nx = 1\n\n[c]\ny = 2\n\n[a.d]\nz = 3\n"
"""`a` is split by `[c]`: tomlkit hands it out as an out-of-order proxy."""


def test_plain_gives_python_data_for_tomlkit_items() -> None:
    doc = tomlkit.parse(SPLIT + 'w = "s"\n')
    assert type(plain(doc["c"])) is dict
    assert type(plain(doc["a"])) is dict
    assert type(plain(doc["a"]["d"]["w"])) is str
    assert plain(doc["a"]) == {"b": {"x": 1}, "d": {"z": 3, "w": "s"}}
    assert plain({"already": ["plain"]}) == {"already": ["plain"]}


def test_a_table_appended_to_a_split_table_joins_it() -> None:
    doc = tomlkit.parse(SPLIT)
    table = tomlkit.table()
    table["k"] = 1
    append_table(doc["a"], "new", table)
    assert tomlkit.parse(doc.as_string())["a"]["new"] == {"k": 1}
    assert doc.as_string() == "[a.b]\nx = 1\n\n[a.new]\nk = 1\n[c]\ny = 2\n\n[a.d]\nz = 3\n"


def test_an_appended_table_keeps_its_indent_but_no_blank_line_before_it() -> None:
    doc = tomlkit.parse("[t]\nx = 1\n")
    table = tomlkit.table()
    table["k"] = 1
    table.trivia.indent = "\n\n  "
    append_table(doc["t"], "u", table)
    assert table.trivia.indent == "  "
    assert doc.as_string() == "[t]\nx = 1\n  [t.u]\nk = 1\n"


def test_a_copy_of_a_split_table_holds_all_its_parts() -> None:
    doc = tomlkit.parse(SPLIT)
    copied = copy_item(doc["a"])
    assert copied.unwrap() == {"b": {"x": 1}, "d": {"z": 3}}
