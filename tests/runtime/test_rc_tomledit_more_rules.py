"""More of `tomledit`'s rules pinned in-process: which lines `finish` lets change and its errors,
the tables `ensure_table` creates and records, when `set_key` writes, `child_table`'s errors,
`with_final_newline` and `parse_document`.

(issue 26: survivors of the mutation run in `_lines_kept`, `finish`, `ensure_table`, `set_key`,
`child_table`, `with_final_newline` and `parse_document`.)"""

from __future__ import annotations

import pytest
import tomlkit
from tomlkit.exceptions import TOMLKitError
from tomlkit.items import String, StringType, Trivia

from ctk.errors import CtkError
from ctk.runtime_config.changes import Change, header, new_table
from ctk.runtime_config.parse import TYPE_HINT
from ctk.runtime_config.tomledit import (
    _lines_kept,
    child_table,
    ensure_table,
    finish,
    parse_document,
    set_key,
    with_final_newline,
)

LAYOUT = (
    "f.toml: ctk cannot edit this file's layout without changing other lines; nothing was written"
)


@pytest.mark.parametrize(
    ("old", "new", "replaced", "kept"),
    [
        pytest.param("x\n" * 3, "x\n" * 300, set(), True, id="popular-lines-still-match"),
        pytest.param("x\n", "y\n" + "x\n" * 300, set(), True, id="a-popular-line-after-another"),
        pytest.param("a\nb\n", "a\n", set(), False, id="a-deleted-line"),
        pytest.param("a\nb\n", "a\n", {"b"}, False, id="a-deleted-non-key-line"),
        pytest.param("a = 1\nb = 2\n", "", {"a"}, False, id="replaced-key-then-another"),
        pytest.param("a = 1\nb = 2\n", "", {"a", "b"}, True, id="both-keys-replaced"),
        pytest.param("zzz\n", "", {"imports"}, False, id="imports-but-not-an-array-item"),
        pytest.param('  "/a.toml",\n', "", {"imports"}, True, id="an-imports-item"),
        pytest.param('  "/a.toml",\n', "", set(), False, id="an-array-item-not-of-imports"),
        pytest.param('  "/a.toml",\nzzz\n', "", {"imports"}, False, id="an-item-then-another"),
    ],
)
def test_lines_kept_lets_only_replaced_keys_and_imports_items_go(
    old: str, new: str, replaced: set[str], kept: bool
) -> None:
    assert _lines_kept(old, new, replaced) is kept


def _broken(rendered: str) -> tomlkit.TOMLDocument:
    """`k` holds "a" but is written as `rendered`: the text does not read back as the data."""
    doc = tomlkit.parse('k = "c"\n')
    doc["k"] = String(StringType.SLB, "a", rendered, Trivia())
    return doc


def test_finish_names_the_file_when_the_original_is_not_toml() -> None:
    with pytest.raises(CtkError) as caught:
        finish("f.toml", tomlkit.parse("a = 1\n"), "a = = 1\n")
    assert caught.value.message.startswith("f.toml: not valid TOML: ")


def test_finish_refuses_undo_text_that_reads_back_as_other_data() -> None:
    with pytest.raises(CtkError) as caught:
        finish("f.toml", _broken("b"), 'k = "c"\n', replaced=("k",), undo=True)
    assert caught.value.message == LAYOUT
    assert caught.value.hint == "edit the file by hand (remove the runtime and ctk's import)"


def test_finish_refuses_text_that_does_not_read_back() -> None:
    with pytest.raises(CtkError) as caught:
        finish("f.toml", _broken('b"'), 'k = "c"\n', replaced=("k",))
    assert caught.value.message == LAYOUT
    assert caught.value.hint == "use a drop-in (the default), or add the runtime by hand"


