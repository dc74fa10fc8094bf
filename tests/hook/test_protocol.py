"""The OCI hook protocol and the command line: bad input is one line on stderr, nothing changed."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.hook.bundles import make_bundle, run_hook, snapshot
from tests.hook.native import hook_binary, run_native

REPO = Path(__file__).resolve().parents[2]


def main(argv: list[str]) -> int:
    """The hook program run black-box (stdin: a test's sys.stdin stand-in, else empty)."""
    return run_native(argv)


@pytest.mark.parametrize(
    ("stdin", "message"),
    [
        pytest.param(
            "",
            "container state on stdin: empty; an OCI runtime passes the container state here",
            id="empty",
        ),
        pytest.param(
            '{"bundle": ',
            "container state on stdin: not valid JSON: Expecting value (line 1, column 12)",
            id="truncated-json",
        ),
        pytest.param(
            "{bad",
            "container state on stdin: not valid JSON: Expecting property name enclosed in"
            " double quotes (line 1, column 2)",
            id="unquoted-key",
        ),
        pytest.param(
            "[1]",
            "container state on stdin: not an OCI container state (expected a JSON object)",
            id="not-object",
        ),
        pytest.param('{"id": "c1"}', "container state has no 'bundle' path", id="no-bundle"),
        pytest.param(
            '{"bundle": "{tmp}/nowhere"}',
            "{tmp}/nowhere/config.json: cannot read the bundle's config: No such file or directory",
            id="missing-bundle",
        ),
    ],
)
def test_bad_state_is_one_line(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    stdin: str,
    message: str,
) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(stdin.replace("{tmp}", str(tmp_path))))
    assert main(["create-symlinks", "--link", "a::/b"]) == 1
    assert (
        capsys.readouterr().err
        == f"ctk-hook create-symlinks: error: {message.replace('{tmp}', str(tmp_path))}\n"
    )
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("config", "message"),
    [
        pytest.param(
            "{",
            "{b}/config.json: not valid JSON: Expecting property name enclosed in double quotes"
            " (line 1, column 2)",
            id="bad-config",
        ),
        pytest.param(
            '{"root": {path: "x"}}',
            "{b}/config.json: not valid JSON: Expecting property name enclosed in double quotes"
            " (line 1, column 11)",
            id="unquoted-nested-key",
        ),
        pytest.param('{"root": {}}', "{b}/config.json: has no root.path", id="no-root-path"),
        pytest.param(
            '{"root": {"path": "/"}}',
            "{b}/config.json: root.path is the host's /; refusing to change it",
            id="host-root",
        ),
        pytest.param(
            '{"root": {"path": "missing"}}',
            "{b}/missing: the container root (root.path) is not a directory",
            id="missing-rootfs",
        ),
    ],
)
def test_bad_bundle_config(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    config: str,
    message: str,
) -> None:
    bundle = make_bundle(tmp_path)
    (bundle.path / "config.json").write_text(config)
    before = snapshot(tmp_path)
    assert run_hook(monkeypatch, bundle, "create-symlinks", "--link", "a::/b") == 1
    assert (
        capsys.readouterr().err
        == f"ctk-hook create-symlinks: error: {message.format(b=bundle.path)}\n"
    )
    assert snapshot(tmp_path) == before


def test_absolute_root_path_and_state_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bundle = make_bundle(tmp_path, root_path=str(tmp_path / "bundle/rootfs"))
    state = tmp_path / "state.json"
    state.write_text(bundle.state)
    assert (
        main(["--debug", "create-symlinks", "--container-spec", str(state), "--link", "a::/etc/b"])
        == 0
    )
    assert (bundle.rootfs / "etc/b").readlink() == Path("a")
    assert capsys.readouterr() == ("", "")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        pytest.param(
            ["bogus"],
            "unknown command 'bogus' (one of: create-symlinks, update-ldcache, chmod,"
            " enable-cuda-compat, update-application-profile, disable-device-node-modification)",
            id="unknown-command",
        ),
        pytest.param(["chmod", "--mode"], "chmod: option --mode needs a value", id="missing-value"),
        pytest.param(["chmod", "--nope", "1"], "chmod: unknown option --nope", id="unknown-option"),
        pytest.param(
            ["chmod", "--mode", "1", "--mode=2"],
            "chmod: option --mode given more than once",
            id="repeated",
        ),
        pytest.param(["chmod", "stray"], "chmod: unexpected argument 'stray'", id="positional"),
    ],
)
def test_usage_errors(capsys: pytest.CaptureFixture[str], argv: list[str], message: str) -> None:
    assert main(argv) == 2
    assert capsys.readouterr() == ("", f"ctk-hook: error: {message} (see ctk-hook --help)\n")


