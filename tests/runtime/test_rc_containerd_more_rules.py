"""More containerd rules, in-process: the CRI plugin table that is not a table, the import ctk
adds to an existing `imports`, what unconfiguring the main file takes back, the editor's methods
(the runtimes an own drop-in carries, warnings about later files, its record keys), whose drop-in
an existing one is (`configure.written_by_ctk`, `_own_drop_in`), and the tomledit helpers that
keep a replaced string's quotes and a key's indent.

(survivors of the mutation run in `containerd._plugin_table`, `_add_import`, `unconfigure_main`,
`ContainerdEditor`, `configure.written_by_ctk`, `_own_drop_in`, `uses_drop_in` and `tomledit`.)"""

from __future__ import annotations

import pytest
import tomlkit
from tomlkit.items import String

from ctk.errors import CtkError
from ctk.runtime_config import configure, containerd, tomledit
from ctk.runtime_config.changes import Change
from ctk.runtime_config.editor import Inputs, RecordKeys
from ctk.runtime_config.engines import Runtime, RuntimeRequest
from ctk.runtime_config.inspect import DROP_IN_HEADER
from ctk.runtime_config.parse import TYPE_HINT, load_toml

CONFIG = "/etc/containerd/config.toml"
DROP_IN = "/etc/containerd/conf.d/99-nvidia.toml"
LATER = "/etc/containerd/conf.d/zz-site.toml"
V2 = "io.containerd.grpc.v1.cri"
CRI2 = f'plugins."{V2}"'
RUNTIMES2 = ("plugins", V2, "containerd", "runtimes")
DEFAULT2 = ("plugins", V2, "containerd", "default_runtime_name")
BAD_TOML = "a = \n"
EDITOR = containerd.ContainerdEditor()


def names_file(error: pytest.ExceptionInfo[CtkError], name: str) -> bool:
    return str(error.value).startswith(f"{name}: ")


# --- _plugin_table ------------------------------------------------------------------------


def test_plugin_table_not_a_table() -> None:
    with pytest.raises(CtkError) as info:
        containerd._plugin_table(LATER, f'version = 2\n[plugins]\n"{V2}" = 1\n', ("plugins", V2))
    assert str(info.value) == f"{LATER}: `{CRI2}` must be a table"
    assert info.value.hint == TYPE_HINT


def test_plugin_table_bad_toml_names_the_file() -> None:
    with pytest.raises(CtkError) as info:
        containerd._plugin_table(LATER, BAD_TOML, ("plugins", V2))
    assert names_file(info, LATER)


# --- _add_import and unconfigure_main ------------------------------------------------------


def test_add_import_to_existing_array_records_before_and_after() -> None:
    doc = tomledit.parse_document(CONFIG, 'version = 2\nimports = ["/a.toml"]\n')
    changes: list[Change] = []
    containerd._add_import(doc, ["/a.toml"], DROP_IN, changes)
    assert changes == [Change(("imports",), True, ["/a.toml"], ["/a.toml", DROP_IN])]
    assert tomledit.plain(doc["imports"]) == ["/a.toml", DROP_IN]


def test_unconfigure_main_bad_toml_names_the_file() -> None:
    with pytest.raises(CtkError) as info:
        containerd.unconfigure_main(CONFIG, BAD_TOML, DROP_IN, [])
    assert names_file(info, CONFIG)


def test_unconfigure_main_keeps_an_imports_that_was_there() -> None:
    text = f'version = 2\nimports = ["{DROP_IN}"]\n'
    record = [Change(("imports",), True, [], [DROP_IN])]
    out = containerd.unconfigure_main(CONFIG, text, DROP_IN, record)
    assert load_toml(CONFIG, out) == {"version": 2, "imports": []}
    # without that record entry the emptied `imports` goes
    assert load_toml(CONFIG, containerd.unconfigure_main(CONFIG, text, DROP_IN, [])) == {
        "version": 2
    }


