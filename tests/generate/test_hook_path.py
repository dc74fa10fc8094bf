"""The hook program named in the spec must exist: found like users expect, or checked.

QA 4: a default `<dir of sys.executable>/ctk-hook` that did not exist made Podman fail every
container (`fork/exec .../ctk-hook: no such file or directory`).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from ctk.cli.app import main
from ctk.cli.cdi_generate import default_hook_path
from ctk.errors import CtkError
from tests.fake_nvml import FakeNode

MakeNode = Callable[[str], FakeNode]


def _program(path: Path, *, executable: bool = True) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\nexit 0\n")
    path.chmod(0o755 if executable else 0o644)


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        pytest.param(
            {"path/nvidia-cdi-hook": True, "venv/bin/ctk-hook": True},
            "{tmp}/path/nvidia-cdi-hook",
            id="nvidia-cdi-hook-on-path-first",
        ),
        pytest.param(
            {"path/nvidia-cdi-hook": False, "venv/bin/ctk-hook": True, "path/ctk-hook": True},
            "{tmp}/venv/bin/ctk-hook",
            id="ctk-hook-next-to-python-venv-or-pipx",
        ),
        pytest.param(
            {"venv/bin/ctk-hook": False, "user/bin/ctk-hook": True, "path/ctk-hook": "link"},
            "{tmp}/user/bin/ctk-hook",
            id="ctk-hook-on-path-pip-user-real-path",
        ),
        pytest.param({"venv/bin/ctk-hook": False}, None, id="nothing-found"),
    ],
)
def test_default_hook_path(
    files: dict[str, bool | str],
    expected: str | None,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name, kind in files.items():
        if kind == "link":
            (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / name).symlink_to(tmp_path / "user/bin/ctk-hook")
        else:
            _program(tmp_path / name, executable=kind is True)
    (tmp_path / "path").mkdir(exist_ok=True)
    monkeypatch.setenv("PATH", str(tmp_path / "path"))
    python = tmp_path / "venv/bin/python"
    monkeypatch.setattr(sys, "executable", str(python))
    if expected is not None:
        assert default_hook_path() == expected.format(tmp=tmp_path)
        return
    with pytest.raises(CtkError) as caught:
        default_hook_path()
    assert (caught.value.message, caught.value.hint) == (
        "no hook program found: neither nvidia-cdi-hook nor ctk-hook is on PATH, "
        f"and there is no ctk-hook next to {python}",
        "pass --hook-path with the absolute path of nvidia-cdi-hook or ctk-hook on the host, "
        "install ctk so that its ctk-hook script is on PATH, or --disable-hook all",
    )


@pytest.mark.integration
def test_no_hook_program_fails_and_keeps_the_output(
    fake_node: MakeNode,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    node = fake_node("workstation")
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.setattr(sys, "executable", str(tmp_path / "venv/bin/python"))
    output = tmp_path / "nvidia.yaml"
    output.write_bytes(b"# the old spec\n")
    assert main(["cdi", "generate", "--driver-root", str(node.root), "-o", str(output)]) == 1
    assert capsys.readouterr() == (
        "",
        "error: no hook program found: neither nvidia-cdi-hook nor ctk-hook is on PATH, and "
        f"there is no ctk-hook next to {tmp_path}/venv/bin/python\n"
        "hint: pass --hook-path with the absolute path of nvidia-cdi-hook or ctk-hook on the "
        "host, install ctk so that its ctk-hook script is on PATH, or --disable-hook all\n",
    )
    assert output.read_bytes() == b"# the old spec\n"
    # without hooks nothing is looked for
    flags = ["--driver-root", str(node.root), "--disable-hook=all", "--format=json"]
    assert main(["cdi", "generate", *flags]) == 0
    assert capsys.readouterr().err == ""


WARNING = (
    "warning: hook program {hook} {problem}; containers given devices from this spec fail to "
    "start until it is installed there"
)


@pytest.mark.integration
@pytest.mark.parametrize(
    ("hook", "flags", "problem"),
    [
        pytest.param(
            "{tmp}/missing/nvidia-cdi-hook",
            [],
            "does not exist on this machine (nor under --driver-root {root})",
            id="missing",
        ),
        pytest.param(
            "{tmp}/plain/nvidia-cdi-hook", [], "is not an executable file", id="not-executable"
        ),
        pytest.param("{tmp}/bin/nvidia-cdi-hook", [], None, id="exists"),
        pytest.param("/usr/local/nvidia/toolkit/nvidia-cdi-hook", [], None, id="under-driver-root"),
        pytest.param(
            "{tmp}/missing/nvidia-cdi-hook", ["--disable-hook=all"], None, id="hooks-disabled"
        ),
    ],
)
def test_given_hook_path_is_checked_on_the_host(
    hook: str,
    flags: list[str],
    problem: str | None,
    *,
    fake_node: MakeNode,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    node = fake_node("workstation")
    _program(tmp_path / "plain/nvidia-cdi-hook", executable=False)
    _program(tmp_path / "bin/nvidia-cdi-hook")
    _program(node.root / "usr/local/nvidia/toolkit/nvidia-cdi-hook")
    path = hook.format(tmp=tmp_path)
    args = ["--driver-root", str(node.root), "--hook-path", path, "--format=json", *flags]
    assert main(["cdi", "generate", *args]) == 0
    out, err = capsys.readouterr()
    expected = WARNING.format(hook=path, problem=problem).format(root=node.root)
    assert err == ("" if problem is None else expected + "\n")
    assert (f'"path":"{path}"' in out) is not bool(flags)
