"""The glob matcher's remaining corners: a pattern without meta characters comes back as written
(as Go's `filepath.Glob` returns it), letters such as `X` are literals in and out of a class, a
`*` after a literal does not let a later literal match from the name's start again, and a bad
pattern's error says what is wrong with it.

(issue 26: survivors of the mutation run in `imports.glob`, `_tokens`, `_class_char` and
`_matches`.)"""

from __future__ import annotations

import posixpath
from collections.abc import Sequence

import pytest

from ctk.errors import CtkError
from ctk.runtime_config.imports import clean, entry_path, glob, match, resolve, with_path

TREE = {
    "/etc/containerd": ["config.toml", "conf.d", "a.toml"],
    "/etc/containerd/conf.d": ["10-x.toml", "99-nvidia.toml"],
}


def _normalising_listing(directory: str) -> Sequence[str] | None:
    """A listing that, like the file system, reads `/etc//containerd/.` as `/etc/containerd`."""
    return TREE.get(posixpath.normpath(directory))


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        pytest.param("/etc//containerd/a.toml", ["/etc//containerd/a.toml"], id="double-slash"),
        pytest.param("/etc/containerd/./a.toml", ["/etc/containerd/./a.toml"], id="dot"),
        pytest.param("/etc/containerd/./b.toml", [], id="missing"),
        pytest.param(
            "/etc/containerd/./conf.d/*.toml",
            ["/etc/containerd/conf.d/10-x.toml", "/etc/containerd/conf.d/99-nvidia.toml"],
            id="a-glob-comes-back-clean",
        ),
    ],
)
def test_a_pattern_without_meta_comes_back_as_written(pattern: str, expected: list[str]) -> None:
    assert glob(pattern, _normalising_listing) == expected


@pytest.mark.parametrize(
    ("pattern", "name", "expected"),
    [
        pytest.param("X", "a", False, id="X-is-a-literal"),
        pytest.param("X", "X", True, id="X-matches-itself"),
        pytest.param("a.X", "a.b", False, id="X-after-a-dot"),
        pytest.param("[X]", "X", True, id="X-in-a-class"),
        pytest.param("[X]", "Y", False, id="X-in-a-class-only-X"),
        pytest.param("[A-Z]", "X", True, id="X-in-a-range"),
        pytest.param("a*a", "a", False, id="star-between-literals-needs-two"),
        pytest.param("a*a", "aa", True, id="star-between-literals-empty"),
        pytest.param("a*a", "aba", True, id="star-between-literals"),
        pytest.param("x*.toml", "x", False, id="star-then-a-suffix-longer-than-the-name"),
    ],
)
def test_match_corners(pattern: str, name: str, expected: bool) -> None:
    assert match(pattern, name) is expected


@pytest.mark.parametrize(
    ("entry", "reason"),
    [
        pytest.param("conf.d/*\\", "trailing backslash", id="trailing-backslash"),
        pytest.param("conf.d/*[\\", "malformed character class", id="class-ends-in-backslash"),
        pytest.param("conf.d/*[a-\\", "malformed character class", id="range-ends-in-backslash"),
    ],
)
def test_a_bad_glob_says_why(entry: str, reason: str) -> None:
    with pytest.raises(CtkError) as caught:
        resolve("/etc/containerd/config.toml", [entry], TREE.get)
    assert caught.value.message == (
        f"/etc/containerd/config.toml: the import {entry!r} is not a valid glob pattern ({reason})"
    )
    assert caught.value.hint == (
        "containerd refuses it too: fix the pattern (Go's filepath.Match syntax)"
    )


@pytest.mark.parametrize(
    ("path", "cleaned"),
    [
        pytest.param("", ".", id="empty-is-dot"),
        pytest.param("//etc/containerd", "/etc/containerd", id="two-leading-slashes"),
        pytest.param("///etc//containerd/", "/etc/containerd", id="three-leading-slashes"),
        pytest.param("//", "/", id="two-slashes-alone"),
        pytest.param("//X/y", "/X/y", id="only-slashes-go"),
        pytest.param("a//b/../c/.", "a/c", id="relative"),
        pytest.param("/../x", "/x", id="above-the-root"),
    ],
)
def test_clean_is_gos_filepath_clean(path: str, cleaned: str) -> None:
    """What Go's filepath.Clean gives (posixpath.normpath keeps two leading slashes; Go never)."""
    assert clean(path) == cleaned


def test_a_relative_import_with_two_leading_slashes_is_one_absolute_path() -> None:
    assert entry_path("/etc/containerd/config.toml", "//etc/x.toml") == "/etc/x.toml"
    assert entry_path("/etc/containerd/config.toml", "conf.d//y.toml") == (
        "/etc/containerd/conf.d/y.toml"
    )


def test_with_path_adds_the_folders_leading_to_the_path() -> None:
    """As if /etc/containerd/conf.d/99-nvidia.toml existed: the root lists etc, each folder the
    next one, the last the file; a folder already listing the name gets it once; others not."""
    listing = with_path({"/": ["usr"], "/etc": ["containerd"]}.get, "/etc/containerd/conf.d/x.toml")
    assert listing("/") == ["usr", "etc"]
    assert listing("/etc") == ["containerd"]
    assert listing("/etc/containerd") == ["conf.d"]
    assert listing("/etc/containerd/conf.d") == ["x.toml"]
    assert listing("/usr") is None
    assert glob("/etc/containerd/conf.d/*.toml", listing) == ["/etc/containerd/conf.d/x.toml"]