def test_unconfigure_main_leaves_imports_to_the_import_rule() -> None:
    # the drop-in is not imported any more: the recorded `imports` change is not undone
    text = 'version = 2\nimports = ["/a.toml", "/b.toml"]\n'
    record = [Change(("imports",), True, ["/a.toml"], ["/a.toml", "/b.toml"])]
    assert containerd.unconfigure_main(CONFIG, text, DROP_IN, record) == text


# --- ContainerdEditor ---------------------------------------------------------------------


def test_editor_configure_in_place_warns_about_later_cri_tables() -> None:
    inputs = Inputs(
        config=CONFIG,
        config_text="version = 2\n",
        after=((LATER, f"[{CRI2}]\n  enable_selinux = true\n"),),
    )
    result = EDITOR.configure_in_place(inputs, RuntimeRequest())
    assert len(result.warnings) == 1
    assert result.warnings[0].startswith(f"{LATER} is imported by {CONFIG} and also defines")


OWN_DROP_IN = (
    DROP_IN_HEADER
    + "version = 2\n"
    + f'[{CRI2}.containerd.runtimes.kata]\n  runtime_type = "io.containerd.kata.v2"\n'
    + f"[{CRI2}.containerd.runtimes.nvidia]\n  stale = true\n"
)


@pytest.mark.parametrize("release", [None, "2.0.0"])
def test_editor_configure_drop_in_carries_own_runtimes_but_the_configured_one(
    release: str | None,
) -> None:
    inputs = Inputs(
        config=CONFIG,
        config_text="version = 2\n",
        drop_in=DROP_IN,
        drop_in_text=OWN_DROP_IN,
        engine_release=release,
    )
    result = EDITOR.configure_drop_in(inputs, RuntimeRequest(), (DROP_IN, OWN_DROP_IN))
    runtimes = load_toml(DROP_IN, result.text)["plugins"][V2]["containerd"]["runtimes"]
    assert isinstance(runtimes, dict)
    assert runtimes["kata"] == {"runtime_type": "io.containerd.kata.v2"}
    assert "stale" not in runtimes["nvidia"]


def test_editor_keeps_others() -> None:
    inputs = Inputs(config=CONFIG, config_text="version = 2\n")
    assert EDITOR.keeps_others(inputs, (DROP_IN, OWN_DROP_IN), "nvidia") is True
    assert EDITOR.keeps_others(inputs, (DROP_IN, OWN_DROP_IN), "kata") is True  # nvidia's
    kata_only = DROP_IN_HEADER + f"version = 2\n[{CRI2}.containerd.runtimes.kata]\n  x = 1\n"
    assert EDITOR.keeps_others(inputs, (DROP_IN, kata_only), "kata") is False
    assert EDITOR.keeps_others(inputs, (DROP_IN, kata_only), "nvidia") is True


def test_editor_remove_names_the_file() -> None:
    with pytest.raises(CtkError) as info:
        EDITOR.remove(CONFIG, BAD_TOML, "nvidia", [], recorded=False)
    assert names_file(info, CONFIG)


def test_editor_record_keys() -> None:
    inputs = Inputs(config=CONFIG, config_text="version = 2\n")
    assert EDITOR.record_keys(inputs) == RecordKeys(RUNTIMES2, DEFAULT2, frozenset({"runc"}))


# --- configure: uses_drop_in, written_by_ctk, _own_drop_in --------------------------------


def test_uses_drop_in_needs_a_drop_in() -> None:
    inputs = Inputs(config=CONFIG, config_text="version = 2\n")
    assert configure.uses_drop_in(Runtime.CONTAINERD, inputs) is False
    with_drop_in = Inputs(config=CONFIG, config_text="version = 2\n", drop_in=DROP_IN)
    assert configure.uses_drop_in(Runtime.CONTAINERD, with_drop_in) is True


def users(*record: Change) -> Inputs:
    return Inputs(
        config=CONFIG,
        config_text="version = 2\n",
        record=record,
        drop_in=DROP_IN,
        drop_in_text="# mine\n",
    )


