"""Atomic writes keep mode, owner, symlinks and (on request) a backup."""

from __future__ import annotations

import errno
import fcntl
import io
import os
import re
import secrets
import shutil
import signal
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


# --- one way to read: regular files only, bounded --------------------------------------------


def _refused(path: Path, limit: int = files.DEFAULT_LIMIT) -> tuple[str, str | None]:
    with pytest.raises(files.UnreadableFile) as info:
        files.read_bytes(path, limit=limit)
    return info.value.message, info.value.hint


def test_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "config.toml"
    os.mkfifo(fifo)
    signal.alarm(5)  # a read that blocks fails the test instead of hanging it
    try:
        assert _refused(fifo) == (
            f"{fifo}: is a named pipe (FIFO), not a regular file; not read"
            " (reading it would block)",
            "pass the path of a regular file",
        )
    finally:
        signal.alarm(0)


@pytest.mark.parametrize("through_link", [False, True], ids=["device", "link-to-device"])
def test_device_is_refused(tmp_path: Path, through_link: bool) -> None:
    path = Path("/dev/zero")
    if through_link:
        path = tmp_path / "daemon.json"
        os.symlink("/dev/zero", path)
    assert _refused(path) == (
        f"{path}: is a character device, not a regular file; not read",
        "pass the path of a regular file",
    )


def test_sparse_file_over_the_limit_is_refused_unread(tmp_path: Path) -> None:
    big = tmp_path / "config.toml"
    with big.open("wb") as handle:
        handle.truncate(3 << 30)
    assert _refused(big) == (
        f"{big}: file is larger than 16 MiB; not read",
        "check that this is the right file",
    )


def test_limit_holds_where_the_size_is_not_known() -> None:
    """Files in /proc report size 0: the read itself stops one byte past the limit."""
    maps = Path("/proc/self/maps")
    assert os.stat(maps).st_size == 0
    assert _refused(maps, limit=100) == (
        f"{maps}: file is larger than 100 bytes; not read",
        "check that this is the right file",
    )


def test_limit_is_inclusive(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"x" * 100)
    assert files.read_bytes(path, limit=100) == b"x" * 100
    assert _refused(path, limit=99)[0] == f"{path}: file is larger than 99 bytes; not read"


def test_read_stream_is_bounded() -> None:
    assert files.read_stream(io.BytesIO(b"abc"), "<stdin>", limit=3) == b"abc"
    with pytest.raises(CtkError) as info:
        files.read_stream(io.BytesIO(b"abcd"), "<stdin>", limit=3)
    assert info.value.message == "<stdin>: file is larger than 3 bytes; not read"


def test_open_regular_refuses_a_fifo(tmp_path: Path) -> None:
    fifo = tmp_path / "libcuda.so"
    os.mkfifo(fifo)
    with pytest.raises(files.UnreadableFile, match="named pipe"):
        files.open_regular(fifo)


# --- one way to write ------------------------------------------------------------------------


def _tree(top: Path) -> dict[str, bytes | str]:
    """Every entry below ``top``: file bytes, link targets, "dir"."""
    found: dict[str, bytes | str] = {}
    for dirpath, dirnames, filenames in os.walk(top):
        for name in dirnames + filenames:
            path = Path(dirpath, name)
            key = str(path.relative_to(top))
            if path.is_symlink():
                found[key] = "-> " + os.readlink(path)
            elif path.is_dir():
                found[key] = "dir"
            else:
                found[key] = path.read_bytes()
    return found


def test_dangling_symlink_is_not_written_through(tmp_path: Path) -> None:
    link = tmp_path / "daemon.json"
    os.symlink("gone/deeper/daemon.json", link)
    before = _tree(tmp_path)
    with pytest.raises(CtkError) as info:
        files.write_atomic(link, "{}\n", make_parents=True)
    assert (info.value.message, info.value.hint) == (
        f"{link}: is a symlink to {tmp_path}/gone/deeper/daemon.json, which does not exist; "
        "not written",
        "remove the link or create its target first",
    )
    assert _tree(tmp_path) == before


