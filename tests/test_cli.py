"""The entry point: version, help, and the one error handler."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ctk import __version__
from ctk.cli.app import main
from ctk.errors import CtkError


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--version"]) == 0
    assert capsys.readouterr().out == f"ctk {__version__}\n"


def test_help_lists_groups(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    for group in ("cdi", "runtime", "doctor", "system", "hook"):
        assert f" {group} " in out


def test_unknown_command_is_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["frobnicate"]) == 2
    assert capsys.readouterr().err == (
        "error: no such command 'frobnicate'\nhint: run 'ctk --help' for its usage\n"
    )


def test_unknown_option_is_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["cdi", "validate", "--no-such-flag"]) == 2
    err = capsys.readouterr().err
    assert re.fullmatch(
        r"error: no such option: --no-such-flag\n"
        r"hint: run 'ctk cdi validate --help' for its usage\n",
        err,
    ), err


@pytest.mark.parametrize(
    "argv",
    [
        pytest.param(["-v"], id="nvidia-ctk-short-version"),
        pytest.param(["-d", "--version"], id="debug-then-version"),
        pytest.param(["--debug", "-V"], id="long-debug"),
    ],
)
def test_version_spellings(capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    assert main(argv) == 0
    assert capsys.readouterr().out == f"ctk {__version__}\n"


def test_debug_shows_the_traceback(tmp_path: Path) -> None:
    argv = ["runtime", "configure", "--runtime", "docker", "--config", str(tmp_path)]
    assert main(argv) == 1
    with pytest.raises(CtkError):
        main(["-d", *argv])


def test_hook_keeps_its_own_debug_flag(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[list[str]] = []

    def fake_exec(args: list[str]) -> None:
        seen.append(list(args))

    monkeypatch.setattr("ctk.host.hook_program.exec_hook", fake_exec)
    assert main(["hook", "--debug", "chmod", "--mode", "755"]) == 0
    assert seen == [["--debug", "chmod", "--mode", "755"]]