@pytest.mark.parametrize(
    ("record", "ours"),
    [
        ((), False),
        ((Change(("imports",), False, None, [DROP_IN]),), True),
        # a change that is not the import, or an import change without a list, is skipped
        ((Change(("x",), False, None, [DROP_IN]),), False),
        ((Change(("imports",), True, [DROP_IN], None),), False),
        ((Change(("x",), True, 1, 2), Change(("imports",), False, None, [DROP_IN])), True),
        # the drop-in was imported before ctk's change
        ((Change(("imports",), True, [DROP_IN], [DROP_IN, "/b"]),), False),
        # a `before` of a change that did not replace anything does not count
        ((Change(("imports",), False, [DROP_IN], [DROP_IN]),), True),
        ((Change(("imports",), True, [], ["/other"]),), False),
    ],
)
def test_written_by_ctk_reads_the_import_record(record: tuple[Change, ...], ours: bool) -> None:
    inputs = users(*record)
    assert configure.written_by_ctk(inputs) is ours
    assert configure._own_drop_in(inputs) == ((DROP_IN, "# mine\n") if ours else None)


def test_own_drop_in_by_header() -> None:
    inputs = Inputs(
        config=CONFIG, config_text="", drop_in=DROP_IN, drop_in_text=DROP_IN_HEADER + "x = 1\n"
    )
    assert configure._own_drop_in(inputs) == (DROP_IN, DROP_IN_HEADER + "x = 1\n")


# --- tomledit -----------------------------------------------------------------------------


def string_of(text: str) -> String:
    item = tomlkit.parse(f"a = {text}\n")["a"]
    assert isinstance(item, String)
    return item


def test_quoted_like_keeps_literal_quotes() -> None:
    out = tomledit.quoted_like(string_of("'old'"), "new")
    assert isinstance(out, String)
    assert out.as_string() == "'new'"


def test_quoted_like_keeps_multiline_literal() -> None:
    out = tomledit.quoted_like(string_of("'''old'''"), "new")
    assert isinstance(out, String)
    assert out.as_string() == "'''new'''"


def test_quoted_like_leaves_basic_strings_and_other_values() -> None:
    out = tomledit.quoted_like(string_of('"old"'), "new")
    assert out == "new"
    assert not isinstance(out, String)
    assert tomledit.quoted_like(1, "new") == "new"
    assert tomledit.quoted_like(string_of("'old'"), 5) == 5


def test_indent_of_is_the_last_line_of_the_indent() -> None:
    item = tomlkit.item(1)
    item.trivia.indent = "\n\n  \t"
    assert tomledit._indent_of(item) == "  \t"
    item.trivia.indent = "    "
    assert tomledit._indent_of(item) == "    "


def test_table_from_nests_tables() -> None:
    doc = tomlkit.document()
    doc.append("t", tomledit.table_from({"c": 2, "a": {"b": 1}}))
    assert tomlkit.dumps(doc) == "[t]\nc = 2\n\n[t.a]\nb = 1\n"


def test_delete_key() -> None:
    doc = tomlkit.parse("a = 1\n")
    assert tomledit.delete_key(doc, "b") is False
    assert tomledit.delete_key(doc, "a") is True
    assert "a" not in doc


def test_get_value() -> None:
    doc = tomlkit.parse("a = 1\n[t]\nb = 2\n")
    assert tomledit.get_value(doc, ("t", "b")) == (True, 2)
    assert tomledit.get_value(doc, ("missing",)) == (False, None)
    assert tomledit.get_value(doc, ("a", "b")) == (False, None)
    assert tomledit.get_value(doc, ("t", "c")) == (False, None)


def test_pruned_drops_emptied_tables_only() -> None:
    data = {"a": {"b": 1, "e": {}}, "c": {"d": {}}, "f": 0}
    assert tomledit._pruned(data) == {"a": {"b": 1}, "f": 0}
