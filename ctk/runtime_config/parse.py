"""Parsing the engines' config files into plain data, with errors that say where.

TOML is checked with `tomllib` first (strict, positioned messages), so that ctk refuses exactly
what containerd and CRI-O refuse; JSON is parsed with duplicate-free object order kept.
"""

from __future__ import annotations

import functools
import json
import math
import re
from typing import Any

from ctk.errors import CtkError

JSONValue = Any  # parsed data enters here and is narrowed by the callers
TYPE_HINT = "the engine cannot use this value either; fix that key and run again"
IMPORTS_HINT = 'write it like imports = ["/etc/containerd/conf.d/*.toml"]'


MAX_DEPTH = 64  # arrays and tables nested deeper than this: no engine config looks like that

# Strings and comments (whose brackets and digits do not count), each written as an "unrolled
# loop" (a run of plain characters, then an escape and another run), so that a long string is
# one step per run rather than one alternation per character.
_SKIPPED = (
    r'"""[^"\\]*(?:(?:\\.|"(?!""))[^"\\]*)*"""'
    r"|'''.*?'''"
    r'|"[^"\\\n]*(?:\\.[^"\\\n]*)*"'
    r"|'[^'\n]*'"
    r"|#[^\n]*"
)
_TOKENS = re.compile(_SKIPPED + r"|[\[\]{}]", re.DOTALL)


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
    """Return ``text`` as plain data; `CtkError` naming ``name`` and the position if malformed.

    The same text is parsed once per run (planning reads each file several times); callers
    treat the data as read-only.
    """
    return _load_toml(name, text)


@functools.lru_cache(maxsize=16)
def _load_toml(name: str, text: str) -> dict[str, JSONValue]:
    from ctk import toml_compat as tomllib  # not loaded for Docker's JSON

    check_depth(name, text, "TOML")
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise CtkError(
            f"{name}: not valid TOML: {exc}", hint="fix the file, or pass another one with --config"
        ) from exc
    except ValueError as exc:  # an integer longer than Python converts (4,300 digits)
        raise _long_number(name, text, "TOML") from exc
    except RecursionError as exc:  # tomli (Python 3.10): a key of 1,000 dotted parts
        raise _too_deep(name, text) from exc
    _check_key_depth(name, text, data)
    return data


# A run of digits too long for an integer, outside strings and comments (found after the parser
# refused one, so a long string of digits is never mistaken for it).
_LONG_NUMBER = re.compile(_SKIPPED + r"|[0-9][0-9_]{4300,}", re.DOTALL)


def _long_number(name: str, text: str, kind: str) -> CtkError:
    where = ""
    for match in _LONG_NUMBER.finditer(text):
        if match.group()[0].isdigit():
            line, column = _position(text, match.start())
            where = f" (line {line}, column {column})"
            break
    return CtkError(
        f"{name}: not valid {kind}: a number with thousands of digits{where}",
        hint="no engine reads a number this long; fix the file, or pass another one with --config",
    )


def _check_key_depth(name: str, text: str, data: dict[str, JSONValue]) -> None:
    """Refuse tables nested deeper than `MAX_DEPTH` by dotted keys (``a.b.c....``), naming a line.

    Brackets are counted before parsing; dotted keys nest without them, and the editors would
    recurse into them.
    """
    stack: list[tuple[JSONValue, int]] = [(data, 1)]
    while stack:
        value, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise _too_deep(name, text)
        if isinstance(value, dict):
            stack.extend((v, depth + 1) for v in value.values())
        elif isinstance(value, list):
            stack.extend((v, depth + 1) for v in value)


def _too_deep(name: str, text: str) -> CtkError:
    line = next(
        (i for i, t in enumerate(text.splitlines(), 1) if t.count(".") >= MAX_DEPTH // 2),
        None,
    )
    where = f" (line {line})" if line is not None else ""
    return CtkError(
        f"{name}: not valid TOML: tables nested more than {MAX_DEPTH} deep{where}",
        hint="no engine config nests like this; fix the file, or pass another one with --config",
    )


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
    except ValueError as exc:  # an integer longer than Python converts (4,300 digits)
        raise _long_number(name, text, "JSON") from exc
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


def same_data(a: JSONValue, b: JSONValue) -> bool:
    """``a == b`` for parsed data, where a TOML ``nan`` equals ``nan`` (as the text is the same)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_data(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same_data(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return bool(a == b)


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
