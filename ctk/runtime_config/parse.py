"""Parsing the engines' config files into plain data, with errors that say where.

TOML is checked with `tomllib` first (strict, positioned messages), so that ctk refuses exactly
what containerd and CRI-O refuse; JSON is parsed with duplicate-free object order kept.
"""

from __future__ import annotations

import json
import re
from typing import Any

from ctk import toml_compat as tomllib
from ctk.errors import CtkError

JSONValue = Any  # parsed data enters here and is narrowed by the callers
TYPE_HINT = "the engine cannot use this value either; fix that key and run again"
IMPORTS_HINT = 'write it like imports = ["/etc/containerd/conf.d/*.toml"]'


MAX_DEPTH = 64  # arrays and tables nested deeper than this: no engine config looks like that

# Strings and comments (whose brackets do not count), and the brackets themselves.
_TOKENS = re.compile(
    r'"""(?:[^"\\]|\\.|"(?!""))*"""|\'\'\'.*?\'\'\'|"(?:[^"\\\n]|\\.)*"|\'[^\'\n]*\''
    r"|#[^\n]*|[\[\]{}]",
    re.DOTALL,
)


def check_depth(name: str, text: str, kind: str) -> None:
    """Refuse text nested deeper than `MAX_DEPTH`, naming where (the parsers would recurse)."""
    depth = 0
    for match in _TOKENS.finditer(text):
        token = match.group()
        if token in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                line, column = _position(text, match.start())
                tables = "tables" if kind == "TOML" else "objects"
                raise CtkError(
                    f"{name}: not valid {kind}: arrays or {tables} nested more than {MAX_DEPTH} "
                    f"deep (line {line}, column {column})",
                    hint="no engine config nests like this; fix the file, or pass another one "
                    "with --config",
                )
        elif token in "]}":
            depth = max(depth - 1, 0)


def load_toml(name: str, text: str) -> dict[str, JSONValue]:
    """Return ``text`` as plain data; `CtkError` naming ``name`` and the position if malformed."""
    check_depth(name, text, "TOML")
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise CtkError(
            f"{name}: not valid TOML: {exc}", hint="fix the file, or pass another one with --config"
        ) from exc


def load_json_object(name: str, text: str) -> dict[str, JSONValue]:
    """Return ``text`` as a JSON object; `CtkError` naming ``name`` and line/column otherwise."""
    if not text.strip():
        raise CtkError(
            f"{name}: empty file, expected a JSON object",
            hint='write "{}" into it, or remove it, and run again',
        )
    check_depth(name, text, "JSON")
    try:
        value = json.loads(text, object_pairs_hook=_no_duplicates, parse_constant=_refuse_constant)
    except json.JSONDecodeError as exc:
        raise CtkError(
            f"{name}: not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})",
            hint="fix the file, or pass another one with --config",
        ) from exc
    except _BadConstant as exc:
        line, column = _position(text, _constant_at(text))
        raise CtkError(
            f"{name}: not valid JSON: {exc.token} is not a JSON number "
            f"(line {line}, column {column})",
            hint="dockerd refuses it too; write a number or a string",
        ) from exc
    except _DuplicateKey as exc:
        raise CtkError(
            f"{name}: not valid JSON: key {exc.key!r} appears twice in one object",
            hint="keep one of them",
        ) from exc
    if not isinstance(value, dict):
        raise CtkError(
            f"{name}: expected a JSON object at the top, found {type_name(value)}",
            hint="the file must look like {...}",
        )
    return value


class _BadConstant(ValueError):
    def __init__(self, token: str) -> None:
        super().__init__(token)
        self.token = token


def _refuse_constant(token: str) -> JSONValue:
    """Python's json reads NaN and Infinity; JSON (and Go's encoding/json) do not."""
    raise _BadConstant(token)


_CONSTANT = re.compile(r'"(?:[^"\\]|\\.)*"|-?Infinity|NaN')


def _constant_at(text: str) -> int:
    return next(m.start() for m in _CONSTANT.finditer(text) if not m.group().startswith('"'))


def _position(text: str, pos: int) -> tuple[int, int]:
    """1-based line and column of offset ``pos``."""
    return text.count("\n", 0, pos) + 1, pos - text.rfind("\n", 0, pos)


class _DuplicateKey(ValueError):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _no_duplicates(pairs: list[tuple[str, JSONValue]]) -> dict[str, JSONValue]:
    out: dict[str, JSONValue] = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKey(key)
        out[key] = value
    return out


def type_name(value: object) -> str:
    """Name ``value``'s type the way the config formats do (table/object, array, string...)."""
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if value is None:
        return "null"
    return type(value).__name__