def test_backup_replaces_a_bak_symlink_instead_of_following_it(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    config = tmp_path / "config.toml"
    config.write_text("old\n")
    os.symlink("victim", tmp_path / "config.toml.bak")
    files.write_atomic(config, "new\n", backup=True)
    assert _tree(tmp_path) == {
        "victim": b"precious\n",
        "config.toml": b"new\n",
        "config.toml.bak": b"old\n",
    }


def test_no_follow_replaces_the_link_itself(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    os.symlink("victim", tmp_path / "record")
    files.write_atomic(tmp_path / "record", "r\n", mode=0o600, follow_symlinks=False)
    assert _tree(tmp_path) == {"victim": b"precious\n", "record": b"r\n"}
    assert (tmp_path / "record").stat().st_mode & 0o777 == 0o600


def test_failed_write_creates_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def no_space(src: str, dst: str) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "replace", no_space)
    target = tmp_path / "crio.conf.d" / "sub" / "99-nvidia.toml"
    with pytest.raises(CtkError) as info:
        files.write_atomic(target, "x\n", make_parents=True)
    assert info.value.message == f"{target}: cannot write: No space left on device"
    assert _tree(tmp_path) == {}


def test_temp_file_name_and_flags(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A leading dot and `.ctk-tmp`: no engine loads it; O_EXCL|O_NOFOLLOW: never an old name."""
    opened: list[tuple[str, int]] = []
    real_open = os.open

    def spy(path: str, flags: int, *args: int, **kwargs: int) -> int:
        if flags & os.O_CREAT:
            opened.append((os.path.basename(path), flags))
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", spy)
    files.write_atomic(tmp_path / "config.toml", "x\n")
    [(name, flags)] = opened
    assert re.fullmatch(r"\.config\.toml\.[0-9a-f]{8}\.ctk-tmp", name), name
    assert flags & (os.O_EXCL | os.O_NOFOLLOW) == os.O_EXCL | os.O_NOFOLLOW


def test_temp_file_never_reuses_a_planted_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    os.symlink("victim", tmp_path / ".config.toml.aaaaaaaa.ctk-tmp")
    names = iter(["aaaaaaaa", "bbbbbbbb"])
    monkeypatch.setattr(secrets, "token_hex", lambda n: next(names))
    monkeypatch.setattr(files, "sweep_temp", lambda directory: [])  # the link is not swept here
    files.write_atomic(tmp_path / "config.toml", "x\n")
    assert _tree(tmp_path) == {
        "victim": b"precious\n",
        ".config.toml.aaaaaaaa.ctk-tmp": "-> victim",
        "config.toml": b"x\n",
    }


def test_fsync_file_then_rename_then_fsync_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The order that makes a crash leave the old or the new bytes, never an empty file."""
    target = tmp_path / "config.toml"
    target.write_text("old\n")
    steps: list[tuple[str, ...]] = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd: int) -> None:
        shown = os.readlink(f"/proc/self/fd/{fd}")
        size = os.fstat(fd).st_size if os.path.isfile(shown) else -1
        steps.append(("fsync", re.sub(r"\.[0-9a-f]{8}\.ctk-tmp$", ".*.ctk-tmp", shown), str(size)))
        real_fsync(fd)

    def replace(src: str, dst: str) -> None:
        steps.append(
            ("replace", re.sub(r"\.[0-9a-f]{8}\.ctk-tmp$", ".*.ctk-tmp", str(src)), str(dst))
        )
        real_replace(src, dst)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    files.write_atomic(target, "new text\n")
    tmp = f"{tmp_path}/.config.toml.*.ctk-tmp"
    assert steps == [
        ("fsync", tmp, "9"),
        ("replace", tmp, str(target)),
        ("fsync", str(tmp_path), "-1"),
    ]


def test_write_replaces_the_file_rather_than_rewriting_it(tmp_path: Path) -> None:
    """A reader holding the old file keeps the old bytes: a new inode took the name."""
    target = tmp_path / "config.toml"
    target.write_text("old\n")
    with target.open("rb") as held:
        files.write_atomic(target, "new\n")
        assert held.read() == b"old\n"
        assert os.fstat(held.fileno()).st_ino != target.stat().st_ino
    assert target.read_text() == "new\n"


def test_stale_temp_files_are_swept_live_ones_kept(tmp_path: Path) -> None:
    stale = tmp_path / ".99-nvidia.toml.0123abcd.ctk-tmp"
    stale.write_text("[crio.runtime.runtimes.nvidia]\n")
    live = tmp_path / ".other.toml.89abcdef.ctk-tmp"
    live.write_text("in progress\n")
    foreign = tmp_path / ".99-nvidia.toml.0123abcd.tmp"
    foreign.write_text("not ours\n")
    fd = os.open(live, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        files.write_atomic(tmp_path / "99-nvidia.toml", "x\n")
        assert sorted(p.name for p in tmp_path.iterdir()) == [
            ".99-nvidia.toml.0123abcd.tmp",
            ".other.toml.89abcdef.ctk-tmp",
            "99-nvidia.toml",
        ]
    finally:
        os.close(fd)
    stale.write_text("again\n")
    with files.locked(tmp_path / "99-nvidia.toml"):
        pass
    assert files.remove(tmp_path / "99-nvidia.toml")
    assert sorted(p.name for p in tmp_path.iterdir()) == [".99-nvidia.toml.0123abcd.tmp"]
