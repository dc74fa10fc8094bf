"""The shipped udev rule and systemd unit call a ctk command line that exists."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from ctk.cli.app import main

UNITS = Path(__file__).resolve().parents[2] / "ctk" / "data" / "units"  # what ctk install writes


def command_of(path: Path) -> list[str]:
    text = path.read_text()
    found = re.search(r'RUN\+="([^"]+)"', text) or re.search(r"^ExecStart=(.+)$", text, re.M)
    assert found is not None
    return shlex.split(found.group(1))


@pytest.mark.parametrize(
    "name",
    [
        pytest.param("71-ctk-dev-char.rules", id="udev-rule"),
        pytest.param("ctk-dev-char-symlinks.service", id="systemd-unit"),
    ],
)
def test_packaged_command_is_valid(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = command_of(UNITS / name)
    assert argv == [
        "@CTK@",
        "system",
        "create-dev-char-symlinks",
        "--create-device-nodes",
    ]
    # parsed for real (a wrong flag would exit 2) against a root whose driver is not loaded
    (tmp_path / "proc").mkdir()
    (tmp_path / "proc/devices").write_text("Character devices:\n  1 mem\n")
    assert main([*argv[1:], "--dry-run", "--driver-root", str(tmp_path)]) == 1
    assert capsys.readouterr().err.splitlines()[0] == (
        f"error: no NVIDIA driver loaded: {tmp_path}/proc/devices lists no nvidia major"
    )
