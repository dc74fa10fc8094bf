"""Fixtures for the generate tests: the fake driver (tests/fake_nvml) and a hook program."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.fake_nvml.fixtures import fake_node, fake_nvml_library

__all__ = ["fake_node", "fake_nvml_library", "hook_on_path", "hook_program"]


@pytest.fixture(scope="session")
def hook_program(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An executable `nvidia-cdi-hook` (it does nothing) for `--hook-path`."""
    hook = tmp_path_factory.mktemp("hook-bin") / "nvidia-cdi-hook"
    hook.write_text("#!/bin/sh\nexit 0\n")
    hook.chmod(0o755)
    return hook


@pytest.fixture(autouse=True)
def hook_on_path(hook_program: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Put `hook_program` first on PATH, so that the default hook program does not depend on
    what this machine has installed (nvidia-cdi-hook, a ctk-hook on PATH or next to Python)."""
    monkeypatch.setenv("PATH", f"{hook_program.parent}:{os.environ['PATH']}")
    return hook_program
