"""The entry point: version, help, and the one error handler."""

from __future__ import annotations

import re

import pytest

from ctk import __version__
from ctk.cli.app import main


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
    assert "No such command 'frobnicate'" in capsys.readouterr().err


def test_unknown_option_is_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["cdi", "validate", "--no-such-flag"]) == 2
    err = capsys.readouterr().err
    assert re.search(r"^Error: No such option:? '?--no-such-flag'?\.?$", err, re.M), err
