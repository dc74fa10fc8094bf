"""Atomic writes keep mode, owner, symlinks and (on request) a backup."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ctk.errors import CtkError
from ctk.host import files


def test_write_new_file_mode(tmp_path: Path) -> None:
    target = tmp_path / "a" / "b.yaml"
    files.write_atomic(target, "x\n", make_parents=True)
    assert target.read_text() == "x\n"
    assert target.stat().st_mode & 0o777 == 0o644


def test_write_keeps_mode_and_backup(tmp_path: Path) -> None:
    target = tmp_path / "config.toml"
    target.write_text("old\n")
    target.chmod(0o600)
    backup = files.write_atomic(target, "new\n", backup=True)
    assert backup == tmp_path / "config.toml.bak"
    assert backup.read_text() == "old\n"
    assert target.read_text() == "new\n"
    assert target.stat().st_mode & 0o777 == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["config.toml", "config.toml.bak"]


def test_write_through_symlink(tmp_path: Path) -> None:
    real = tmp_path / "real.json"
    real.write_text("{}\n")
    link = tmp_path / "daemon.json"
    os.symlink("real.json", link)
    files.write_atomic(link, '{"a": 1}\n')
    assert link.is_symlink()
    assert real.read_text() == '{"a": 1}\n'


def test_directory_is_clear_error(tmp_path: Path) -> None:
    with pytest.raises(CtkError, match="Is a directory"):
        files.write_atomic(tmp_path, "x")
    with pytest.raises(CtkError, match="cannot read"):
        files.read_text(tmp_path)


def test_missing(tmp_path: Path) -> None:
    assert files.read_text(tmp_path / "nope", missing_ok=True) is None
    with pytest.raises(CtkError, match="No such file"):
        files.read_text(tmp_path / "nope")


def test_not_utf8(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_bytes(b"\xff\xfe")
    with pytest.raises(CtkError, match="not UTF-8"):
        files.read_text(bad)


def test_path_under_a_file(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(CtkError) as caught:
        files.read_text(tmp_path / "file" / "config.toml")
    assert caught.value.message == f"{tmp_path}/file/config.toml: cannot read: Not a directory"
    assert caught.value.hint == "a part of this path is a file, not a directory: check the path"
