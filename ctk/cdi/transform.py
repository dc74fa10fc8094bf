"""`ctk cdi transform root`: move a spec's paths from one root to another (pure data -> data).

Host paths (`--relative-to host`, the default) are what the runtime opens on the host: a mount's
`hostPath`, a device node's `hostPath` (its `path` when it has none) and a hook's `path`.
Container paths (`--relative-to container`) are where they appear inside the container: a
mount's `containerPath` and a device node's `path`. A path moves when it is the old root or
lies under it; every other value, and the order of keys, stays as it was.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from enum import Enum
from posixpath import normpath


class RelativeTo(str, Enum):  # str: typer lists the choices; Python 3.10 has no StrEnum
    """Which side of the spec's paths moves."""

    HOST = "host"
    CONTAINER = "container"


def rebase(path: str, from_root: str, to_root: str) -> str:
    """``path`` moved from under ``from_root`` to under ``to_root`` (other paths unchanged)."""
    old, new = normpath(from_root), normpath(to_root)
    if old == "/":  # (joined after one "/": normpath keeps two leading slashes, "//usr")
        return normpath(new.rstrip("/") + "/" + path.lstrip("/")) if path.startswith("/") else path
    if path == old:
        return new
    if path.startswith(old + "/"):
        return new.rstrip("/") + path[len(old) :]
    return path


def _edits(edits: dict[str, object], move: Callable[[str], str], side: RelativeTo) -> None:
    for node in _dicts(edits.get("deviceNodes")):
        if side is RelativeTo.HOST:
            host = node.get("hostPath") or node.get("path")
            if isinstance(host, str) and host:
                moved = move(host)
                if moved != host:  # what does not move stays as written ("" included)
                    node["hostPath"] = moved
        elif isinstance(node.get("path"), str):
            node["path"] = move(str(node["path"]))
    for mount in _dicts(edits.get("mounts")):
        key = "hostPath" if side is RelativeTo.HOST else "containerPath"
        if isinstance(mount.get(key), str):
            mount[key] = move(str(mount[key]))
    if side is RelativeTo.HOST:
        for hook in _dicts(edits.get("hooks")):
            if isinstance(hook.get("path"), str):
                hook["path"] = move(str(hook["path"]))


def _dicts(value: object) -> list[dict[str, object]]:
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def transform_root(
    spec: dict[str, object], *, from_root: str, to_root: str, relative_to: RelativeTo
) -> dict[str, object]:
    """A copy of ``spec`` with its host or container paths moved from one root to another."""
    result = copy.deepcopy(spec)

    def move(path: str) -> str:
        return rebase(path, from_root, to_root)

    blocks = [result.get("containerEdits")]
    blocks += [d.get("containerEdits") for d in _dicts(result.get("devices"))]
    for edits in blocks:
        if isinstance(edits, dict):
            _edits(edits, move, relative_to)
    return result
