"""Agent options that a DaemonSet or a hand could set wrong: refused before any pass runs,
with one line and a non-zero exit, and nothing written under the host root or here."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ctk.cli.app import main


def _agent(args: list[str]) -> tuple[int, str]:
    """Run `ctk agent ARGS` in this process: its exit code and what it wrote on stderr."""
    import contextlib
    import io

    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code = main(["agent", *args])
    return code, err.getvalue()


@pytest.mark.parametrize(
    ("args", "env", "error"),
    [
        pytest.param(["--interval", "nan"], "", "--interval nan: must be more than 0", id="nan"),
        pytest.param(
            [], "nan", "--interval nan: must be more than 0", id="nan-from-the-environment"
        ),
        pytest.param(["--interval", "inf"], "", "--interval inf: must be more than 0", id="inf"),
        pytest.param(["--interval", "86400.5"], "", "at most 86400 seconds", id="above-a-day"),
        pytest.param(["--interval", "0"], "", "--interval 0: must be", id="zero"),
        pytest.param(["--interval", "-1"], "", "--interval -1: must be", id="negative"),
    ],
)
def test_intervals_that_cannot_be_waited_are_refused(
    args: list[str], env: str, error: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if env:
        monkeypatch.setenv("CTK_AGENT_INTERVAL", env)
    code, err = _agent(["--host-root", str(tmp_path), "--once", *args])
    assert code == 2
    assert err.startswith("error: ")
    assert error in err.splitlines()[0]
    assert "internal error" not in err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("host_root", "error"),
    [
        pytest.param("", "error: --host-root is empty", id="empty"),
        pytest.param("host", "error: --host-root 'host': must be an absolute path", id="relative"),
        pytest.param(".", "error: --host-root '.': must be an absolute path", id="dot"),
    ],
)
def test_a_host_root_that_is_not_absolute_is_refused(
    host_root: str, error: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "host").mkdir()
    monkeypatch.chdir(tmp_path)
    code, err = _agent(["--host-root", host_root, "--once"])
    assert code != 0
    assert err.splitlines()[0] == error or err.startswith(error)
    assert sorted(os.listdir(tmp_path)) == ["host"]
    assert list((tmp_path / "host").iterdir()) == []
