"""Acting inside a container root through file descriptors, so a swapped folder cannot lead out.

Checking a path and then handing its string to the kernel leaves a gap: the kernel walks the
string again, and a process that can write into the root (a sibling container sharing a volume)
may have replaced a folder with a symlink to `/` in between (CVE-2024-0132 is this bug). Here a
path is walked once, one name at a time from a descriptor of the root, each folder opened with
O_PATH|O_NOFOLLOW|O_DIRECTORY; symlinks are read and followed by `ctk.rootpath`'s rule (an
absolute target restarts at the root, a `..` above the root is refused). Every mkdir, symlink,
rename, file creation, chmod and mount then acts relative to the descriptor of the folder
reached (chmod and mount through `/proc/self/fd/N`), never on a path string.
"""

import errno
import os

from ctk.hook.rootfs import HookError
from ctk.rootpath import MAX_SYMLINKS

DIR_FLAGS = os.O_PATH | os.O_NOFOLLOW | os.O_DIRECTORY | os.O_CLOEXEC
PATH_FLAGS = os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC


def proc_path(fd: int) -> str:
    """The path through which chmod and mount act on what ``fd`` refers to, not on a name."""
    return f"/proc/self/fd/{fd}"


def _link_target(folder: int, name: str) -> str | None:
    """The target of symlink ``name`` in ``folder``; None when it is missing or not a symlink."""
    try:
        return os.readlink(name, dir_fd=folder)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        if exc.errno == errno.EINVAL:  # not a symlink
            return None
        raise


def _open_dir(folder: int, name: str, make: bool) -> int | None:
    """Open folder ``name`` in ``folder`` (made, mode 755, when missing and ``make``).

    Returns None when ``name`` is a symlink; raises FileNotFoundError when it is missing and
    NotADirectoryError when it is something else.
    """
    try:
        return os.open(name, DIR_FLAGS, dir_fd=folder)
    except FileNotFoundError:
        if not make:
            raise
        try:
            os.mkdir(name, 0o755, dir_fd=folder)
        except FileExistsError:  # made meanwhile: open it
            return _open_dir(folder, name, False)
    except NotADirectoryError:
        if _link_target(folder, name) is not None:
            return None
        raise
    return _open_dir(folder, name, False)


def _enter(folder: int, name: str, path: str, make: bool) -> int | None:
    """`_open_dir` for a folder on the way along ``path``, problems told as `HookError`."""
    try:
        return _open_dir(folder, name, make)
    except FileNotFoundError:
        raise
    except NotADirectoryError:
        raise HookError(f"{path}: {name} is not a folder in the container") from None
    except OSError as exc:
        raise HookError(f"{path}: cannot open {name}: {exc.strerror}") from exc


