"""Test-wide setup: ctk's state directory (undo records, backups) goes under a temporary dir."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest


@pytest.fixture(autouse=True, scope="session")
def _ctk_state_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Keep `ctk runtime` records out of /var/lib/ctk (tests write only under temporary dirs)."""
    old = os.environ.get("CTK_STATE_DIR")
    os.environ["CTK_STATE_DIR"] = str(tmp_path_factory.mktemp("ctk-state"))
    yield
    if old is None:
        del os.environ["CTK_STATE_DIR"]
    else:
        os.environ["CTK_STATE_DIR"] = old


@pytest.fixture(autouse=True, scope="session")
def _native_hook_built() -> None:
    """The package's native hook (ctk/_bin/ctk-hook) exists and is as new as native/ before any
    test runs: `pip install -e .` builds it, a fresh worktree or an edited native/ does not, and
    tests that run ctk as a node would (agent, generate) must find it from their first step."""
    from tests.hook.native import hook_binary

    hook_binary()
