"""`ctk runtime configure` imports only what it uses (issue 13): measured with -X importtime."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def imported(tmp_path: Path, *args: str) -> set[str]:
    """The modules a `ctk` run imports (run in a fresh interpreter, as a user runs it)."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "ctk.cli.app", *args],
        capture_output=True,
        text=True,
        check=False,
        cwd=tmp_path,
        env=env,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    return {
        line.rsplit("|", 1)[1].strip()
        for line in result.stderr.splitlines()
        if line.startswith("import time:") and "|" in line
    }


def forbidden(modules: set[str], *prefixes: str) -> list[str]:
    return sorted(m for m in modules if any(m == p or m.startswith(p + ".") for p in prefixes))


@pytest.mark.parametrize(
    ("runtime", "config", "text", "not_loaded"),
    [
        pytest.param(
            "docker",
            "daemon.json",
            '{"debug": true}\n',
            (
                "tomlkit",
                "ctk.runtime_config.tomledit",
                "ctk.runtime_config.containerd",
                "ctk.doctor",
                "ctk.cli.doctor",
                "ctk.cdi",
            ),
            id="docker",
        ),
        pytest.param(
            "containerd",
            "config.toml",
            "version = 2\n",
            (
                "ctk.runtime_config.docker",
                "ctk.runtime_config.jsonedit",
                "ctk.doctor",
                "ctk.cli.doctor",
                "ctk.cdi",
                "yaml",
                "jsonschema",
            ),
            id="containerd",
        ),
    ],
)
def test_runtime_configure_imports_only_what_it_uses(
    *, runtime: str, config: str, text: str, not_loaded: tuple[str, ...], tmp_path: Path
) -> None:
    (tmp_path / config).write_text(text)
    modules = imported(
        tmp_path,
        "runtime",
        "configure",
        f"--runtime={runtime}",
        "--config",
        config,
        "--drop-in-config=" if runtime != "docker" else "--dry-run",
        "--dry-run",
    )
    assert "ctk.runtime_config.editor" in modules  # the run did reach the planner
    assert forbidden(modules, *not_loaded) == []
