"""`tomledit`'s rules pinned in-process: what `undo_changes` takes back, in which order, and what
it leaves alone.

(issue 26: survivors of the mutation run in `ctk.runtime_config.tomledit`.)"""

from __future__ import annotations

import pytest
import tomlkit

from ctk.runtime_config.changes import Change, ChangeKind, header, new_table
from ctk.runtime_config.tomledit import undo_changes

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
