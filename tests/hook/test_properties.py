"""Properties of the native hook, run black-box: no image layout leads a link out of the root,
the links land where the reference rule (`ctk.rootpath`) says, no argv crashes the parser, and
the JSON it reads (the OCI state on stdin, the bundle's config.json) is judged as Python's json
judges it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctk.nvproc import parse_proc_devices
from ctk.rootpath import RootPathError, resolve
from tests.hook.bundles import snapshot
from tests.hook.native import hook_binary

NAMES = st.sampled_from(["a", "b", "etc", "..", ".", "lib", ""])
PATHS = st.lists(NAMES, max_size=6).map("/".join)
TARGETS = st.one_of(PATHS, PATHS.map(lambda p: "/" + p))
LINKS = st.dictionaries(st.sampled_from(["a", "b", "etc", "lib"]), TARGETS.filter(bool), max_size=4)


def hook(*argv: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(hook_binary()), *argv], input=stdin, capture_output=True, text=True, check=False
    )


def one_error_line(result: subprocess.CompletedProcess[str], command: str) -> bool:
    err = result.stderr  # one line, unless a value the input named holds a line break
    return err.startswith(f"ctk-hook {command}: error: ") and err.endswith("\n")


def _layout(tmp: str, links: dict[str, str]) -> tuple[str, str]:
    """A bundle whose root has `sub/` and ``links`` (in / and in sub/); returns (root, state)."""
    bundle = os.path.join(os.path.realpath(tmp), "bundle")
    root = os.path.join(bundle, "rootfs")
    os.makedirs(os.path.join(root, "sub"))
    os.makedirs(os.path.join(tmp, "host/etc"))
    for name, target in links.items():
        os.symlink(target, os.path.join(root, name))
        os.symlink(target, os.path.join(root, "sub", name))
    with open(os.path.join(bundle, "config.json"), "w") as config:
        json.dump({"root": {"path": "rootfs"}}, config)
    return root, json.dumps({"bundle": bundle})


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(links=LINKS, path=TARGETS)
def test_links_land_where_the_rule_says_or_nowhere(links: dict[str, str], path: str) -> None:
    """`create-symlinks` makes the link at the place `ctk.rootpath.resolve` names for its folder,
    or refuses in one line; nothing outside the root changes."""
    with tempfile.TemporaryDirectory() as tmp:
        root, state = _layout(tmp, links)
        outside = snapshot(Path(tmp, "host"))
        link = path.rstrip("/")
        name = link.rpartition("/")[2]
        try:
            folder = resolve(root, link.rpartition("/")[0] or "/")
        except RootPathError:
            folder = None
        expected = os.path.join(folder, name) if folder and name not in ("", ".", "..") else None
        result = hook("create-symlinks", "--link", f"ctk-probe::{path}", stdin=state)
        assert snapshot(Path(tmp, "host")) == outside
        if result.returncode == 0:
            assert expected is not None, result.stderr
            assert os.readlink(expected) == "ctk-probe"
            assert os.path.commonpath([expected, root]) == root
        else:
            assert result.returncode == 1 and one_error_line(result, "create-symlinks")
            assert (
                expected is None
                or os.path.lexists(expected)
                or "not a directory" in (result.stderr)
            ), result.stderr


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(links=LINKS, path=TARGETS)
def test_chmod_never_leaves_the_root(links: dict[str, str], path: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        _, state = _layout(tmp, links)
        outside = snapshot(Path(tmp, "host"))
        result = hook("chmod", "--mode", "700", "--path", path or "/x", stdin=state)
        assert snapshot(Path(tmp, "host")) == outside
        assert result.returncode == 0 or one_error_line(result, "chmod"), result.stderr


ARGS = st.lists(
    st.one_of(
        st.sampled_from(
            ["create-symlinks", "chmod", "--link", "--mode", "--path", "-d", "--help", "=", "--"]
        ),
        st.text(max_size=8).filter(lambda s: "\0" not in s),
    ),
    max_size=6,
)


@settings(max_examples=300, deadline=None)
@given(ARGS)
def test_parse_answers_or_refuses(argv: list[str]) -> None:
    result = hook(*argv)
    assert "internal error" not in result.stderr
    if result.returncode == 2:
        assert result.stderr == "" or (
            result.stderr.startswith("ctk-hook: error: ")
            and result.stderr.endswith(" (see ctk-hook --help)\n")
        )
    else:
        assert result.returncode in (0, 1), result
        assert result.stderr.count("\n") <= 1


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
#: Python 3.13 names a trailing comma; older versions report what follows it instead.
NEWER_MESSAGES = (
    "Illegal trailing comma before end of object",
    "Illegal trailing comma before end of array",
)


def python_verdict(text: str, where: str) -> str | None:
    """The hook's message for ``text`` per Python's json, or None when the JSON is fine."""
    try:
        json.loads(text)
    except json.JSONDecodeError as exc:
        return f"{where}: not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})"
    except RecursionError:
        return "deep"
    return None


def agrees(said: str, expected: str) -> bool:
    """``said`` (the hook) is ``expected`` (Python), allowing 3.13's trailing-comma messages."""
    if said == expected:
        return True
    return sys.version_info < (3, 13) and any(m in said for m in NEWER_MESSAGES)


@settings(max_examples=300, deadline=None)
@given(
    st.one_of(
        JSON_VALUES.map(json.dumps),
        JSONISH,
        JSON_VALUES.map(lambda v: {"bundle": v}).map(json.dumps),
    )
)
def test_state_json_is_judged_as_python_judges_it(text: str) -> None:
    result = hook("chmod", "--mode", "755", stdin=text)
    assert result.returncode == 1 and one_error_line(result, "chmod"), result.stderr
    said = result.stderr.removeprefix("ctk-hook chmod: error: ").rstrip("\n")
    where = "container state on stdin"
    if not text.strip():
        assert said == f"{where}: empty; an OCI runtime passes the container state here"
        return
    verdict = python_verdict(text, where)
    if verdict == "deep":
        return
    if verdict is not None:
        assert agrees(said, verdict), (said, verdict)
        return
    value = json.loads(text)
    if not isinstance(value, dict):
        assert said == f"{where}: not an OCI container state (expected a JSON object)"
    elif not isinstance(value.get("bundle"), str) or not value["bundle"]:
        assert said == "container state has no 'bundle' path"
    else:
        assert "config.json" in said or "root" in said, said


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.one_of(
        JSON_VALUES.map(json.dumps),
        JSONISH,
        JSON_VALUES.map(lambda v: {"root": {"path": v}}).map(json.dumps),
    )
)
def test_config_json_is_judged_as_python_judges_it(text: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        bundle = Path(tmp, "b")
        (bundle / "rootfs").mkdir(parents=True)
        config = bundle / "config.json"
        config.write_text(text)
        result = hook("chmod", "--mode", "755", stdin=json.dumps({"bundle": str(bundle)}))
        said = result.stderr.removeprefix("ctk-hook chmod: error: ").rstrip("\n")
        verdict = python_verdict(text, str(config))
        if verdict == "deep":
            return
        if verdict is not None:
            assert result.returncode == 1 and agrees(said, verdict), (said, verdict)
            return
        value = json.loads(text)
        root = value.get("root") if isinstance(value, dict) else None
        path = root.get("path") if isinstance(root, dict) else None
        if not isinstance(path, str) or not path:
            assert said == f"{config}: has no root.path"
        else:
            assert result.returncode in (0, 1) and result.stderr.count("\n") <= 1, said
