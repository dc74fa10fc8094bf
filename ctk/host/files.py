"""Reading and writing the user's files: clear errors, atomic writes, nothing lost.

A write goes to a temporary file in the same directory, is fsynced, takes the old file's mode
and owner, replaces the old file with `os.replace` and fsyncs the directory. A symlink is written
through to its target. `locked()` serialises read-modify-write cycles of concurrent ctk runs.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

from ctk.errors import CtkError


def _os_error(path: Path, action: str, exc: OSError) -> CtkError:
    reason = exc.strerror or str(exc)
    hint = None
    if exc.errno in (errno.EACCES, errno.EPERM):
        hint = "run as root (sudo) or choose a path you can access"
    elif exc.errno == errno.EISDIR:
        hint = "pass the path of a file, not of a directory"
    elif exc.errno == errno.ENOTDIR:
        hint = "a part of this path is a file, not a directory: check the path"
    elif exc.errno == errno.EROFS:
        hint = "the file system is read-only; choose another path"
    return CtkError(f"{path}: cannot {action}: {reason}", hint=hint)


def read_bytes(path: Path, *, missing_ok: bool = False) -> bytes | None:
    """Return the bytes of ``path``; ``None`` when it is missing and ``missing_ok``."""
    try:
        return path.read_bytes()
    except FileNotFoundError as exc:
        if missing_ok:
            return None
        raise _os_error(path, "read", exc) from exc
    except OSError as exc:
        raise _os_error(path, "read", exc) from exc


def read_text(path: Path, *, missing_ok: bool = False) -> str | None:
    """Return the UTF-8 text of ``path``; ``None`` when it is missing and ``missing_ok``."""
    data = read_bytes(path, missing_ok=missing_ok)
    if data is None:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CtkError(
            f"{path}: not UTF-8 text (byte {exc.start})", hint="check that this is the right file"
        ) from exc


def write_target(path: Path) -> Path:
    """Return the file that writing ``path`` really changes (the target of a symlink).

    `CtkError` when ``path`` cannot even be looked at (a directory above it denies entry).
    """
    try:
        link = path.is_symlink()
    except OSError as exc:
        raise _os_error(path, "read", exc) from exc
    return Path(os.path.realpath(path)) if link else path


def write_atomic(
    path: Path,
    data: str | bytes,
    *,
    mode: int | None = None,
    backup: bool = False,
    make_parents: bool = False,
) -> Path | None:
    """Replace ``path`` with ``data`` atomically; return the backup's path if one was made.

    The new file keeps the old one's mode and owner (``mode`` applies to a new file, default
    0644). With ``backup`` the old content is kept as ``<file>.bak``.
    """
    target = write_target(path)
    payload = data.encode("utf-8") if isinstance(data, str) else data
    parent = target.parent
    if make_parents:
        try:
            parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise _os_error(parent, "create directory", exc) from exc
    try:
        old = os.stat(target)
    except FileNotFoundError:
        old = None
    except OSError as exc:
        raise _os_error(target, "read", exc) from exc
    if old is not None and stat.S_ISDIR(old.st_mode):
        raise _os_error(target, "write", IsADirectoryError(errno.EISDIR, "Is a directory"))
    backup_path = None
    if backup and old is not None:
        backup_path = target.with_name(target.name + ".bak")
        _replace(backup_path, read_bytes(target) or b"", old)
    _replace(target, payload, old, mode=0o644 if mode is None else mode)
    return backup_path


def _replace(target: Path, payload: bytes, old: os.stat_result | None, mode: int = 0o644) -> None:
    parent = target.parent
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=parent)
    except OSError as exc:
        raise _os_error(target, "write", exc) from exc
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(payload)
            handle.flush()
            os.fsync(handle.fileno())
        if old is not None:
            os.chmod(tmp, stat.S_IMODE(old.st_mode))
            with contextlib.suppress(PermissionError):
                os.chown(tmp, old.st_uid, old.st_gid)
        else:
            os.chmod(tmp, mode)
        os.replace(tmp, target)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise _os_error(target, "write", exc) from exc
    _fsync_dir(parent)


def _fsync_dir(directory: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def remove(path: Path) -> bool:
    """Delete ``path`` if it exists; return whether it did."""
    try:
        path.unlink()
    except FileNotFoundError:
        return False
    except OSError as exc:
        raise _os_error(path, "remove", exc) from exc
    _fsync_dir(path.parent)
    return True


@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    """Hold an exclusive lock for read-modify-write of ``path`` (on its directory)."""
    directory = write_target(path).parent
    try:
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    except (FileNotFoundError, NotADirectoryError):  # no file to race on; reading it will say why
        yield
        return
    except OSError as exc:
        raise _os_error(directory, "lock", exc) from exc
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)
