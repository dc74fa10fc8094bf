"""What a configure run changed, so that `unconfigure` can take back exactly that.

A configure run returns the new text and the list of `Change`s it made; the CLI keeps that list in
a small record next to the config file. `unconfigure` undoes a change only while the value is
still the one ctk wrote, so later edits by the user are never reverted.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import NoReturn

from ctk.enums import StrEnum
from ctk.errors import CtkError
from ctk.runtime_config.parse import JSONValue


class ChangeKind(StrEnum):
    """What a recorded change is, so that no value has to stand for it."""

    SET = "set"  # a key ctk set: `existed` and `before` say what was there
    NEW_TABLE = "new-table"  # a table (object) ctk created: removed once empty
    HEADER = "header"  # a [header] ctk had to write for a table only implied before
    FINAL_NEWLINE = "final-newline"  # ctk added the file's final newline
    WHOLE_FILE = "whole-file"  # the file was missing (or blank: `before` holds its text)
    BLANK_INSIDE = "blank-inside"  # the whitespace of an empty JSON object at `keys` (`{ }`)
    # The JSON text of the value ctk replaced at `keys` (`before`; `after` holds its value), where
    # writing the value back would not give those bytes (`[ ]`, `[""]` in an indented file).
    VALUE_TEXT = "value-text"


# Kinds about the file or an object's layout, not a key: never a "created" key path.
LAYOUT = frozenset({ChangeKind.FINAL_NEWLINE, ChangeKind.BLANK_INSIDE, ChangeKind.VALUE_TEXT})

# Changes that unconfigure takes back after removing the runtime: tables emptied by that go.
TABLE_KINDS = frozenset({ChangeKind.NEW_TABLE, ChangeKind.HEADER})

# What ctk records of a [header] (`before` and `after`), so a record reads the same everywhere.
HEADER_VALUE: dict[str, JSONValue] = {"implicit-table": True}


@dataclass(frozen=True, slots=True)
class Change:
    """One change ctk made: its key path, whether it existed, the value before and after."""

    keys: tuple[str, ...]
    existed: bool
    before: JSONValue
    after: JSONValue
    kind: ChangeKind = ChangeKind.SET

    @property
    def identity(self) -> tuple[ChangeKind | None, tuple[str, ...]]:
        """What two records' changes must share to be the same change (layout kinds apart)."""
        return (self.kind if self.kind in LAYOUT else None, self.keys)


def new_table(keys: tuple[str, ...]) -> Change:
    """ctk created the table (object) at ``keys``."""
    return Change(keys, False, None, {}, ChangeKind.NEW_TABLE)


def header(keys: tuple[str, ...]) -> Change:
    """ctk wrote a [header] for the table at ``keys``, which was only implied before."""
    return Change(keys, True, HEADER_VALUE, HEADER_VALUE, ChangeKind.HEADER)


FINAL_NEWLINE_ADDED = Change((), False, None, None, ChangeKind.FINAL_NEWLINE)


@dataclass(frozen=True, slots=True)
class Edit:
    """New text for one file and the changes that led to it."""

    text: str
    changes: tuple[Change, ...] = ()
    notes: tuple[str, ...] = field(default=())


def merge_records(old: Sequence[Change], new: Sequence[Change]) -> tuple[Change, ...]:
    """Combine the record of an earlier run with a later one (the earlier "before" wins)."""
    out = list(old)
    known = {c.identity for c in old}
    for change in new:
        if change.identity in known:
            out = [
                c
                if c.identity != change.identity
                else Change(c.keys, c.existed, c.before, change.after, c.kind)
                for c in out
            ]
        else:
            out.append(change)
    return tuple(out)


def dump_record(changes: Sequence[Change]) -> str:
    """Serialise a record as JSON text."""
    payload = {
        "written-by": "ctk runtime configure",
        "changes": [
            {
                "kind": str(c.kind),
                "keys": list(c.keys),
                "existed": c.existed,
                "before": c.before,
                "after": c.after,
            }
            for c in changes
        ],
    }
    return json.dumps(payload, indent=2) + "\n"


RECORD_HINT = (
    "remove that file; unconfigure then removes only the runtime itself (and a default naming it)"
)
INT64 = range(-(2**63), 2**63)
MAX_DEPTH = 100  # ctk records hold a runtime table: a few levels deep


def load_record(name: str, text: str | None, *, nested_null: bool = False) -> tuple[Change, ...]:
    """Parse a record written by `dump_record` (missing: no changes).

    Anything else (truncated JSON, wrong types, a value the config's format cannot hold) is a
    `CtkError` naming the record. ``nested_null``: null may appear inside values (JSON configs).
    """
    if text is None:
        return ()
    try:
        payload = json.loads(text)
    except ValueError as exc:  # JSONDecodeError, or an integer too long to read
        raise CtkError(f"{name}: not a ctk record of changes ({exc})", hint=RECORD_HINT) from exc
    except RecursionError as exc:
        raise CtkError(
            f"{name}: not a ctk record of changes (nested too deeply)", hint=RECORD_HINT
        ) from exc
    items = payload.get("changes") if isinstance(payload, dict) else None
    if not isinstance(items, list):
        _bad_record(name, "no list of `changes`")
    out = []
    for index, item in enumerate(items):
        where = f"change {index + 1}"
        if not isinstance(item, dict):
            _bad_record(name, f"{where} is not an object")
        keys = item.get("keys")
        if not isinstance(keys, list) or not all(isinstance(k, str) for k in keys):
            _bad_record(name, f"{where}: `keys` must be a list of strings")
        existed = item.get("existed")
        if not isinstance(existed, bool):
            _bad_record(name, f"{where}: `existed` must be true or false")
        for field_name in ("before", "after"):
            value = item.get(field_name)
            if not _storable(value, top=True, nested_null=nested_null, depth=0):
                _bad_record(name, f"{where}: `{field_name}` holds a value no config file can hold")
        kind = item.get("kind")
        if kind is not None and kind not in ChangeKind.__members__.values():
            _bad_record(name, f"{where}: unknown `kind` {kind!r}")
        change = Change(tuple(keys), existed, item.get("before"), item.get("after"))
        out.append(
            Change(*_fields(change), ChangeKind(kind)) if kind is not None else _legacy(change)
        )
    return tuple(out)


