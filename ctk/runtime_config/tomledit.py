"""Small, formatting-preserving edits of TOML documents (through tomlkit).

Only the keys ctk sets are touched: comments, order, quoting and whitespace of everything else
stay as they were, and removing what was added gives back the original text.
"""

from __future__ import annotations

import copy
import difflib
import re
from collections.abc import Sequence
from typing import Any

import tomlkit
from tomlkit.container import Container, OutOfOrderTableProxy
from tomlkit.exceptions import TOMLKitError
from tomlkit.items import AoT, Comment, InlineTable, Item, String, StringType, Table, Whitespace
from tomlkit.toml_document import TOMLDocument

from ctk.errors import CtkError
from ctk.runtime_config.changes import (
    Change,
    ChangeKind,
    header,
    keep_line_ends,
    new_table,
    newline_of,
)
from ctk.runtime_config.inspect import dotted
from ctk.runtime_config.parse import TYPE_HINT, JSONValue, load_toml, same_data, type_name

# A table, or one that the file defines in several places (split [headers], dotted keys):
# tomlkit then gives a proxy that edits the right part.
Tab = Table | OutOfOrderTableProxy
Parent = TOMLDocument | Tab


def parse_document(name: str, text: str) -> TOMLDocument:
    """Parse ``text`` for editing; `CtkError` with the position when it is not valid TOML."""
    load_toml(name, text)
    try:
        return tomlkit.parse(text)
    except (TOMLKitError, ValueError) as exc:
        raise CtkError(f"{name}: cannot edit this TOML: {exc}") from exc


def with_final_newline(text: str) -> str:
    """``text`` ending with a newline (a new table must start on a line of its own)."""
    return text if not text or text.endswith("\n") else text + newline_of(text)


def plain(item: object) -> JSONValue:
    """Return ``item`` (a tomlkit value or plain data) as plain Python data."""
    unwrap = getattr(item, "unwrap", None)
    return unwrap() if callable(unwrap) else item


def _body(parent: TOMLDocument | Table) -> Container:
    return parent if isinstance(parent, Container) else parent.value


def child_table(name: str, parent: Parent, key: str, where: Sequence[str]) -> Tab | None:
    """Return ``parent[key]`` if it is a table, None if missing; `CtkError` for anything else."""
    if key not in parent:
        return None
    value = parent[key]
    if isinstance(value, Table | OutOfOrderTableProxy):
        return value
    if isinstance(value, InlineTable):
        raise CtkError(
            f"{name}: `{dotted([*where, key])}` is an inline table; ctk edits only [tables]",
            hint=f"write it as a [{dotted([*where, key])}] section and run again",
        )
    raise CtkError(
        f"{name}: `{dotted([*where, key])}` must be a table, found {type_name(plain(value))}",
        hint=TYPE_HINT,
    )


def ensure_table(name: str, doc: TOMLDocument, keys: Sequence[str], changes: list[Change]) -> Tab:
    """Return the table at ``keys``, creating missing ones (recorded in ``changes``)."""
    parent: Parent = doc
    for index, key in enumerate(keys):
        found = child_table(name, parent, key, keys[:index])
        if found is None:
            found = tomlkit.table(is_super_table=True)
            _append_table(parent, key, found)
            found.trivia.indent = found.trivia.indent.lstrip("\n")
            changes.append(new_table(tuple(keys[: index + 1])))
        parent = found
    assert not isinstance(parent, TOMLDocument)
    return parent


def _append_table(parent: Parent, key: str, table: Table) -> None:
    if isinstance(parent, OutOfOrderTableProxy):
        parent[key] = table
        return
    body = _body(parent)
    body.append(key, table)


def find_table(name: str, doc: TOMLDocument, keys: Sequence[str]) -> Tab | None:
    """Return the table at ``keys`` or None when some part is missing."""
    parent: Parent = doc
    for index, key in enumerate(keys):
        found = child_table(name, parent, key, keys[:index])
        if found is None:
            return None
        parent = found
    assert not isinstance(parent, TOMLDocument)
    return parent


def set_key(table: Parent, keys: tuple[str, ...], value: JSONValue, changes: list[Change]) -> None:
    """Set the last of ``keys`` in ``table`` to ``value`` unless it already has that value."""
    key = keys[-1]
    existed = key in table
    before = plain(table[key]) if existed else None
    if existed and before == value and type(before) is type(value):
        return
    if existed:
        table[key] = quoted_like(table[key], value)
    else:
        if isinstance(table, Table) and table.is_super_table():
            # The table was implied by a [sub.table] header and now needs its own header.
            changes.append(header(keys[:-1]))
        _insert_key(table, key, value)
    changes.append(Change(keys, existed, before, value))


