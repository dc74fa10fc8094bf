"""Paths inside a container's root filesystem, for the hook program.

The rule is `ctk.rootpath`'s, shared with `ctk.host.root`; this module stays on plain strings and
`os` alone: `ctk.host.root` pulls in dataclasses and pathlib, which would double the hook's
start-up time.
"""

import os

from ctk.rootpath import RootPathError
from ctk.rootpath import resolve as _resolve


class HookError(Exception):
    """A problem the hook reports as one line on stderr (exit 1)."""


def resolve(root: str, path: str) -> str:
    """Return the host path of container path ``path``, every symlink resolved inside ``root``.

    Missing components are kept as they are, so the result can name a file to create. Raises
    `HookError` when a `..` (in the path or in a symlink) climbs above the root, or links loop.
    """
    try:
        return _resolve(root, path)
    except RootPathError as exc:
        if exc.reason == "unreadable":
            raise HookError(f"{exc.path}: cannot read: {exc.detail}") from exc
        if exc.reason == "loop":
            raise HookError(f"{path}: too many levels of symbolic links in {root}") from exc
        raise HookError(f"{path}: leads out of the container root {root}; refusing") from exc


def container_path(root: str, host_path: str) -> str:
    """Return ``host_path`` (inside ``root``) as the container sees it."""
    rel = os.path.relpath(host_path, root)
    return "/" if rel == "." else "/" + rel


def check_inside(root: str, host_path: str) -> None:
    """Refuse ``host_path`` unless its real location is inside ``root`` (a last safety net)."""
    real = os.path.realpath(host_path)
    if os.path.commonpath([real, root]) != root:
        raise HookError(f"{host_path}: leads out of the container root {root}; refusing")


def make_dirs(root: str, path: str) -> str:
    """Create directory ``path`` (a container path) inside ``root`` and return its host path."""
    host = resolve(root, path)
    try:
        os.makedirs(host, mode=0o755, exist_ok=True)
    except OSError as exc:
        raise HookError(f"{host}: cannot create directory: {exc.strerror}") from exc
    check_inside(root, host)
    return host


def write_new_file(directory: str, prefix: str, suffix: str, text: str, mode: int) -> str:
    """Write ``text`` to a new file with a random name in ``directory`` (never through a link)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    for _ in range(10):
        path = os.path.join(directory, f"{prefix}{os.urandom(4).hex()}{suffix}")
        try:
            fd = os.open(path, flags, mode)
        except FileExistsError:
            continue
        except OSError as exc:
            raise HookError(f"{path}: cannot create: {exc.strerror}") from exc
        try:
            os.write(fd, text.encode())
            os.fchmod(fd, mode)
        finally:
            os.close(fd)
        return path
    raise HookError(f"{directory}: cannot find a free file name for {prefix}*{suffix}")