def _fields(change: Change) -> tuple[tuple[str, ...], bool, JSONValue, JSONValue]:
    return change.keys, change.existed, change.before, change.after


# Records of ctk versions before `kind` said what a change was with these values.
_LEGACY_FINAL_NEWLINE = ("\n",)
_LEGACY_INSIDE = "\u0000inside"


def _legacy(change: Change) -> Change:
    """The kind of a change in a record written before records had `kind`."""
    keys, existed, before, after = _fields(change)
    if keys == ():
        return Change(keys, existed, before, after, ChangeKind.WHOLE_FILE)
    if keys == _LEGACY_FINAL_NEWLINE:
        return FINAL_NEWLINE_ADDED
    if keys[-1] == _LEGACY_INSIDE:
        return Change(keys[:-1], existed, before, after, ChangeKind.BLANK_INSIDE)
    if before == HEADER_VALUE and after == HEADER_VALUE:
        return header(keys)
    if after == {} and not existed:
        return new_table(keys)
    return change


def _bad_record(name: str, what: str) -> NoReturn:
    raise CtkError(f"{name}: not a ctk record of changes ({what})", hint=RECORD_HINT)


def _storable(value: object, *, top: bool, nested_null: bool, depth: int) -> bool:
    """Whether ``value`` can be written back into a TOML or JSON config (None: absent)."""
    if depth > MAX_DEPTH:
        return False
    if value is None:
        return top or nested_null
    if isinstance(value, bool | str):
        return True
    if isinstance(value, int):
        return value in INT64
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, list):
        return all(_storable(v, top=False, nested_null=nested_null, depth=depth + 1) for v in value)
    if isinstance(value, dict):
        return all(
            _storable(v, top=False, nested_null=nested_null, depth=depth + 1)
            for v in value.values()
        )
    return False


def whole_file_change(text: str | None) -> tuple[Change, ...]:
    """Record a missing or blank file, so that undoing everything gives it back as it was."""
    if text is None or not text.strip():
        return (Change((), text is not None, text, None, ChangeKind.WHOLE_FILE),)
    return ()


def restore_whole_file(result: str, record: Sequence[Change], *, blank: bool) -> str | None:
    """Return the text to write after an undo: the original blank file, or None to delete it.

    ``blank`` says whether ``result`` holds nothing any more (Docker: an empty object).
    """
    if not blank:
        return result
    for change in record:
        if change.kind is ChangeKind.WHOLE_FILE:
            return change.before if change.existed else None
    return result


def without_inside(changes: Sequence[Change], keys: tuple[str, ...]) -> tuple[Change, ...]:
    """Drop the changes below ``keys`` (a table that unconfigure removes as a whole)."""
    return tuple(c for c in changes if len(c.keys) <= len(keys) or c.keys[: len(keys)] != keys)


def replaced_keys(changes: Sequence[Change]) -> tuple[str, ...]:
    """The names of the keys whose existing values the changes replaced (their lines change)."""
    return tuple(c.keys[-1] for c in changes if c.existed and c.keys and c.kind is ChangeKind.SET)


def kept_existing(
    record: Sequence[Change], keys: tuple[str, ...], *, recorded: bool = False
) -> bool:
    """Whether the table at ``keys`` was there before ctk: unconfigure then keeps it.

    It undoes the edits inside it instead. ``recorded``: a record exists, so a table it does not
    show ctk creating is the user's. Without a record, a table stays only when ``record`` shows
    edits inside it; otherwise it goes, as nvidia-ctk removes it.
    """
    keyed = [c for c in record if c.kind not in LAYOUT]
    # ctk created it, or a table (or the file) around it
    created = any(keys[: len(c.keys)] == c.keys and not c.existed for c in keyed)
    if recorded:
        return not created
    inside = any(len(c.keys) > len(keys) and c.keys[: len(keys)] == keys for c in keyed)
    return inside and not created


def crlf(text: str) -> bool:
    """Whether every line of ``text`` ends with CRLF (a file written on Windows)."""
    return "\r\n" in text and text.count("\n") == text.count("\r\n")


def keep_line_ends(original: str, out: str) -> str:
    """``out`` with CRLF line ends where ``original`` has only those (new lines match the rest)."""
    if not crlf(original):
        return out
    return out.replace("\r\n", "\n").replace("\n", "\r\n")


def newline_of(text: str) -> str:
    """The line end ``text`` uses: CRLF or LF."""
    return "\r\n" if crlf(text) else "\n"
