"""`tomledit`'s rules pinned in-process: what `undo_changes` leaves alone.

(issue 26: survivors of the mutation run in `ctk.runtime_config.tomledit`.)"""

from __future__ import annotations

import pytest
import tomlkit

from ctk.runtime_config.changes import Change, ChangeKind
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
