"""A full or closed standard output is the user's condition, not a bug in ctk: every command
says so in one line with a hint and exits 1 (never "internal error", exit 3, or a traceback)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

COMMANDS = [
    pytest.param(["--version"], id="version"),
    pytest.param(["--help"], id="help"),
    pytest.param(["cdi", "--help"], id="group-help"),
    pytest.param(["doctor", "--json", "--root", "{root}"], id="doctor-json"),
    pytest.param(["cdi", "list", "--spec-dir", "{specs}"], id="cdi-list"),
    pytest.param(["cdi", "list", "--json", "--spec-dir", "{specs}"], id="cdi-list-json"),
    pytest.param(["cdi", "validate", "--spec-dir", "{specs}"], id="cdi-validate"),
    pytest.param(
        ["runtime", "configure", "--runtime=docker", "--dry-run", "--config", "{root}/daemon.json"],
        id="configure-dry-run",
    ),
]


SPECS = Path(__file__).resolve().parent / "fixtures/specs/run/cdi"  # one valid spec

# A Python wrapper (no shell) that closes descriptor 1, then becomes the command it is given.
CLOSE_STDOUT = [
    sys.executable,
    "-c",
    "import os, sys; os.close(1); os.execv(sys.argv[1], sys.argv[1:])",
]


def _ctk(
    args: list[str], root: Path, stdout: int, wrapper: tuple[str, ...] = ()
) -> subprocess.CompletedProcess[str]:
    argv = [arg.replace("{root}", str(root)).replace("{specs}", str(SPECS)) for arg in args]
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    return subprocess.run(
        [*wrapper, sys.executable, "-m", "ctk.cli.app", *argv],
        stdout=stdout,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full here")
@pytest.mark.parametrize("args", COMMANDS)
def test_a_full_output_is_one_line_and_exit_1(args: list[str], tmp_path: Path) -> None:
    with open("/dev/full", "w") as full:
        done = _ctk(args, tmp_path, full.fileno())
    errors = [line for line in done.stderr.splitlines() if line.startswith(("error:", "hint:"))]
    assert (done.returncode, errors) == (
        1,
        [
            "error: cannot write standard output: No space left on device",
            "hint: free space on the device it goes to, or write elsewhere",
        ],
    )
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "daemon.json").exists()


@pytest.mark.parametrize("args", COMMANDS)
def test_a_closed_output_is_one_line_and_exit_1(args: list[str], tmp_path: Path) -> None:
    done = _ctk(args, tmp_path, subprocess.DEVNULL, tuple(CLOSE_STDOUT))
    errors = [line for line in done.stderr.splitlines() if line.startswith(("error:", "hint:"))]
    assert (done.returncode, errors) == (
        1,
        [
            "error: cannot write standard output: standard output is closed",
            "hint: check where it goes, or write elsewhere",
        ],
    )
    assert "Traceback" not in done.stderr


def test_an_error_that_names_a_file_is_not_blamed_on_the_output(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """An EIO reading a named file is not a failing standard output: it stays an internal error
    (ctk's own file I/O turns such errors into CtkError before they get here)."""
    import errno

    from ctk.cli import app

    def fails(_args: list[str]) -> int:
        raise OSError(errno.EIO, "Input/output error", "/etc/cdi/nvidia.yaml")

    monkeypatch.setattr(app, "_run", fails)
    assert app.main(["cdi", "list"]) == app.EXIT_INTERNAL
    assert capsys.readouterr().err.startswith("error: internal error (OSError: ")
