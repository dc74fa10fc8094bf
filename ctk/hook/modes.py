"""`chmod`: set the mode of paths inside the container root (e.g. /dev/dri).

Each path is opened once (`ctk.hook.rootfd`) and changed through that descriptor, so a folder
or file swapped for a symlink after the check is never followed.
"""

import os
import stat

from ctk.hook.rootfd import Root, proc_path
from ctk.hook.rootfs import HookError


def parse_mode(text: str) -> int:
    """Parse an octal mode such as ``755``."""
    try:
        mode = int(text.strip(), 8)
    except ValueError:
        raise HookError(f"invalid --mode {text!r}: expected an octal mode such as 755") from None
    if not 0 <= mode <= 0o7777:
        raise HookError(f"invalid --mode {text!r}: expected an octal mode up to 7777")
    return mode


def change_modes(root: str, paths: list[str], mode_text: str) -> None:
    """Give each existing path in ``paths`` (container paths) the octal ``mode_text``.

    Missing paths are skipped (nvidia-cdi-hook does the same); all are checked before any changes.
    """
    mode = parse_mode(mode_text)
    opened: list[int] = []
    targets: list[tuple[int, str]] = []
    with Root(root) as container:
        try:
            for path in paths:
                if not path.strip():
                    raise HookError("--path must not be empty")
                fd = container.open_path(path)
                if fd is None:
                    continue
                opened.append(fd)
                info = os.fstat(fd)
                if stat.S_ISLNK(info.st_mode):  # swapped in after the walk read the name
                    raise HookError(f"{root}{path}: became a symlink; refusing to change its mode")
                if stat.S_IMODE(info.st_mode) != mode:
                    targets.append((fd, path))
            for fd, path in targets:
                try:
                    os.chmod(proc_path(fd), mode)  # what fd holds, whatever its name is now
                except PermissionError:
                    continue  # a read-only /dev bind mount: nvidia-cdi-hook ignores this too
                except OSError as exc:
                    raise HookError(f"{root}{path}: cannot chmod: {exc.strerror}") from exc
        finally:
            for fd in opened:
                os.close(fd)
