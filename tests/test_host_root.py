"""Paths resolved inside a root never lead out of it."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from ctk.host.root import HostRoot, PathEscapeError, PathUnreadableError, resolve_in_root


def test_plain_path(tmp_path: Path) -> None:
    (tmp_path / "etc").mkdir()
    assert resolve_in_root(tmp_path, "/etc/cdi/nvidia.yaml") == tmp_path / "etc/cdi/nvidia.yaml"


def test_absolute_symlink_is_rerooted(tmp_path: Path) -> None:
    (tmp_path / "usr/lib").mkdir(parents=True)
    os.symlink("/etc", tmp_path / "usr/lib/x86_64-linux-gnu")
    got = resolve_in_root(tmp_path, "/usr/lib/x86_64-linux-gnu/libcuda.so")
    assert got == tmp_path / "etc/libcuda.so"


def test_relative_symlink_inside(tmp_path: Path) -> None:
    (tmp_path / "lib64").mkdir()
    os.symlink("lib64", tmp_path / "lib")
    assert resolve_in_root(tmp_path, "/lib/x") == tmp_path / "lib64/x"


def test_dotdot_link_escape_refused(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    os.symlink("../../../../etc", root / "evil")
    with pytest.raises(PathEscapeError, match="leads out of"):
        resolve_in_root(root, "/evil/passwd")


def test_dotdot_in_path_refused(tmp_path: Path) -> None:
    with pytest.raises(PathEscapeError):
        resolve_in_root(tmp_path, "/../etc/passwd")


def test_link_loop_refused(tmp_path: Path) -> None:
    os.symlink("b", tmp_path / "a")
    os.symlink("a", tmp_path / "b")
    with pytest.raises(PathEscapeError, match="too many levels"):
        resolve_in_root(tmp_path, "/a")


def test_hostroot_relative(tmp_path: Path) -> None:
    root = HostRoot(tmp_path)
    assert str(root.relative(root.path("/dev/nvidia0"))) == "/dev/nvidia0"
    assert root.exists("/dev") is False


def test_unreadable_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # As root every directory is readable, so the kernel's EACCES is simulated.
    def readlink(path: str) -> str:
        raise PermissionError(errno.EACCES, "Permission denied", path)

    monkeypatch.setattr(os, "readlink", readlink)
    with pytest.raises(PathUnreadableError) as caught:
        resolve_in_root(tmp_path, "/locked/y")
    assert caught.value.message == f"{tmp_path}/locked: cannot read: Permission denied"
    assert caught.value.hint == "run as root (sudo)"
