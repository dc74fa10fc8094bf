"""Runtime tests: the nvidia runtime binary counts as installed unless a test looks for real."""

from __future__ import annotations

import pytest

from ctk.host import engine_files as host_engines

REAL_BINARY_LOOKUP = host_engines.runtime_binary_found


@pytest.fixture(autouse=True)
def _runtime_binary_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    """This machine has no nvidia-container-runtime; most tests are not about that warning."""
    monkeypatch.setattr(host_engines, "runtime_binary_found", lambda *_args, **_kw: True)