def quoted_like(old: object, value: JSONValue) -> JSONValue | String:
    """``value``, a string written with the quotes of ``old`` (`'single'` or `"double"`).

    containerd 2.x writes 'literal' strings; a replaced value keeps them, so that undoing the
    change gives back the bytes of the line. A value the old kind cannot hold gets tomlkit's.
    """
    if not isinstance(old, String) or not isinstance(value, str) or old.type is StringType.SLB:
        return value
    literal = old.type in (StringType.SLL, StringType.MLL)
    try:
        return tomlkit.string(value, literal=literal, multiline=old.type.is_multiline())
    except TOMLKitError:  # e.g. a quote or a control character in a literal string
        return value


def _insert_key(table: Parent, key: str, value: JSONValue) -> None:
    """Insert a key after the table's last plain key, indented like it (tables stay after)."""
    if isinstance(table, OutOfOrderTableProxy):
        table[key] = value  # into the part that holds plain keys
        return
    body = _body(table)
    item = tomlkit.item(value)
    last_index = None
    last_item: Item | None = None
    for index, (k, v) in enumerate(body.body):
        if k is not None and not isinstance(v, Table | AoT):
            last_index, last_item = index, v
    if last_item is not None and last_index is not None:
        item.trivia.indent = last_item.trivia.indent
        if last_index + 1 < len(body.body):
            body._insert_at(last_index + 1, key, item)
        else:
            body.append(key, item)
        return
    first_table = next(
        (i for i, (_, v) in enumerate(body.body) if isinstance(v, Table | AoT)), None
    )
    if first_table is None:
        body.append(key, item)
        return
    if isinstance(table, Table):
        item.trivia.indent = _indent_of(body.body[first_table][1])
    body._insert_at(first_table, key, item)


def _indent_of(item: Item) -> str:
    indent = item.trivia.indent
    return indent.rsplit("\n", 1)[-1]


def empty_table() -> Table:
    """A new, empty table."""
    return tomlkit.table()


def table_from(data: dict[str, JSONValue]) -> Table:
    """A new table holding ``data`` (nested dicts as sub-tables)."""
    table = tomlkit.table()
    for key, value in data.items():
        table.append(key, table_from(value) if isinstance(value, dict) else value)
    return table


def append_table(parent: Tab, key: str, table: Table) -> None:
    """Append a new table after ``parent``'s last child, with no blank line of its own before it.

    tomlkit puts a blank line before an appended table, but on the next parse that line belongs
    to the table before it, so removing ours would leave it behind.
    """
    _append_table(parent, key, table)
    table.trivia.indent = table.trivia.indent.lstrip("\n")


def new_inline_table(data: dict[str, JSONValue]) -> InlineTable:
    """An inline table `{ a = 1, b = 2 }` holding ``data``."""
    table = tomlkit.inline_table()
    table.update(data)
    return table


def copy_item(item: Tab) -> Table:
    """Return a deep copy of a table, layout included but not comments (a split one: its data).

    A comment explains the user's own table; copied next to ours it would be out of place.
    """
    if isinstance(item, OutOfOrderTableProxy):
        return table_from(item.unwrap())
    copied = copy.deepcopy(item)
    _drop_comments(copied)
    return copied


def _drop_comments(table: Table | InlineTable) -> None:
    table.trivia.comment = ""
    table.trivia.comment_ws = ""
    for _, value in table.value.body:
        if isinstance(value, Comment):  # a comment line: render as nothing
            value.trivia.indent = value.trivia.comment = value.trivia.trail = ""
        elif isinstance(value, Table | InlineTable):
            _drop_comments(value)
        elif value is not None and not isinstance(value, AoT | Whitespace):
            value.trivia.comment = ""
            value.trivia.comment_ws = ""


def delete_key(parent: Parent, key: str) -> bool:
    """Remove ``key`` from ``parent`` if present; return whether it was."""
    if key not in parent:
        return False
    del parent[key]
    return True


def get_value(doc: TOMLDocument, keys: Sequence[str]) -> tuple[bool, Any]:
    """Return (present, value) for the key path ``keys``; tables along the way must exist."""
    current: Any = doc
    for key in keys:
        if not isinstance(current, Tab | TOMLDocument | InlineTable) or key not in current:
            return False, None
        current = current[key]
    return True, current


