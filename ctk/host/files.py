"""Reading and writing the user's files: one way each, clear errors, nothing lost, never a hang.

A read opens the file with ``O_NONBLOCK``, checks with ``fstat`` that it is a regular file (a
FIFO, device or socket is a `CtkError` naming it) and reads at most ``limit`` bytes, so a named
pipe cannot block ctk and ``/dev/zero`` or a 3 GB file cannot exhaust its memory.

A write goes to a temporary file in the same directory (``.<name>.<random>.ctk-tmp``: a leading
dot and a suffix no engine loads, created with ``O_EXCL|O_NOFOLLOW``), is fsynced, takes the old
file's mode and owner, replaces the old file with `os.replace` and fsyncs the directory. A
symlink is written through to its target, unless the target does not exist (then nothing is
created) or the caller asked not to follow links (backups and ctk's own records). Temporary files
left by a killed run are swept from the directory by the next write or lock there. `locked()`
serialises read-modify-write cycles of concurrent ctk runs.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO, Final, Literal, overload

from ctk.errors import CtkError, UsageError

MIB: Final = 1 << 20
DEFAULT_LIMIT: Final = 16 * MIB
"""The most bytes a read returns unless the caller names a limit for its kind of file."""

PROC_LIMIT: Final = 1 * MIB
"""Kernel status files (``/proc``, ``/sys``): a few KiB on any real node."""
LD_CACHE_LIMIT: Final = 64 * MIB
"""``/etc/ld.so.cache``: about 100 KiB even with thousands of libraries."""

TEMP_SUFFIX: Final = ".ctk-tmp"
"""Ends every temporary file ctk writes; no engine loads ``*.ctk-tmp`` and the sweep finds them."""

_CHUNK: Final = 1 << 16
_READ_FLAGS: Final = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
_TEMP_FLAGS: Final = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC

_KINDS: Final = (
    (stat.S_ISFIFO, "a named pipe (FIFO)", " (reading it would block)"),
    (stat.S_ISSOCK, "a socket", ""),
    (stat.S_ISCHR, "a character device", ""),
    (stat.S_ISBLK, "a block device", ""),
)


class UnreadableFile(CtkError):
    """A file that was not read, with the reason alone (callers that list problems use it)."""

    def __init__(self, path: Path, reason: str, *, hint: str | None = None) -> None:
        super().__init__(f"{path}: {reason}", hint=hint)
        self.path = path
        self.reason = reason


def not_regular(mode: int) -> str:
    """Why a file of this ``st_mode`` (not a regular file, not a directory) is not read."""
    kind, why = next(((k, w) for test, k, w in _KINDS if test(mode)), ("a special file", ""))
    return f"is {kind}, not a regular file; not read{why}"


def _size(limit: int) -> str:
    return f"{limit // MIB} MiB" if limit % MIB == 0 else f"{limit} bytes"


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
    elif exc.errno == errno.ENOSPC:
        hint = "the file system is full; free some space and run again"
    elif exc.errno == errno.ELOOP:
        hint = "a symlink in this path leads to itself: check the path"
    if action == "read":
        return UnreadableFile(path, f"cannot read: {reason}", hint=hint)
    return CtkError(f"{path}: cannot {action}: {reason}", hint=hint)


def _refuse_special(path: Path, mode: int) -> None:
    if stat.S_ISDIR(mode):
        hint = "pass the path of a file, not of a directory"
        raise UnreadableFile(path, "cannot read: Is a directory", hint=hint)
    if not stat.S_ISREG(mode):
        raise UnreadableFile(path, not_regular(mode), hint="pass the path of a regular file")


def _too_big(path: Path, limit: int) -> UnreadableFile:
    return UnreadableFile(
        path,
        f"file is larger than {_size(limit)}; not read",
        hint="check that this is the right file",
    )


@overload
def read_bytes(path: Path, *, missing_ok: Literal[False] = False, limit: int = ...) -> bytes: ...
@overload
def read_bytes(path: Path, *, missing_ok: bool, limit: int = ...) -> bytes | None: ...
def read_bytes(path: Path, *, missing_ok: bool = False, limit: int = DEFAULT_LIMIT) -> bytes | None:
    """Return the bytes of the regular file ``path`` (at most ``limit``); ``None`` when missing.

    A FIFO, socket or device is refused without blocking, a larger file without reading it.
    """
    try:
        _refuse_special(path, os.stat(path).st_mode)  # a device is not even opened
        fd = os.open(path, _READ_FLAGS)
    except FileNotFoundError as exc:
        if missing_ok:
            return None
        raise _os_error(path, "read", exc) from exc
    except OSError as exc:
        raise _os_error(path, "read", exc) from exc
    try:
        return _read_fd(path, fd, limit)
    except OSError as exc:
        raise _os_error(path, "read", exc) from exc
    finally:
        os.close(fd)


def _read_fd(path: Path, fd: int, limit: int) -> bytes:
    info = os.fstat(fd)  # the file opened, should it have been swapped after the stat
    _refuse_special(path, info.st_mode)
    if info.st_size > limit:
        raise _too_big(path, limit)
    chunks: list[bytes] = []
    total = 0
    while total <= limit:  # files in /proc report size 0: read until EOF, one byte past limit
        chunk = os.read(fd, min(_CHUNK, limit + 1 - total))
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        total += len(chunk)
    raise _too_big(path, limit)


@overload
def read_text(
    path: Path, *, missing_ok: Literal[False] = False, limit: int = ..., lenient: bool = ...
) -> str: ...
@overload
def read_text(
    path: Path, *, missing_ok: bool, limit: int = ..., lenient: bool = ...
) -> str | None: ...
def read_text(
    path: Path, *, missing_ok: bool = False, limit: int = DEFAULT_LIMIT, lenient: bool = False
) -> str | None:
    """Return the UTF-8 text of ``path`` (see `read_bytes`); ``None`` when missing and allowed.

    ``lenient`` replaces bytes that are not UTF-8 (for kernel and status files) instead of
    refusing the file.
    """
    data = read_bytes(path, missing_ok=missing_ok, limit=limit)
    if data is None:
        return None
    if lenient:
        return data.decode("utf-8", "replace")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UnreadableFile(
            path, f"not UTF-8 text (byte {exc.start})", hint="check that this is the right file"
        ) from exc


def open_regular(path: Path) -> BinaryIO:
    """Open the regular file ``path`` for reading by offset (a FIFO or device is refused)."""
    try:
        _refuse_special(path, os.stat(path).st_mode)
        fd = os.open(path, _READ_FLAGS)
    except OSError as exc:
        raise _os_error(path, "read", exc) from exc
    try:
        _refuse_special(path, os.fstat(fd).st_mode)
    except BaseException:
        os.close(fd)
        raise
    return open(fd, "rb")


def read_stream(stream: BinaryIO, name: str, *, limit: int = DEFAULT_LIMIT) -> bytes:
    """Read a stream (stdin) to its end, at most ``limit`` bytes; ``name`` says what it is."""
    data = stream.read(limit + 1)
    if len(data) > limit:
        raise _too_big(Path(name), limit)
    return data


def write_target(path: Path, *, follow_symlinks: bool = True) -> Path:
    """Return the file that writing ``path`` really changes (the target of a symlink).

    `CtkError` when ``path`` cannot even be looked at (a directory above it denies entry) or is a
    symlink whose target does not exist: writing would create a file the user never named.
    """
    try:
        link = path.is_symlink()
    except OSError as exc:
        raise _os_error(path, "read", exc) from exc
    if not link or not follow_symlinks:
        return path
    target = Path(os.path.realpath(path))
    if not os.path.lexists(target):
        raise CtkError(
            f"{path}: is a symlink to {target}, which does not exist; not written",
            hint="remove the link or create its target first",
        )
    return target


def require_parent(path: Path, option: str) -> None:
    """Refuse an output ``path`` whose directory does not exist (or is not a directory): a
    mistyped directory is not created (`UsageError` naming ``option``)."""
    parent = path.parent
    if not parent.is_dir():
        state = "is not a directory" if os.path.lexists(parent) else "does not exist"
        raise UsageError(
            f"{option} {path}: {parent} {state}",
            hint="create the directory first, or name a file in an existing one",
        )


def write_atomic(
    path: Path,
    data: str | bytes,
    *,
    mode: int | None = None,
    backup: bool = False,
    make_parents: bool = False,
    follow_symlinks: bool = True,
) -> Path | None:
    """Replace ``path`` with ``data`` atomically; return the backup's path if one was made.

    The new file keeps the old one's mode and owner (``mode`` applies to a new file, default
    0644). With ``backup`` the old content is kept as ``<file>.bak`` (an existing ``.bak``
    symlink is replaced, not followed). ``follow_symlinks=False`` replaces a symlink at ``path``
    itself (for ctk's own files). Directories made for the file are removed again on failure.
    """
    target = write_target(path, follow_symlinks=follow_symlinks)
    payload = data.encode("utf-8") if isinstance(data, str) else data
    parent = target.parent
    made = _make_parents(parent) if make_parents else []
    try:
        return _write(target, payload, mode=mode, backup=backup)
    except BaseException:
        _remove_dirs(made)
        raise


def _write(target: Path, payload: bytes, *, mode: int | None, backup: bool) -> Path | None:
    try:
        old = os.lstat(target)
    except FileNotFoundError:
        old = None
    except OSError as exc:
        raise _os_error(target, "read", exc) from exc
    if old is not None and stat.S_ISDIR(old.st_mode):
        raise _os_error(target, "write", IsADirectoryError(errno.EISDIR, "Is a directory"))
    if old is not None and stat.S_ISLNK(old.st_mode):
        old = None  # a link replaced by a file (follow_symlinks=False): the new file's own mode
    if old is not None and not stat.S_ISREG(old.st_mode):  # a FIFO, socket or device
        kind = next((k for test, k, _ in _KINDS if test(old.st_mode)), "a special file")
        raise CtkError(
            f"{target}: is {kind}, not a regular file; not replaced",
            hint="name a regular file (or a new one)",
        )
    sweep_temp(target.parent)
    backup_path = None
    if backup and old is not None:
        backup_path = target.with_name(target.name + ".bak")
        _replace(backup_path, read_bytes(target, limit=max(old.st_size, DEFAULT_LIMIT)), old)
    _replace(target, payload, old, mode=0o644 if mode is None else mode)
    return backup_path


def missing_dirs(directory: Path) -> list[Path]:
    """``directory`` and its parents that do not exist yet, deepest first."""
    missing = []
    for candidate in (directory, *directory.parents):
        if os.path.lexists(candidate):
            break
        missing.append(candidate)
    return missing


def _make_parents(directory: Path) -> list[Path]:
    """Create ``directory`` and missing parents; return those made, deepest first."""
    missing = missing_dirs(directory)
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        _remove_dirs(missing)
        raise _os_error(directory, "create directory", exc) from exc
    return missing


def _remove_dirs(made: list[Path]) -> None:
    for directory in made:  # deepest first; one that is no longer empty stays
        with contextlib.suppress(OSError):
            directory.rmdir()


def _open_temp(target: Path) -> tuple[int, Path]:
    """Create a new temporary file beside ``target`` (never through an existing name or link)."""
    for _ in range(100):
        tmp = target.with_name(f".{target.name}.{os.urandom(4).hex()}{TEMP_SUFFIX}")
        try:
            fd = os.open(tmp, _TEMP_FLAGS, 0o600)
        except FileExistsError:
            continue
        except OSError as exc:
            raise _os_error(target, "write", exc) from exc
        fcntl.flock(fd, fcntl.LOCK_EX)  # held until closed: the sweep skips a live writer's file
        try:
            if os.path.samestat(os.fstat(fd), os.lstat(tmp)):
                return fd, tmp
        except FileNotFoundError:
            pass  # swept between the create and the lock: take another name
        os.close(fd)
    raise CtkError(f"{target}: cannot write: no free temporary file name beside it")


def _replace(target: Path, payload: bytes, old: os.stat_result | None, mode: int = 0o644) -> None:
    parent = target.parent
    fd, tmp = _open_temp(target)
    try:
        try:
            view = memoryview(payload)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
            if old is not None:
                os.fchmod(fd, stat.S_IMODE(old.st_mode))
                with contextlib.suppress(PermissionError):
                    os.fchown(fd, old.st_uid, old.st_gid)
            else:
                os.fchmod(fd, mode)
            os.replace(tmp, target)
        finally:
            os.close(fd)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise _os_error(target, "write", exc) from exc
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    _fsync_dir(parent)


def sweep_temp(directory: Path) -> list[Path]:
    """Remove the temporary files that killed ctk runs left in ``directory``; return them.

    A file a running writer still holds (its lock) is left alone.
    """
    try:
        names = [n for n in os.listdir(directory) if n.startswith(".") and n.endswith(TEMP_SUFFIX)]
    except OSError:
        return []
    removed = []
    for name in names:
        tmp = directory / name
        try:
            fd = os.open(tmp, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            if os.path.samestat(os.fstat(fd), os.lstat(tmp)):
                os.unlink(tmp)
                removed.append(tmp)
        except OSError:
            continue
        finally:
            os.close(fd)
    return removed


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
    sweep_temp(path.parent)
    return True


@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    """Hold an exclusive lock for read-modify-write of ``path`` (on its directory).

    Under the lock, temporary files that killed runs left in the directory are removed.
    """
    try:
        link = path.is_symlink()
    except OSError as exc:
        raise _os_error(path, "read", exc) from exc
    directory = (Path(os.path.realpath(path)) if link else path).parent
    try:
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    except (FileNotFoundError, NotADirectoryError):  # no file to race on; reading it will say why
        yield
        return
    except OSError as exc:
        raise _os_error(directory, "lock", exc) from exc
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        sweep_temp(directory)
        yield
    finally:
        os.close(fd)
