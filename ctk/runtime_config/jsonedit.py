"""Formatting-preserving edits of a JSON object's members (for Docker's daemon.json).

The text is edited where the members are: key order, indentation and every byte outside the
members ctk sets stay as they were, and removing what was added gives back the original text.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from ctk.runtime_config.parse import JSONValue

_DECODER = json.JSONDecoder()
WHITESPACE = " \t\n\r"
"""What JSON counts as whitespace between tokens (RFC 8259)."""


@dataclass(frozen=True, slots=True)
class Member:
    """One `"key": value` of an object, by offsets into the text."""

    key: str
    key_start: int
    key_end: int  # just past the key's closing quote
    value_start: int
    value_end: int


@dataclass(frozen=True, slots=True)
class ObjectSpan:
    """An object's `{` and `}` offsets and its members."""

    open: int
    close: int
    members: tuple[Member, ...]


def _skip(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in WHITESPACE:
        pos += 1
    return pos


def object_at(text: str, pos: int) -> ObjectSpan:
    """Scan the (valid) object whose `{` is at ``pos``."""
    assert text[pos] == "{"
    members = []
    i = _skip(text, pos + 1)
    if text[i] == "}":
        return ObjectSpan(pos, i, ())
    while True:
        key_start = i
        key, key_end = json.decoder.scanstring(text, i + 1)  # type: ignore[attr-defined]
        i = _skip(text, key_end)
        i = _skip(text, i + 1)  # past ':'
        _, end = _DECODER.raw_decode(text, i)
        members.append(Member(key, key_start, key_end, i, end))
        i = _skip(text, end)
        if text[i] == "}":
            return ObjectSpan(pos, i, tuple(members))
        i = _skip(text, i + 1)  # past ','


def top_object(text: str) -> ObjectSpan:
    """The document's top-level object."""
    return object_at(text, _skip(text, 0))


def find_object(text: str, keys: Sequence[str]) -> ObjectSpan | None:
    """The object at the key path ``keys`` (None if a member is missing or not an object)."""
    span = top_object(text)
    for key in keys:
        member = next((m for m in span.members if m.key == key), None)
        if member is None or text[member.value_start] != "{":
            return None
        span = object_at(text, member.value_start)
    return span


def _line_indent(text: str, pos: int) -> str:
    start = text.rfind("\n", 0, pos) + 1
    indent = text[start:pos]
    return indent if not indent.strip() else ""


def indent_unit(text: str) -> str | None:
    """The file's indentation step ("  ", "    ", "\\t"), None for a one-line file."""
    span = top_object(text)
    if not span.members:
        return None
    first = span.members[0]
    between = text[span.open + 1 : first.key_start]
    if "\n" not in between:
        return None
    return between.rsplit("\n", 1)[1] or None


def _separator(text: str) -> str:
    span = top_object(text)
    if span.members:
        member = span.members[0]  # the key as written: escapes and all
        return text[member.key_end : member.value_start]
    return ": "


def render(value: JSONValue, unit: str | None, indent: str) -> str:
    """Dump ``value`` in the file's style, continuation lines indented by ``indent``."""
    if unit is None:
        return json.dumps(value, ensure_ascii=False)
    return json.dumps(value, indent=unit, ensure_ascii=False).replace("\n", "\n" + indent)


def set_member(text: str, keys: Sequence[str], value: JSONValue, *, default_unit: str) -> str:
    """Set the member at ``keys`` (its parent objects must exist) to ``value``."""
    parent = find_object(text, keys[:-1])
    assert parent is not None
    unit = indent_unit(text)
    if unit is None and ("\n" in text.strip() or not top_object(text).members):
        unit = default_unit
    member = next((m for m in parent.members if m.key == keys[-1]), None)
    if member is not None:
        indent = _line_indent(text, member.key_start)
        new = render(value, unit, indent)
        return text[: member.value_start] + new + text[member.value_end :]
    sep = _separator(text)
    if parent.members:
        last = parent.members[-1]
        indent = _line_indent(text, last.key_start)
        gap = text[_gap_start(text, parent, last) : last.key_start]
        if "\n" not in gap and len(parent.members) == 1:
            gap = " " if sep.endswith(" ") else ""
        # An object written on one line, or whose last member is a one-line object or array,
        # gets the new member on one line too (a multi-line block there would be mis-indented).
        last_value = text[last.value_start : last.value_end]
        one_line = "\n" not in text[parent.open : parent.close] or (
            last_value[:1] in "{[" and "\n" not in last_value
        )
        rendered = render(value, None if one_line else unit, indent)
        entry = json.dumps(keys[-1], ensure_ascii=False) + sep + rendered
        return text[: last.value_end] + "," + gap + entry + text[last.value_end :]
    outer = _line_indent(text, parent.open) if parent.open else ""
    if parent.open and not outer:
        outer = _line_indent(text, _member_start_of(text, parent.open))
    if unit is None:
        entry = json.dumps(keys[-1], ensure_ascii=False) + sep + render(value, None, "")
        return text[: parent.open + 1] + entry + text[parent.close :]
    indent = outer + unit
    entry = json.dumps(keys[-1], ensure_ascii=False) + sep + render(value, unit, indent)
    return text[: parent.open + 1] + "\n" + indent + entry + "\n" + outer + text[parent.close :]


def _gap_start(text: str, parent: ObjectSpan, last: Member) -> int:
    # The whitespace before the last member's key, reused before the new one ("\n    ").
    index = parent.members.index(last)
    if index == 0:
        return parent.open + 1
    previous = parent.members[index - 1]
    comma = text.index(",", previous.value_end)
    return comma + 1


def _member_start_of(text: str, pos: int) -> int:
    # An object value's line starts with its key: find that line's first non-blank.
    start = text.rfind("\n", 0, pos) + 1
    return start + len(text[start:pos]) - len(text[start:pos].lstrip())


def delete_member(text: str, keys: Sequence[str]) -> str:
    """Remove the member at ``keys`` if it is there."""
    parent = find_object(text, keys[:-1])
    if parent is None:
        return text
    members = parent.members
    index = next((i for i, m in enumerate(members) if m.key == keys[-1]), None)
    if index is None:
        return text
    member = members[index]
    if len(members) == 1:
        return text[: parent.open + 1] + text[parent.close :]
    if index > 0:
        return text[: members[index - 1].value_end] + text[member.value_end :]
    return text[: member.key_start] + text[members[1].key_start :]