class Root:
    """A container root held open by descriptor; ``path`` is its host path, for messages."""

    __slots__ = ("fd", "path")

    def __init__(self, path: str) -> None:
        self.path = path
        try:
            self.fd = os.open(path, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError as exc:
            raise HookError(f"{path}: cannot open the container root: {exc.strerror}") from exc

    def __enter__(self) -> "Root":
        return self

    def __exit__(self, *exc_info: object) -> None:
        os.close(self.fd)

    def walk(self, path: str, *, follow: bool = True, make: bool = False) -> tuple[int, str]:
        """Open the folder of container path ``path``'s last name; return (its fd, that name).

        Symlinks are followed inside the root, the last name's only when ``follow``; the name is
        "." when the path ends at a folder (`/`, `..`). Missing folders are made when ``make``,
        else FileNotFoundError. The caller closes the fd.
        """
        fds = [os.dup(self.fd)]
        try:
            name = self._walk(path, fds, follow=follow, make=make)
        except BaseException:
            for fd in fds:
                os.close(fd)
            raise
        for fd in fds[:-1]:
            os.close(fd)
        return fds[-1], name

    def _walk(self, path: str, fds: list[int], *, follow: bool, make: bool) -> str:
        """Walk ``path`` from ``fds[-1]``, pushing the folders opened onto ``fds``."""
        pending = [part for part in path.split("/") if part not in ("", ".")]
        pending.reverse()
        links = 0
        while pending:
            part = pending.pop()
            if part == "..":
                if len(fds) == 1:
                    raise HookError(
                        f"{path}: leads out of the container root {self.path}; refusing"
                    )
                os.close(fds.pop())
                continue
            if not pending and not follow:
                return part
            fd = _enter(fds[-1], part, path, make) if pending else None
            if fd is not None:
                fds.append(fd)
                continue
            target = _link_target(fds[-1], part)
            if target is None:  # the last name, and not a symlink
                return part
            links += 1
            if links > MAX_SYMLINKS:
                raise HookError(f"{path}: too many levels of symbolic links in {self.path}")
            if target.startswith("/"):
                while len(fds) > 1:
                    os.close(fds.pop())
            pending.extend(reversed([p for p in target.split("/") if p not in ("", ".")]))
        return "."

    def make_dirs(self, path: str) -> int:
        """Open container folder ``path``, making missing folders (mode 755); an O_PATH fd."""
        folder, name = self.walk(path, make=True)
        try:
            fd = _open_dir(folder, name, True)
        except OSError as exc:
            raise HookError(f"{path}: cannot create folder in {self.path}: {exc.strerror}") from exc
        finally:
            os.close(folder)
        if fd is None:  # it became a symlink after the walk read it
            raise HookError(f"{path}: changed while being opened in {self.path}; refusing")
        return fd

    def open_path(self, path: str) -> int | None:
        """An O_PATH fd of what container path ``path`` names (symlinks followed inside the root);
        None when it does not exist."""
        try:
            folder, name = self.walk(path)
        except FileNotFoundError:
            return None
        try:
            return os.open(name, PATH_FLAGS, dir_fd=folder)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise HookError(f"{path}: cannot open in {self.path}: {exc.strerror}") from exc
        finally:
            os.close(folder)

    def symlink(self, target: str, link: str) -> None:
        """Make container path ``link`` a symlink to ``target``; an old symlink is replaced
        (atomically), anything else is refused. Missing parent folders are made."""
        folder, name = self.walk(link, follow=False, make=True)
        try:
            current = os.readlink(name, dir_fd=folder)
        except FileNotFoundError:
            current = None
        except OSError as exc:
            os.close(folder)
            raise HookError(
                f"{self.path}{link}: already exists and is not a symlink; refusing to replace it"
            ) from exc
        try:
            if current is None:
                os.symlink(target, name, dir_fd=folder)
            elif current != target:
                temp = f".{name}.ctk-hook-{os.getpid()}"
                os.symlink(target, temp, dir_fd=folder)
                os.rename(temp, name, src_dir_fd=folder, dst_dir_fd=folder)
        except OSError as exc:
            raise HookError(
                f"{link}: cannot create symlink in {self.path}: {exc.strerror}"
            ) from exc
        finally:
            os.close(folder)


def write_new_file(
    folder: int, where: str, prefix: str, suffix: str, *, text: str, mode: int
) -> str:
    """Write ``text`` to a new file with a random name in ``folder`` (an fd of container folder
    ``where``), never through a symlink; returns the name."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    for _ in range(10):
        name = f"{prefix}{os.urandom(4).hex()}{suffix}"
        try:
            fd = os.open(name, flags, mode, dir_fd=folder)
        except FileExistsError:
            continue
        except OSError as exc:
            raise HookError(f"{where}/{name}: cannot create: {exc.strerror}") from exc
        try:
            os.write(fd, text.encode())
            os.fchmod(fd, mode)
        finally:
            os.close(fd)
        return name
    raise HookError(f"{where}: cannot find a free file name for {prefix}*{suffix}")