def inline_lines(doc: TOMLDocument, changes: Sequence[Change]) -> tuple[str, ...]:
    """The keys of the inline tables (`options = { ... }`) that ``changes`` edit inside: undoing
    them rewrites those lines."""
    return tuple(
        change.keys[-2]
        for change in changes
        if len(change.keys) >= 2 and isinstance(get_value(doc, change.keys[:-1])[1], InlineTable)
    )


def undo_changes(doc: TOMLDocument, changes: Sequence[Change]) -> None:
    """Take back ``changes`` (newest first) where the value is still what ctk wrote; inside an
    inline table too, in place (the rest of its line stays)."""
    for change in reversed(changes):
        if not change.keys or change.kind in (ChangeKind.WHOLE_FILE, ChangeKind.FINAL_NEWLINE):
            continue
        parent_present, parent = get_value(doc, change.keys[:-1])
        if not parent_present or not isinstance(parent, Tab | TOMLDocument | InlineTable):
            continue
        key = change.keys[-1]
        if key not in parent:
            continue
        current = parent[key]
        if change.kind is ChangeKind.HEADER:
            if isinstance(current, Table) and not _has_plain_keys(current):
                current._is_super_table = True
            continue
        if change.kind is ChangeKind.NEW_TABLE:
            if isinstance(current, Tab) and not current.unwrap():
                del parent[key]
            continue
        if plain(current) != change.after:
            continue
        if change.existed:
            parent[key] = quoted_like(current, change.before)
        else:
            del parent[key]


def _has_plain_keys(table: Table) -> bool:
    return any(k is not None and not isinstance(v, Table | AoT) for k, v in table.value.body)


def finish(
    name: str, doc: TOMLDocument, original: str, *, replaced: Sequence[str] = (), undo: bool = False
) -> str:
    """Return the edited text: ``original`` itself when the data did not change.

    The new text must read back as exactly the edited data, and keep every line of
    ``original`` (configure) or come only from its lines (``undo``), apart from the lines of the
    ``replaced`` keys. If the editor ever did anything else, nothing is written.
    """
    out = tomlkit.dumps(doc)  # before unwrap(): reading some layouts upsets tomlkit's rendering
    data = doc.unwrap()
    if same_data(data, load_toml(name, original)):
        return original
    try:
        read_back = load_toml(name, out)
        # Undo: tomlkit writes no header for a table left empty; an empty table reads as absent.
        same = same_data(read_back, data) or (undo and same_data(_pruned(read_back), _pruned(data)))
    except CtkError:
        same = False
    before, after = (out, original) if undo else (original, out)
    if same and not original.strip():
        return document_from(data)  # a new file: lay it out afresh, with blank lines
    if not same or not _lines_kept(before, after, set(replaced)):
        raise CtkError(
            f"{name}: ctk cannot edit this file's layout without changing other lines; "
            "nothing was written",
            hint="edit the file by hand (remove the runtime and ctk's import)"
            if undo
            else "use a drop-in (the default), or add the runtime by hand",
        )
    return keep_line_ends(original, out)


def _pruned(data: dict[str, JSONValue]) -> dict[str, JSONValue]:
    """``data`` without empty tables (nested ones emptied by that too)."""
    out: dict[str, JSONValue] = {}
    for key, value in data.items():
        kept = _pruned(value) if isinstance(value, dict) else value
        if kept != {}:
            out[key] = kept
    return out


_KEY_LINE = re.compile(r"""^\s*(?:[^=\s]+\.)?["']?([A-Za-z0-9_-]+)["']?\s*=""")
_ARRAY_ITEM = re.compile(r"""^\s*(?:"[^"]*"|'[^']*'),?\s*(?:#.*)?$""")


def _lines_kept(old: str, new: str, replaced: set[str]) -> bool:
    """Whether every line of ``old`` is still in ``new``, in order, but those of ``replaced``."""
    old_lines, new_lines = old.splitlines(), new.splitlines()
    matcher = difflib.SequenceMatcher(a=old_lines, b=new_lines, autojunk=False)
    for tag, i1, i2, _, _ in matcher.get_opcodes():
        if tag not in ("delete", "replace"):
            continue
        for line in old_lines[i1:i2]:
            match = _KEY_LINE.match(line)
            if match and match.group(1) in replaced:
                continue
            if "imports" in replaced and _ARRAY_ITEM.match(line):
                continue
            return False
    return True


def document_from(data: dict[str, JSONValue]) -> str:
    """Write plain data as a new TOML document (nested tables as [sections])."""
    return tomlkit.dumps(data)
