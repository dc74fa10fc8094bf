"""The hook program named in the spec must exist: found like users expect, or checked.

QA 4: a default `<dir of sys.executable>/ctk-hook` that did not exist made Podman fail every
container (`fork/exec .../ctk-hook: no such file or directory`); issue 9: one inside a venv or
pyenv broke every container once that Python was upgraded, so the default is nvidia-cdi-hook or
the native hook `ctk install` put at a stable path, never a program inside a Python environment.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from ctk.cli.app import main
from ctk.errors import CtkError
from ctk.host.hook_program import NO_HOOK_HINT, default_hook_path, unstable_place
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
            {"path/nvidia-cdi-hook": True, "usr/local/libexec/ctk/ctk-hook": True},
            "{tmp}/path/nvidia-cdi-hook",
            id="nvidia-cdi-hook-on-path-first",
        ),
        pytest.param(
            {"path/nvidia-cdi-hook": False, "usr/local/libexec/ctk/ctk-hook": True},
            "{tmp}/usr/local/libexec/ctk/ctk-hook",
            id="else-the-installed-native-hook",
        ),
        pytest.param(
            {"venv/bin/nvidia-cdi-hook": True, "venv/pyvenv.cfg": True, "venv/bin/ctk-hook": True},
            None,
            id="never-one-inside-a-venv",
        ),
        pytest.param({"venv/bin/ctk-hook": True, "path/ctk-hook": True}, None, id="nothing-found"),
    ],
)
def test_default_hook_path(
    files: dict[str, bool | str],
    expected: str | None,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name, kind in files.items():
        _program(tmp_path / name, executable=kind is True)
    (tmp_path / "path").mkdir(exist_ok=True)
    path = [tmp_path / "path", tmp_path / "venv/bin"]
    monkeypatch.setenv("PATH", ":".join(map(str, path)))
    monkeypatch.setattr(sys, "executable", str(tmp_path / "venv/bin/python"))
    installed = str(tmp_path / "usr/local/libexec/ctk/ctk-hook")
    monkeypatch.setattr("ctk.host.hook_program.INSTALLED_HOOKS", (installed,))
    if expected is not None:
        assert default_hook_path() == expected.format(tmp=tmp_path)
        return
    with pytest.raises(CtkError) as caught:
        default_hook_path()
    assert (caught.value.message, caught.value.hint) == (
        "no hook program found: nvidia-cdi-hook is not on PATH and the native ctk-hook is not "
        f"installed ({installed})",
        NO_HOOK_HINT,
    )


def test_installed_hook_is_found_under_the_driver_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ctk in a container, the host at --driver-root: the spec names the host's path."""
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    _program(tmp_path / "host/usr/local/libexec/ctk/ctk-hook")
    assert default_hook_path(tmp_path / "host") == "/usr/local/libexec/ctk/ctk-hook"


def test_unstable_places() -> None:
    assert unstable_place(sys.executable) is not None  # this interpreter's own environment
    assert unstable_place("/root/bin/nvidia-cdi-hook") == "is inside a home directory"
    assert unstable_place("/usr/bin/nvidia-cdi-hook") is None
    assert unstable_place("/usr/local/libexec/ctk/ctk-hook") is None


@pytest.mark.integration
def test_no_hook_program_fails_and_keeps_the_output(
    fake_node: MakeNode,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    node = fake_node("workstation")
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.setattr("ctk.host.hook_program.INSTALLED_HOOKS", (f"{tmp_path}/nowhere/ctk-hook",))
    output = tmp_path / "nvidia.yaml"
    output.write_bytes(b"# the old spec\n")
    assert main(["cdi", "generate", "--driver-root", str(node.root), "-o", str(output)]) == 1
    assert capsys.readouterr() == (
        "",
        "error: no hook program found: nvidia-cdi-hook is not on PATH and the native ctk-hook "
        f"is not installed ({tmp_path}/nowhere/ctk-hook)\n"
        f"hint: {NO_HOOK_HINT}\n",
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


@pytest.mark.integration
def test_a_generated_spec_never_names_a_path_inside_sys_prefix(
    fake_node: MakeNode,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Hook programs inside the running Python's environment (a venv's nvidia-cdi-hook, ctk-hook
    beside the interpreter) are passed over for the installed native hook; given with
    --hook-path one is used, with a warning."""
    node = fake_node("workstation")
    venv = tmp_path / "venv"
    _program(venv / "pyvenv.cfg")
    _program(venv / "bin/nvidia-cdi-hook")
    _program(venv / "bin/ctk-hook")
    monkeypatch.setattr(sys, "prefix", str(venv))
    monkeypatch.setenv("PATH", str(venv / "bin"))
    installed = tmp_path / "usr/local/libexec/ctk/ctk-hook"
    _program(installed)
    monkeypatch.setattr("ctk.host.hook_program.INSTALLED_HOOKS", (str(installed),))
    args = ["cdi", "generate", "--driver-root", str(node.root), "--format=json"]
    assert main(args) == 0
    out, err = capsys.readouterr()
    assert str(venv) not in out and str(sys.base_prefix) not in out
    assert f'"path":"{installed}"' in out
    assert err == ""
    hook = venv / "bin/nvidia-cdi-hook"
    assert main([*args, "--hook-path", str(hook)]) == 0
    out, err = capsys.readouterr()
    assert f'"path":"{hook}"' in out
    assert err == (
        f"warning: hook program {hook} is inside the Python environment {venv}; containers "
        "given devices from this spec fail to start once it changes or goes (run `ctk install` "
        "and use its ctk-hook)\n"
    )
