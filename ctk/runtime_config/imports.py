"""Which files containerd loads through `imports`, resolved as containerd resolves them.

Pure: the caller passes a listing function (the names in a directory, None when it is not a
readable directory) and a function giving each file's `imports` (None when the file is missing).

containerd (`resolveImports` in its config loader) cleans each entry, joins a relative one to the
folder of the file that imports it, and globs it with Go's `filepath.Glob` only when it contains
`*`; then `?`, `[...]` and `\\` escapes take their Go meaning too. Other entries are taken as
written, `?` and `[` included. Files load breadth first from the main file, each once.
containerd 1.6 and 1.7 glob a relative pattern against their working directory (`/` under
systemd) instead; 2.0 joins it first (containerd PR #9746), which is what this module does.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ctk.errors import CtkError
from ctk.runtime_config.parse import IMPORTS_HINT, load_toml

ListDir = Callable[[str], Sequence[str] | None]
ImportsOf = Callable[[str], Sequence[str] | None]
GO_META = "*?[\\"


class BadPattern(ValueError):
    """A glob pattern Go's filepath.Match refuses (containerd fails to start on it)."""


def imports_in(name: str, text: str) -> list[str]:
    """The `imports` of a config's ``text``; `CtkError` unless it is an array of strings."""
    value = load_toml(name, text).get("imports", [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise CtkError(f"{name}: `imports` must be an array of strings", hint=IMPORTS_HINT)
    return value


def relative_glob_warnings(name: str, entries: Sequence[str]) -> list[str]:
    """Warn about relative glob entries, which containerd versions read from different folders."""
    return [
        f"{name}: the import {entry!r} is a relative glob: containerd 2.x reads it from the "
        "config's folder, containerd 1.6 and 1.7 from their working directory (/ under "
        "systemd); write it as an absolute path"
        for entry in entries
        if _relative_glob(entry)
    ]


def clean(path: str) -> str:
    """Go's `filepath.Clean` on a POSIX path."""
    if not path:
        return "."
    out = posixpath.normpath(path)
    return "/" + out.lstrip("/") if out.startswith("//") else out


def entry_path(including: str, entry: str) -> str:
    """An import entry as a clean path: relative ones joined to ``including``'s folder."""
    path = clean(entry)
    if not path.startswith("/"):
        path = clean(posixpath.join(posixpath.dirname(including), path))
    return path


def resolve(including: str, entries: Sequence[str], list_dir: ListDir) -> list[str]:
    """The paths that the ``entries`` of ``including``'s `imports` name, in containerd's order.

    A glob expands to its sorted matches; `CtkError` for a malformed one.
    """
    out: list[str] = []
    for entry in entries:
        path = entry_path(including, entry)
        if "*" not in path:
            out.append(path)
            continue
        try:
            out.extend(glob(path, list_dir))
        except BadPattern as exc:
            raise CtkError(
                f"{including}: the import {entry!r} is not a valid glob pattern ({exc})",
                hint="containerd refuses it too: fix the pattern (Go's filepath.Match syntax)",
            ) from exc
    return out


@dataclass(frozen=True, slots=True)
class ImportedFiles:
    """The files containerd loads after the main file, in order, and imports that are missing."""

    files: tuple[str, ...]
    missing: tuple[str, ...]


def walk(main: str, imports_of: ImportsOf, list_dir: ListDir) -> ImportedFiles:
    """Follow `imports` from ``main`` (nested ones too), breadth first, each file once."""
    main_imports = imports_of(main) or ()
    pending = resolve(main, main_imports, list_dir)
    loaded = {main}
    files: list[str] = []
    missing: list[str] = []
    while pending:
        path = pending.pop(0)
        if path in loaded:
            continue
        loaded.add(path)
        entries = imports_of(path)
        if entries is None:
            missing.append(path)
            continue
        files.append(path)
        pending.extend(resolve(path, entries, list_dir))
    return ImportedFiles(tuple(files), tuple(missing))


def imported(including: str, entries: Sequence[str], path: str) -> bool:
    """Whether ``entries`` of ``including`` name ``path``, whether or not it exists yet."""
    path = clean(path)
    return path in resolve(including, entries, with_path(lambda _: None, path))


def imported_by_all_versions(including: str, entries: Sequence[str], path: str) -> bool:
    """Like `imported`, counting no relative glob (containerd 1.6/1.7 read those elsewhere)."""
    return imported(including, [e for e in entries if not _relative_glob(e)], path)


def _relative_glob(entry: str) -> bool:
    return "*" in entry and not entry.startswith("/")


def with_path(list_dir: ListDir, path: str) -> ListDir:
    """``list_dir``, as if ``path`` (and the folders leading to it) existed too."""
    parts = clean(path).split("/")
    wanted = {"/".join(parts[:i]) or "/": parts[i] for i in range(1, len(parts))}

    def listing(directory: str) -> Sequence[str] | None:
        names = list_dir(directory)
        extra = wanted.get(directory)
        if extra is None or extra in (names or ()):
            return names
        return [*(names or ()), extra]

    return listing


def glob(pattern: str, list_dir: ListDir) -> list[str]:
    """Go's `filepath.Glob` (POSIX), listing directories through ``list_dir``."""
    _tokens(pattern)  # refuse a malformed pattern even where nothing would be listed
    if not any(c in pattern for c in GO_META):
        folder, name = posixpath.split(pattern)
        return [pattern] if name in (list_dir(folder or ".") or ()) else []
    folder, name = posixpath.split(pattern)
    folder = folder or "."
    if not any(c in folder for c in GO_META):
        return _glob_in(folder, name, list_dir)
    if folder == pattern:
        raise BadPattern("pattern recursion")
    out: list[str] = []
    for directory in glob(folder, list_dir):
        out.extend(_glob_in(directory, name, list_dir))
    return out


def _glob_in(folder: str, pattern: str, list_dir: ListDir) -> list[str]:
    names = list_dir(folder)
    if names is None:
        return []
    tokens = _tokens(pattern)
    return [clean(posixpath.join(folder, n)) for n in sorted(names) if _matches(tokens, n)]


def match(pattern: str, name: str) -> bool:
    """Go's `filepath.Match` for one path component; `BadPattern` when malformed."""
    return _matches(_tokens(pattern), name)


Token = tuple[str, bool, tuple[tuple[str, str], ...]] | str


def _tokens(pattern: str) -> list[Token]:
    """Split a pattern: "*", "?", a literal character, or a class (negated, ranges)."""
    out: list[Token] = []
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c in "*?":
            out.append(c if c == "*" else "?")
            i += 1
        elif c == "\\":
            if i + 1 >= len(pattern):
                raise BadPattern("trailing backslash")
            out.append("=" + pattern[i + 1])
            i += 2
        elif c == "[":
            i += 1
            negate = i < len(pattern) and pattern[i] == "^"
            i += negate
            ranges: list[tuple[str, str]] = []
            while True:
                if i < len(pattern) and pattern[i] == "]" and ranges:
                    i += 1
                    break
                lo, i = _class_char(pattern, i)
                hi = lo
                if i < len(pattern) and pattern[i] == "-":
                    hi, i = _class_char(pattern, i + 1)
                ranges.append((lo, hi))
            out.append(("[", negate, tuple(ranges)))
        else:
            out.append("=" + c)
            i += 1
    return out


def _class_char(pattern: str, i: int) -> tuple[str, int]:
    if i >= len(pattern) or pattern[i] in "-]":
        raise BadPattern("malformed character class")
    if pattern[i] == "\\":
        i += 1
        if i >= len(pattern):
            raise BadPattern("malformed character class")
    return pattern[i], i + 1


def _one(token: Token, c: str) -> bool:
    if token == "?":  # as in Go, "?" and "*" never match the separator; a literal and a class can
        return c != "/"
    if isinstance(token, str):
        return token[1] == c
    _, negate, ranges = token
    return any(lo <= c <= hi for lo, hi in ranges) != negate


def _matches(tokens: Sequence[Token], name: str) -> bool:
    # reach[j]: the tokens seen so far can match name[:j]
    reach = [True] + [False] * len(name)
    for token in tokens:
        if token == "*":
            for j in range(1, len(name) + 1):
                reach[j] = reach[j] or (reach[j - 1] and name[j - 1] != "/")
        else:
            reach = [False] + [reach[j] and _one(token, name[j]) for j in range(len(name))]
    return reach[len(name)]
