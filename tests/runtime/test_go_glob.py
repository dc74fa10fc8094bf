"""containerd's `imports` globs as Go's `filepath.Match` and `filepath.Glob` read them: a table
of patterns, pinned in-process, and the same table checked against Go itself.

(issue 26: the mutation run found the matcher's corners unpinned.)"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from pathlib import Path

import pytest

from ctk.errors import CtkError
from ctk.runtime_config.imports import BadPattern, ListDir, glob, match, resolve
from tests.deploy.test_distributions import go_program

BAD = "bad"
TABLE: list[tuple[str, str, bool | str]] = [
    ("*", "config.toml", True),
    ("*", "", True),
    ("*", "a/b", False),  # no component crosses a separator
    ("*.toml", "a.toml", True),
    ("*.toml", "a.toml.bak", False),
    ("a*b*c", "axxbyyc", True),
    ("a*b*c", "axxbyy", False),
    ("?", "a", True),
    ("?", "", False),
    ("?", "ab", False),
    ("?", "/", False),
    ("a?c", "abc", True),
    ("[abc]", "b", True),
    ("[abc]", "d", False),
    ("[a-c]", "b", True),
    ("[a-c]", "d", False),
    ("[a-cx-z]", "y", True),
    ("[^a-c]", "d", True),
    ("[^a-c]", "b", False),
    ("[^a]", "/", True),  # a class can match a separator in Go; "?" and "*" cannot
    ("a[/]b", "a/b", True),
    ("a/b", "a/b", True),
    ("a?b", "a/b", False),
    ("a*b", "a/b", False),
    ("[\\]]", "]", True),
    ("[\\-]", "-", True),
    ("[a\\-c]", "b", False),
    ("\\*", "*", True),
    ("\\*", "a", False),
    ("\\?x", "?x", True),
    ("a\\", "a", BAD),
    ("\\", "", BAD),
    ("[", "a", BAD),
    ("[]", "a", BAD),
    ("[]a]", "a", BAD),
    ("[a-]", "a", BAD),
    ("[-a]", "a", BAD),
    ("[^]", "a", BAD),
    ("[a", "a", BAD),
    ("[\\", "a", BAD),
    ("[a-\\", "a", BAD),
    ("[x]*", "xyz", True),
    ("*[x]", "abx", True),
    ("**", "ab", True),
    ("a*", "a", True),
]


def _ctk(pattern: str, name: str) -> bool | str:
    try:
        return match(pattern, name)
    except BadPattern:
        return BAD


@pytest.mark.parametrize(("pattern", "name", "expected"), TABLE)
def test_match(pattern: str, name: str, expected: bool | str) -> None:
    assert _ctk(pattern, name) == expected


GO_MATCH = """package main

import (
	"encoding/json"
	"os"
	"path/filepath"
)

func main() {
	var cases [][2]string
	if err := json.NewDecoder(os.Stdin).Decode(&cases); err != nil {
		panic(err)
	}
	out := []any{}
	for _, c := range cases {
		ok, err := filepath.Match(c[0], c[1])
		if err != nil {
			out = append(out, "bad")
		} else {
			out = append(out, ok)
		}
	}
	json.NewEncoder(os.Stdout).Encode(out)
}
"""


def test_the_table_is_what_go_says(tmp_path: Path) -> None:
    go, go_env = go_program()
    (tmp_path / "match.go").write_text(GO_MATCH)
    cache = Path(tempfile.gettempdir()) / f"ctk-go-cache-{os.getuid()}"  # the hook build's
    env = {**os.environ, **go_env, "GOTOOLCHAIN": "local", "GOPROXY": "off"}
    env.setdefault("GOCACHE", str(cache / "build"))
    done = subprocess.run(
        [go, "run", str(tmp_path / "match.go")],
        input=json.dumps([[p, n] for p, n, _ in TABLE]),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    said = json.loads(done.stdout)
    assert {(p, n): s for (p, n, _), s in zip(TABLE, said, strict=True)} == {
        (p, n): e for p, n, e in TABLE
    }


def _listing(tree: dict[str, list[str]]) -> ListDir:
    return tree.get


TREE = {
    "/etc/containerd": ["config.toml", "conf.d", "a.toml"],
    "/etc/containerd/conf.d": ["99-nvidia.toml", "10-x.toml", "notes.txt"],
    ".": ["local.toml"],
    "/": ["etc"],
    "/etc": ["containerd"],
}


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        pytest.param(
            "/etc/containerd/conf.d/*.toml",
            [
                "/etc/containerd/conf.d/10-x.toml",
                "/etc/containerd/conf.d/99-nvidia.toml",
            ],
            id="sorted-matches",
        ),
        pytest.param("/etc/containerd/a.toml", ["/etc/containerd/a.toml"], id="no-meta-exists"),
        pytest.param("/etc/containerd/b.toml", [], id="no-meta-missing"),
        pytest.param("/nowhere/x.toml", [], id="no-meta-no-folder"),
        pytest.param("local.toml", ["local.toml"], id="no-meta-relative"),
        pytest.param("*.toml", ["local.toml"], id="relative-glob"),
        pytest.param(
            "/etc/*/conf.d/1*",
            ["/etc/containerd/conf.d/10-x.toml"],
            id="a-glob-in-the-folder",
        ),
        pytest.param("/etc/nothing/*", [], id="no-such-folder"),
        pytest.param("/etc/containerd/[", BAD, id="bad-even-with-nothing-listed"),
    ],
)
def test_glob(pattern: str, expected: list[str] | str) -> None:
    try:
        found: list[str] | str = glob(pattern, _listing(TREE))
    except BadPattern:
        found = BAD
    assert found == expected


def test_a_bad_import_glob_is_named_with_its_file() -> None:
    with pytest.raises(CtkError) as caught:
        resolve("/etc/containerd/config.toml", ["conf.d/*[.toml"], _listing(TREE))
    assert caught.value.message == (
        "/etc/containerd/config.toml: the import 'conf.d/*[.toml' is not a valid glob pattern "
        "(malformed character class)"
    )
