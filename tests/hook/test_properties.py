"""Properties: no image layout leads `resolve` out of the root; no argv crashes the parser."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from ctk.hook.main import HelpWanted, UsageProblem, parse
from ctk.hook.rootfd import Root, proc_path
from ctk.hook.rootfs import HookError, resolve
from ctk.hook.state import loads
from ctk.nvproc import parse_proc_devices

NAMES = st.sampled_from(["a", "b", "etc", "..", ".", "lib", ""])
PATHS = st.lists(NAMES, max_size=6).map("/".join)
TARGETS = st.one_of(PATHS, PATHS.map(lambda p: "/" + p))


@settings(max_examples=150, deadline=None)
@given(
    links=st.dictionaries(
        st.sampled_from(["a", "b", "etc", "lib"]), TARGETS.filter(bool), max_size=4
    ),
    path=TARGETS,
)
def test_resolve_never_leaves_the_root(links: dict[str, str], path: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = os.path.join(tmp, "root")
        os.makedirs(os.path.join(root, "sub"))
        for name, target in links.items():
            os.symlink(target, os.path.join(root, name))
            os.symlink(target, os.path.join(root, "sub", name))
        try:
            got = resolve(root, path)
        except HookError:
            return
        assert os.path.commonpath([got, root]) == root
        real = os.path.realpath(got)
        assert os.path.commonpath([real, os.path.realpath(root)]) == os.path.realpath(root)


@settings(max_examples=150, deadline=None)
@given(
    links=st.dictionaries(
        st.sampled_from(["a", "b", "etc", "lib"]), TARGETS.filter(bool), max_size=4
    ),
    path=TARGETS,
    follow=st.booleans(),
)
def test_fd_walk_agrees_with_resolve(links: dict[str, str], path: str, *, follow: bool) -> None:
    """The descriptor walk that writes go through reaches what `resolve` names, or refuses alike."""
    with tempfile.TemporaryDirectory() as tmp:
        root = os.path.join(os.path.realpath(tmp), "root")
        os.makedirs(os.path.join(root, "sub"))
        for name, target in links.items():
            os.symlink(target, os.path.join(root, name))
            os.symlink(target, os.path.join(root, "sub", name))
        names = [part for part in path.split("/") if part not in ("", ".")]
        try:
            if follow or names[-1:] in ([], [".."]):
                expected = resolve(root, path)
            else:  # the last name itself, in its folder
                expected = os.path.join(resolve(root, "/".join(names[:-1])), names[-1])
        except HookError as exc:  # the same refusal (its message may name the folder, not the path)
            expected = str(exc).partition(": ")[2]
        with Root(root) as container:
            try:
                folder, name = container.walk(path, follow=follow, make=True)
            except HookError as exc:
                assert str(exc).partition(": ")[2] == expected
                return
        try:
            got = os.path.normpath(os.path.join(os.readlink(proc_path(folder)), name))
        finally:
            os.close(folder)
        assert got == expected
        assert os.path.commonpath([got, root]) == root


ARGS = st.lists(
    st.one_of(
        st.sampled_from(
            ["create-symlinks", "chmod", "--link", "--mode", "--path", "-d", "--help", "=", "--"]
        ),
        st.text(max_size=8),
    ),
    max_size=6,
)


@settings(max_examples=300, deadline=None)
@given(ARGS)
def test_parse_answers_or_refuses(argv: list[str]) -> None:
    try:
        command, values = parse(argv)
    except (UsageProblem, HelpWanted):
        return
    assert command in argv
    assert all(isinstance(v, list) and v for v in values.values())


@given(st.text())
def test_proc_devices_parser_takes_any_text(text: str) -> None:
    assert all(isinstance(v, int) for v in parse_proc_devices(text).values())


def test_resolve_example(tmp_path: Path) -> None:
    os.symlink("/etc", tmp_path / "lib")
    assert resolve(str(tmp_path), "/lib/x") == f"{tmp_path}/etc/x"


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)
JSONISH = st.text(alphabet='{}[]":,0123456789.eE+-tfnul \\\n\tabNIy\ufeff', max_size=30)


def _json_outcome(load: Callable[[str], object], text: str) -> object:
    try:
        return ("ok", repr(load(text)))
    except ValueError as exc:
        return (
            "error",
            getattr(exc, "msg", None),
            getattr(exc, "lineno", None),
            getattr(exc, "colno", None),
        )


@settings(max_examples=300, deadline=None)
@given(st.one_of(JSON_VALUES.map(json.dumps), JSONISH))
def test_hook_json_reader_agrees_with_json(text: str) -> None:
    """The hook parses JSON without importing `json`; it must answer exactly as json.loads."""
    assert _json_outcome(loads, text) == _json_outcome(json.loads, text)
