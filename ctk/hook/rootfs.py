"""Paths inside a container's root filesystem, for the hook program.

The rule is `ctk.rootpath`'s, shared with `ctk.host.root`. These strings serve checks and
reads; writes go through `ctk.hook.rootfd`, which walks the same rule by file descriptor. This
module stays on plain strings and `os` alone: `ctk.host.root` pulls in dataclasses and
pathlib, which would double the hook's start-up time.
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