def test_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["update-ldcache", "--help"]) == 0
    out = capsys.readouterr().out
    assert (
        out.splitlines()[0]
        == "usage: ctk-hook update-ldcache [-h] [--folder DIR] [--ldconfig-path P]"
    )
    assert main([]) == 2
    assert capsys.readouterr().out.splitlines()[0] == "usage: ctk-hook [-h] [--debug] COMMAND ..."


def test_ctk_hook_runs_the_same_code(tmp_path: Path) -> None:
    """`ctk hook` replaces itself by the native program: same arguments, same stdin."""
    bundle = make_bundle(tmp_path)
    result = subprocess.run(
        [sys.executable, "-c", "from ctk.cli.app import main; raise SystemExit(main())",
         "hook", "create-symlinks", "--link", "a::/etc/b"],
        input=bundle.state, capture_output=True, text=True, cwd=REPO, check=False,
    )  # fmt: skip
    assert (result.returncode, result.stderr) == (0, "")
    assert (bundle.rootfs / "etc/b").readlink() == Path("a")


def test_a_hook_run_needs_no_interpreter(tmp_path: Path) -> None:
    """Start-up is the hook's cost, and nodes without Python must run it: the program is one
    statically linked file (no ELF interpreter, so no shared library and no Python) and runs with
    an empty environment."""
    program = hook_binary()
    header = program.read_bytes()
    assert header[:4] == b"\x7fELF"
    assert b"/ld-linux" not in header and b"libc.so" not in header
    readelf = subprocess.run(
        ["readelf", "-l", str(program)], capture_output=True, text=True, check=False
    )
    if readelf.returncode == 0:
        assert "INTERP" not in readelf.stdout
    bundle = make_bundle(tmp_path)
    result = subprocess.run(
        [str(program), "create-symlinks", "--link", "a::/etc/b"],
        input=bundle.state, capture_output=True, text=True, env={}, cwd="/", check=False,
    )  # fmt: skip
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")
    assert (bundle.rootfs / "etc/b").readlink() == Path("a")
    assert os.path.getsize(program) < 8 << 20


@pytest.mark.parametrize(
    ("stdin", "message"),
    [
        pytest.param(
            "{bad",
            "Expecting property name enclosed in double quotes (line 1, column 2)",
            id="unquoted-key",
        ),
        pytest.param('{"a": 1 "b"}', "Expecting ',' delimiter (line 1, column 9)", id="no-comma"),
        pytest.param(
            "\ufeff{}", "Unexpected UTF-8 BOM (decode using utf-8-sig) (line 1, column 1)", id="bom"
        ),
    ],
)
def test_bad_json_in_a_fresh_process(stdin: str, message: str) -> None:
    """The hook's JSON reader names problems as Python's json does, position in characters."""
    result = subprocess.run(
        [str(hook_binary()), "chmod"], input=stdin, capture_output=True, text=True, check=False
    )
    assert (result.returncode, result.stderr) == (
        1,
        f"ctk-hook chmod: error: container state on stdin: not valid JSON: {message}\n",
    )


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "huge"])
def test_config_json_that_is_not_a_small_file_is_refused_at_once(tmp_path: Path, kind: str) -> None:
    """A FIFO as config.json (or --container-spec) never blocks the hook; /dev/zero or a huge
    file is not read into memory."""
    bundle = make_bundle(tmp_path)
    config = bundle.path / "config.json"
    config.unlink()
    if kind == "fifo":
        os.mkfifo(config)
        reason = "Not a regular file"
    elif kind == "dev-zero":
        config.symlink_to("/dev/zero")
        reason = "Not a regular file"
    else:
        with config.open("wb") as handle:
            handle.truncate(64 << 20)
        reason = "Larger than 16 MiB"
    result = subprocess.run(
        [str(hook_binary()), "create-symlinks", "--link", "a::/b"],
        input=bundle.state, capture_output=True, text=True, timeout=10, check=False,
    )  # fmt: skip
    assert (result.returncode, result.stderr) == (
        1,
        f"ctk-hook create-symlinks: error: {config}: cannot read the bundle's config: {reason}\n",
    )
    state = tmp_path / "state"
    os.mkfifo(state)
    result = subprocess.run(
        [str(hook_binary()), "chmod", "--container-spec", str(state)],
        capture_output=True, text=True, timeout=10, check=False,
    )  # fmt: skip
    assert result.stderr == (
        f"ctk-hook chmod: error: {state}: cannot read container state: Not a regular file\n"
    )


def test_version() -> None:
    result = subprocess.run(
        [str(hook_binary()), "--version"], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0
    assert result.stdout.startswith("ctk-hook version ")
