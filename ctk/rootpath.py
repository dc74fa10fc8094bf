"""Resolving a path inside a root directory as if that directory were `/`.

One rule for the host root (`ctk.host.root`) and the container root of the native hook program
(native/root.go; the hook's tests check it against this module): an absolute symlink target
restarts at the root, and a `..` that climbs above the root is refused. Plain strings and `os`.
"""

import errno
import os

MAX_SYMLINKS = 40


class RootPathError(ValueError):
    """``path`` cannot be resolved inside ``root``; ``reason`` is escape, loop or unreadable."""

    def __init__(self, reason: str, path: str, detail: str = "") -> None:
        super().__init__(f"{path}: {reason} {detail}".strip())
        self.reason = reason
        self.path = path
        self.detail = detail


def resolve(root: str, path: str) -> str:
    """Return the host path of ``path`` (as seen inside ``root``), symlinks resolved inside it.

    Components that do not exist are kept as they are, so the result can name a file to create.
    """
    pending = [part for part in path.split("/") if part not in ("", ".")]
    pending.reverse()
    resolved: list[str] = []
    links = 0
    while pending:
        part = pending.pop()
        if part == "..":
            if not resolved:
                raise RootPathError("escape", path)
            resolved.pop()
            continue
        candidate = os.path.join(root, *resolved, part)
        try:
            target = os.readlink(candidate)
        except OSError as exc:
            if exc.errno not in (errno.EINVAL, errno.ENOENT, errno.ENOTDIR):
                raise RootPathError("unreadable", candidate, exc.strerror or "") from exc
            resolved.append(part)
            continue
        links += 1
        if links > MAX_SYMLINKS:
            raise RootPathError("loop", path)
        if target.startswith("/"):
            resolved.clear()
        pending.extend(reversed([p for p in target.split("/") if p not in ("", ".")]))
    return os.path.join(root, *resolved)
