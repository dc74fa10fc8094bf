"""Atomic writes keep mode, owner, symlinks and (on request) a backup."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
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


@pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("setpriv") is None,
    reason="needs root and setpriv to run as a user that a directory denies",
)
def test_write_target_and_locked_in_a_directory_that_denies_entry(tmp_path: Path) -> None:
    """is_symlink() raises PermissionError there: it must be a CtkError naming the path."""
    locked = tmp_path / "closed" / "config.toml"
    locked.parent.mkdir(mode=0o700)
    locked.write_text("x\n")
    code = (
        "import sys\nfrom pathlib import Path\nfrom ctk.errors import CtkError\n"
        "from ctk.host import files\n"
        "for call in (files.write_target, lambda p: files.locked(p).__enter__()):\n"
        "    try:\n        call(Path(sys.argv[1]))\n"
        "    except CtkError as exc:\n        print(exc.message, '|', exc.hint)\n"
    )
    as_nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
    repo = Path(__file__).resolve().parents[1]
    probe = [*as_nobody, sys.executable, "-c", "import ctk.host.files"]
    if subprocess.run(probe, cwd=repo, capture_output=True, timeout=60, check=False).returncode:
        pytest.skip(f"{sys.executable} cannot run as user nobody")
    result = subprocess.run(
        [*as_nobody, sys.executable, "-c", code, str(locked)],
        capture_output=True,
        text=True,
        cwd=repo,
        timeout=60,
        check=False,
    )
    line = (
        f"{locked}: cannot read: Permission denied | "
        "run as root (sudo) or choose a path you can access\n"
    )
    assert (result.returncode, result.stdout) == (0, line * 2)


def test_locked_below_a_file_defers_to_the_read(tmp_path: Path) -> None:
    """A path below a regular file cannot exist: no lock, and reading it gives the reason."""
    (tmp_path / "file").write_text("")
    path = tmp_path / "file" / "config.toml"
    with files.locked(path), pytest.raises(CtkError) as info:
        files.read_text(path)
    assert (info.value.message, info.value.hint) == (
        f"{path}: cannot read: Not a directory",
        "a part of this path is a file, not a directory: check the path",
    )
