"""The gatherer's path primitives: an unreadable directory is not a crash, and not 'missing'."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from ctk.host.facts.gatherer import Gatherer
from ctk.host.root import HostRoot


@pytest.fixture
def locked_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A root whose var/lib/kubelet cannot be entered (EACCES simulated: tests run as root)."""
    (tmp_path / "var/lib/kubelet").mkdir(parents=True)
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc/hostname").write_text("node\n")
    real_readlink = os.readlink

    def readlink(path: str | os.PathLike[str]) -> str:
        if str(path).startswith(str(tmp_path / "var/lib/kubelet")):
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        return real_readlink(path)

    monkeypatch.setattr(os, "readlink", readlink)
    return tmp_path


def test_unreadable_directory(locked_root: Path) -> None:
    gatherer = Gatherer(HostRoot(locked_root))
    assert gatherer.host("/var/lib/kubelet/config.yaml") is None
    assert gatherer.text("/var/lib/kubelet/config.yaml") is None
    assert gatherer.readable("/var/lib/kubelet/config.yaml") is False
    assert gatherer.readable("/etc/hostname") is True
    assert gatherer.readable("/etc/missing") is None
    assert gatherer.text("/etc/hostname") == "node\n"
