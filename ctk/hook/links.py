"""`create-symlinks`: make `link -> target` symlinks inside the container root.

Every link is checked before any is made, so a refused link leaves the root untouched. The
link's directory is resolved inside the root (an image's absolute symlinks restart at the
root, as they will in the container); a relative target that climbs above the root, a link
path that does, and an existing entry that is not a symlink are refused. The links are then made
through `ctk.hook.rootfd`, so a folder swapped for a symlink after the check cannot lead out.
"""

import os
import posixpath

from ctk.hook.rootfd import Root
from ctk.hook.rootfs import HookError, container_path, resolve


def parse_link(spec: str) -> tuple[str, str]:
    """Split ``TARGET::LINK`` into its two halves."""
    parts = spec.split("::")
    if len(parts) != 2 or not parts[0] or not parts[1]:
        raise HookError(f"invalid --link {spec!r}: expected TARGET::LINK")
    return parts[0], parts[1]


def _climbs_above_root(directory: str, target: str) -> bool:
    depth = len([p for p in directory.split("/") if p])
    for part in target.split("/"):
        if part == "..":
            depth -= 1
            if depth < 0:
                return True
        elif part not in ("", "."):
            depth += 1
    return False


def _plan(root: str, target: str, link: str) -> str | None:
    """Return the host path of the link, or None when it is already there."""
    name = posixpath.basename(link.rstrip("/"))
    if name in ("", ".", ".."):
        raise HookError(f"invalid link path {link!r}")
    parent = resolve(root, posixpath.dirname(link.rstrip("/")) or "/")
    if not target.startswith("/") and _climbs_above_root(container_path(root, parent), target):
        raise HookError(f"{link} -> {target}: the target leads out of the container root")
    host_link = os.path.join(parent, name)
    try:
        current = os.readlink(host_link)
    except FileNotFoundError:
        return host_link
    except NotADirectoryError as exc:
        raise HookError(
            f"{link}: cannot create the link: a parent in the container is not a directory"
        ) from exc
    except OSError as exc:
        if os.path.lexists(host_link):
            raise HookError(
                f"{host_link}: already exists and is not a symlink; refusing to replace it"
            ) from exc
        raise HookError(f"{host_link}: cannot read: {exc.strerror}") from exc
    return None if current == target else host_link


def create_symlinks(root: str, specs: list[str]) -> None:
    """Create every ``TARGET::LINK`` in ``specs`` inside ``root``, or none of them."""
    plans: dict[str, tuple[str, str]] = {}
    for spec in dict.fromkeys(specs):
        target, link = parse_link(spec)
        host_link = _plan(root, target, link)
        if host_link is not None:
            plans.setdefault(host_link, (target, link))
    with Root(root) as container:
        for target, link in plans.values():
            container.symlink(target, link)
