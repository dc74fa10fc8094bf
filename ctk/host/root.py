"""Paths under a root directory (`--root`, `--driver-root`, a container's rootfs).

Every host path goes through `HostRoot.path()`: the path is joined under the root and each
symlink is resolved as if the root were `/` (an absolute target restarts at the root), so no path
ever leads out of the root. A `..` that would climb above the root is refused. Standard library
only: the hook program uses this module too.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from ctk import rootpath
from ctk.errors import CtkError


class PathEscapeError(CtkError):
    """A path (or a symlink on it) would lead out of its root."""


class PathUnreadableError(CtkError):
    """A directory on the path cannot be read (permission), so the path cannot be resolved."""


def resolve_in_root(root: str | os.PathLike[str], path: str | PurePosixPath) -> Path:
    """Return the host path of ``path`` inside ``root``, with symlinks resolved inside the root.

    Components that do not exist are appended as they are, so the result can name a file to
    create. Raises `PathEscapeError` when a `..` (in the path or in a link) climbs above the
    root, or when links loop; `PathUnreadableError` when a directory cannot be read.
    """
    base = os.path.abspath(root)
    try:
        return Path(rootpath.resolve(base, str(path)))
    except rootpath.RootPathError as exc:
        if exc.reason == "unreadable":
            raise PathUnreadableError(
                f"{exc.path}: cannot read: {exc.detail}", hint="run as root (sudo)"
            ) from exc
        if exc.reason == "loop":
            raise PathEscapeError(
                f"{path}: too many levels of symbolic links under {base}"
            ) from exc
        raise PathEscapeError(
            f"{path}: leads out of {base}",
            hint="a '..' or symlink points above the root; refusing to follow it",
        ) from exc


def existing_root(flag: str, path: str | os.PathLike[str]) -> HostRoot:
    """``path`` as a root, if it is a directory: else the one error every command gives (exit 1)
    for a root option (`--root`, `--driver-root`, `--dev-root`)."""
    if os.fspath(path) == "":
        raise CtkError(f"{flag} is empty", hint="pass an existing directory")
    if not os.path.isdir(path):
        problem = "not a directory" if os.path.exists(path) else "no such directory"
        raise CtkError(f"{flag} {os.fspath(path)}: {problem}", hint="pass an existing directory")
    return HostRoot(Path(path))


@dataclass(frozen=True, slots=True)
class HostRoot:
    """A directory that stands for `/` of the host being looked at (default: `/` itself)."""

    root: Path = Path("/")

    def path(self, path: str | PurePosixPath) -> Path:
        """Return where ``path`` (absolute, as seen from inside the root) lives on this machine."""
        if str(self.root) == "/":
            return Path(os.path.realpath("/" + str(path).lstrip("/")))
        return resolve_in_root(self.root, path)

    def exists(self, path: str | PurePosixPath) -> bool:
        """Whether ``path`` exists inside the root (escapes count as missing)."""
        try:
            return self.path(path).exists()
        except PathEscapeError:
            return False

    def relative(self, host_path: Path) -> PurePosixPath:
        """Return ``host_path`` as seen from inside the root."""
        rel = os.path.relpath(host_path, self.root)
        return PurePosixPath("/") / rel if rel != "." else PurePosixPath("/")