def test_ensure_table_records_each_new_table_by_its_own_keys() -> None:
    doc = tomlkit.parse("a = 1\n")
    changes: list[Change] = []
    table = ensure_table("f.toml", doc, ["t", "u"], changes)
    assert changes == [new_table(("t",)), new_table(("t", "u"))]
    set_key(table, ("t", "u", "k"), 1, changes)
    assert doc.as_string() == "a = 1\n[t.u]\nk = 1\n"


def test_a_new_table_is_implied_until_it_gets_a_key_then_its_header_is_recorded() -> None:
    doc = tomlkit.parse("a = 1\n")
    changes: list[Change] = []
    table = ensure_table("f.toml", doc, ["t"], changes)
    assert doc.as_string() == "a = 1\n"
    set_key(table, ("t", "k"), 1, changes)
    assert changes == [new_table(("t",)), header(("t",)), Change(("t", "k"), False, None, 1)]
    assert doc.as_string() == "a = 1\n[t]\nk = 1\n"


def test_set_key_leaves_the_same_value_alone() -> None:
    doc = tomlkit.parse("a = 1 # mine\n")
    changes: list[Change] = []
    set_key(doc, ("a",), 1, changes)
    assert changes == []
    assert doc.as_string() == "a = 1 # mine\n"


def test_set_key_replaces_an_equal_value_of_another_type() -> None:
    doc = tomlkit.parse("a = 1\n")
    changes: list[Change] = []
    set_key(doc, ("a",), True, changes)
    assert doc.as_string() == "a = true\n"
    assert len(changes) == 1
    assert (changes[0].keys, changes[0].existed, changes[0].after) == (("a",), True, True)
    assert type(changes[0].before) is int


@pytest.mark.parametrize(
    ("text", "written"),
    [
        pytest.param("a = 'x'\n", "a = 'y'\n", id="literal"),
        pytest.param('a = """x"""\n', 'a = """y"""\n', id="multi-line"),
        pytest.param("a = '''x'''\n", "a = '''y'''\n", id="multi-line-literal"),
    ],
)
def test_set_key_keeps_the_quotes_of_the_old_value(text: str, written: str) -> None:
    doc = tomlkit.parse(text)
    changes: list[Change] = []
    set_key(doc, ("a",), "y", changes)
    assert doc.as_string() == written
    assert changes == [Change(("a",), True, "x", "y")]


def test_child_table_refuses_an_inline_table_with_a_hint() -> None:
    doc = tomlkit.parse("[p]\nt = {a = 1}\n")
    with pytest.raises(CtkError) as caught:
        child_table("f.toml", doc["p"], "t", ["p"])
    assert caught.value.message == "f.toml: `p.t` is an inline table; ctk edits only [tables]"
    assert caught.value.hint == "write it as a [p.t] section and run again"


def test_child_table_refuses_a_value_with_the_type_hint() -> None:
    doc = tomlkit.parse("[p]\nt = 1\n")
    with pytest.raises(CtkError) as caught:
        child_table("f.toml", doc["p"], "t", ["p"])
    assert caught.value.message == "f.toml: `p.t` must be a table, found a number"
    assert caught.value.hint == TYPE_HINT


@pytest.mark.parametrize(
    ("text", "ended"),
    [
        pytest.param("", "", id="empty-stays-empty"),
        pytest.param("a = 1\n", "a = 1\n", id="ended"),
        pytest.param("a = 1", "a = 1\n", id="lf"),
        pytest.param("a = 1\r\nb = 2", "a = 1\r\nb = 2\r\n", id="crlf"),
    ],
)
def test_with_final_newline(text: str, ended: str) -> None:
    assert with_final_newline(text) == ended


def test_parse_document_names_the_file_when_tomlkit_refuses(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def refuse(text: str) -> tomlkit.TOMLDocument:
        raise TOMLKitError("no way")

    monkeypatch.setattr(tomlkit, "parse", refuse)
    with pytest.raises(CtkError) as caught:
        parse_document("f.toml", "a = 1\n")
    assert caught.value.message == "f.toml: cannot edit this TOML: no way"
